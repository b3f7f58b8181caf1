"""The networks of the numeric-gap examples (issue 43): small, so every intermediate output fits in
a debug buffer of a few hundred KB, and made of what both float and INT8 XNNPACK exports take.

`GapNet` runs whole on XNNPACK (or on the portable kernels); `GapIslandNet` has a power with a
fractional exponent, which XNNPACK does not take ("only support int powers") and the pip runtime's
portable kernels do (its LocalResponseNorm would need `aten.avg_pool3d`, which they lack): a CPU
island between two XNNPACK partitions. No BatchNorm: PT2E folds it into the convolution before
quantizing, so a float export's convolution output and an INT8 export's would not be the same
tensor.
"""

from __future__ import annotations

import torch
import torch.nn as nn


class GapNet(nn.Module):
    """Three convolutions with ReLUs, a residual add, average pooling and a Linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = x + self.block(x)
        x = self.pool(self.down(x))
        return self.head(torch.flatten(x, 1))


class Squash(nn.Module):
    """x / (1 + x^2)^0.75: a local normalisation like LocalResponseNorm's, elementwise."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (1.0 + x * x).pow(0.75)


class GapIslandNet(nn.Module):
    """Convolutions around a normalisation whose fractional power XNNPACK does not take: two
    XNNPACK partitions with a CPU island between them."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.norm = Squash()
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.stem(x))
        x = self.down(x)
        return self.head(torch.flatten(x, 1))
