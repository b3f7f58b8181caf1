"""MobileNetV2 (Sandler et al. 2018) in plain torch.nn, torchvision's layout, random seeded weights."""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from examples.models import SEED


def make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:  # do not go down by more than 10%
        new_v += divisor
    return new_v


class ConvBNReLU(nn.Sequential):
    """Conv2d + BatchNorm2d (+ ReLU6), torchvision's Conv2dNormActivation layout."""

    def __init__(self, cin, cout, kernel_size=3, stride=1, groups=1, act=True):
        padding = (kernel_size - 1) // 2
        layers = [
            nn.Conv2d(cin, cout, kernel_size, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ]
        if act:
            layers.append(nn.ReLU6(inplace=False))
        super().__init__(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand_ratio: int):
        super().__init__()
        hidden = round(cin * expand_ratio)
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(cin, hidden, kernel_size=1))  # pointwise expand
        layers += [
            ConvBNReLU(hidden, hidden, stride=stride, groups=hidden),  # depthwise
            ConvBNReLU(hidden, cout, kernel_size=1, act=False),  # pointwise linear
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al. 2018) in plain torch.nn.

    ``lrn_after`` inserts an ``nn.LocalResponseNorm`` after the given indices of the
    standard ``features`` list (0 = stem conv, 1..17 = inverted residual blocks,
    18 = last 1x1 conv). LRN is not supported by the Arm backends, so each one
    splits the delegated graph.
    """

    CFG: ClassVar[list[tuple[int, int, int, int]]] = [  # t, c, n, s
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]

    def __init__(self, width_mult: float = 1.0, num_classes: int = 1000, lrn_after=()):
        super().__init__()
        cin = make_divisible(32 * width_mult)
        last = make_divisible(1280 * max(1.0, width_mult))
        blocks: list[nn.Module] = [ConvBNReLU(3, cin, stride=2)]
        for t, c, n, s in self.CFG:
            cout = make_divisible(c * width_mult)
            for i in range(n):
                blocks.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        blocks.append(ConvBNReLU(cin, last, kernel_size=1))
        feats: list[nn.Module] = []
        for i, b in enumerate(blocks):
            feats.append(b)
            if i in lrn_after:
                feats.append(nn.LocalResponseNorm(size=5, alpha=1e-4, beta=0.75, k=2.0))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))
        self._init_weights()

    def _init_weights(self):
        # torchvision's init, plus non-trivial BatchNorm statistics so that the
        # folded weights look like a trained network rather than an identity.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.normal_(m.bias, 0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 2.0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def mobilenet_v2(width: float = 1.0, lrn_after=(), seed: int = SEED) -> MobileNetV2:
    torch.manual_seed(seed)
    return MobileNetV2(width_mult=width, lrn_after=tuple(lrn_after)).eval().requires_grad_(False)


def mobilenet_v2_classes(width: float, classes: int) -> MobileNetV2:
    """MobileNetV2 seeded as ``mobilenet_v2``, with a ``classes``-way classifier (10 keeps small
    examples small: the 1000-way one is 1.28 MB of INT8 weights at width 0.35)."""
    torch.manual_seed(SEED)
    return MobileNetV2(width_mult=width, num_classes=classes).eval().requires_grad_(False)
