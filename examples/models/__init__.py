"""The networks the examples are exported from: plain ``torch.nn``, random seeded weights.

One module per family. The committed ETRecords and TOSA debug info record the source lines of
these modules' ``forward`` methods (what Model Explorer shows as a node's source line): a model's
file changes only when the model does, and then its examples must be rebuilt anyway. Builders,
lowering helpers and drivers live elsewhere, so they can change without touching those files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

SEED = 20240611


def seeded(fn: Callable[..., nn.Module], *args: Any, seed: int = SEED, **kwargs: Any) -> nn.Module:
    """``fn(*args, **kwargs)`` built right after seeding torch, with non-trivial BatchNorm
    statistics (so folded weights look trained), in eval mode without gradients."""
    torch.manual_seed(seed)
    m = fn(*args, **kwargs)
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            nn.init.uniform_(mod.weight, 0.5, 1.5)
            nn.init.normal_(mod.bias, 0.0, 0.1)
            mod.running_mean.normal_(0.0, 0.1)
            mod.running_var.uniform_(0.5, 2.0)
    return m.eval().requires_grad_(False)
