"""Small networks for the portable (undelegated) examples: two methods, control flow, a
data-dependent shape, buffers updated in place."""

from __future__ import annotations

import torch
import torch.nn as nn


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8))
        self.dec = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 16))

    def forward(self, x):
        return self.dec(self.enc(x))

    def encode(self, x):
        return self.enc(x)


class MethodAsForward(nn.Module):
    def __init__(self, m, method):
        super().__init__()
        self.m, self.method = m, method

    def forward(self, *args):
        return getattr(self.m, self.method)(*args)


class CondModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        def true_fn(x):
            return torch.sin(self.lin(x)) + 1.0

        def false_fn(x):
            return torch.cos(x) * 2.0

        return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))


class NonzeroCount(nn.Module):
    def forward(self, x):
        positions = torch.nonzero(x > 0)  # data-dependent (unbacked) row count
        return positions.sum(dim=1) * 2, x.relu()


class Accumulator(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.arange(32, dtype=torch.float32).reshape(4, 8) / 10)
        self.register_buffer("steps", torch.ones(1))
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        self.acc.add_(self.lin(x))
        self.steps.add_(1.0)
        return self.acc / self.steps
