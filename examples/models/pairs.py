"""The networks of the what-if pairs (build_whatif_pairs.py): a few conv blocks with the layer a
pair is about in the middle, and that layer's replacements. No layer draws random numbers after
the seeded construction."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from examples.models import seeded
from examples.models.mobilenet import ConvBNReLU


class PairNet(nn.Module):
    """A few conv blocks and a small classifier, with `middle` as features.2.

    features.0 stride-2 conv (3 -> 16), features.1 conv (16 -> 16), features.2 the layer a pair
    is about, features.3 stride-2 conv (16 -> 32), features.4 conv (32 -> 32), then global
    average pooling and a Linear(32, 10). The convolutions are mobilenet.ConvBNReLU, so
    their BatchNorm statistics are non-trivial like the MobileNetV2's.
    """

    def __init__(self, middle: nn.Module) -> None:
        super().__init__()
        self.features = nn.Sequential(
            ConvBNReLU(3, 16, stride=2),
            ConvBNReLU(16, 16),
            middle,
            ConvBNReLU(16, 32, stride=2),
            ConvBNReLU(32, 32),
        )
        self.classifier = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def pair_net(middle: Callable[[], nn.Module]) -> PairNet:
    """PairNet seeded the way every example model is (`seeded`: BatchNorm statistics included)."""
    return seeded(PairNet, middle())  # type: ignore[return-value]


class LrnAsConv(nn.Module):
    """nn.LocalResponseNorm written with operators the Arm backend lowers for INT.

    LocalResponseNorm(x)_c = x_c / (k + alpha/size * sum_{c'} x_c'^2)^beta, the sum over the
    channels c - size//2 .. c + (size-1)//2 (torch pads and averages with avg_pool3d, counting
    the padding). Here the window sum is a 1x1 convolution whose weight is alpha/size on that
    band and 0 elsewhere, and the division a multiplication by the power -beta: MUL, CONV2D,
    ADD, POW (a TABLE) and MUL, all lowered for TOSA INT. The weight is fixed, never drawn.
    """

    def __init__(self, channels: int, lrn: nn.LocalResponseNorm) -> None:
        super().__init__()
        size = lrn.size
        band = torch.zeros(channels, channels)
        for out in range(channels):
            lo, hi = out - size // 2, out + (size - 1) // 2
            for c in range(max(lo, 0), min(hi, channels - 1) + 1):
                band[out, c] = lrn.alpha / size
        with torch.random.fork_rng():  # the conv's own init must not move the seeded stream
            self.window = nn.Conv2d(channels, channels, 1, bias=False)
        self.window.weight.data.copy_(band[:, :, None, None])
        self.k, self.beta = float(lrn.k), float(lrn.beta)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.pow(self.window(x * x) + self.k, -self.beta)


class LrnAsRsqrt(LrnAsConv):
    """LrnAsConv with its power written as square roots: y^-0.75 = rsqrt(y) * rsqrt(sqrt(y)),
    exact for the y = k + window(x * x) >= k > 0 it is taken of. ExecuTorch's XNNPACK
    partitioner refuses `pow` with an exponent other than 2 (PowConfig), so LrnAsConv on XNNPACK
    keeps the pow on the CPU between two partitions; `rsqrt` and `sqrt` it takes (the fix of the
    measured pair lrn_pow_xnnpack -> lrn_rsqrt_xnnpack). Only for beta = 0.75."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert self.beta == 0.75, "y^-beta is written as rsqrt(y) * rsqrt(sqrt(y)): beta 0.75"
        y = self.window(x * x) + self.k
        return x * (torch.rsqrt(y) * torch.rsqrt(torch.sqrt(y)))


def lrn() -> nn.LocalResponseNorm:
    return nn.LocalResponseNorm(size=5, alpha=1e-4, beta=0.75, k=2.0)


def conv_block() -> nn.Module:
    return ConvBNReLU(16, 16)


def upsample() -> nn.Module:
    return nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
