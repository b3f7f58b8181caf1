"""Small convolutional networks: the nested CNN of the portable, XNNPACK and TOSA examples, and
the few-layer nets of the Ethos-U examples (memory modes, scratch, Cortex-M fallback, bundles)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from examples.models.mobilenet import ConvBNReLU, InvertedResidual


class SmallNet(nn.Module):
    """A tiny CNN with nested modules: conv/relu/pool, linear, residual add, softmax."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            ConvBNReLU(3, 8, stride=2),
            InvertedResidual(8, 8, 1, 2),
            ConvBNReLU(8, 16, stride=2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.ReLU())
        self.skip = nn.Linear(16 * 4 * 4, 32)
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        f = F.max_pool2d(self.features(x), 2)
        flat = torch.flatten(f, 1)
        h = self.head(f) + self.skip(flat)
        return torch.softmax(self.out(h), dim=-1)


class SmallLrnNet(SmallNet):
    """SmallNet with a LocalResponseNorm after features[1]: XNNPACK has no kernel for parts of
    its decomposition, so the graph splits around them."""

    def __init__(self):
        super().__init__()
        self.features.insert(2, nn.LocalResponseNorm(size=3, alpha=1e-4, beta=0.75, k=2.0))


class ConvHead(nn.Module):
    """Two convolutions (for the NPU) and a Linear head (kept on the Cortex-M CPU)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.head = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.head(torch.flatten(x, 1))


class MemoryModeNet(nn.Module):
    """Three convolutions and a pooling: small, fully delegated, with enough feature maps that
    Vela's scratch, and with Dedicated_Sram its fast scratch, are more than a few bytes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(32, 32, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.pool(F.relu(self.conv3(x)))


class WideNet(nn.Module):
    """Two convolutions on a 256x256 image and a pooling: few weights, large feature maps, so
    the NPU's scratch (about 2 MiB) is far larger than the file."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return self.pool(F.relu(self.conv2(F.relu(self.conv1(x)))))


class BundleNet(nn.Module):
    """Two convolutions, a pooling and a Linear: small enough to keep the bundle small."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


class Classifier(nn.Module):
    """Two convolutions (for the NPU) and a two-layer Linear classifier (for the Cortex-M CPU)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class ConvLrn(nn.Module):
    """A LocalResponseNorm between two convolutions: its avg_pool3d keeps it on the CPU."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.lrn = nn.LocalResponseNorm(size=3, alpha=1e-4, beta=0.75, k=2.0)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return self.conv2(self.lrn(F.relu(self.conv1(x))))


class RunningSum(nn.Module):
    """A running sum over the channels, scaled: XNNPACK has no cumsum, so it stays on the CPU
    (the portable kernel, which ExecuTorch's Python runtime has: the program runs here)."""

    def forward(self, x):
        return torch.cumsum(x, dim=1) * 0.125


class CumsumNet(nn.Module):
    """A stem, an inverted residual block, a running sum the CPU runs between XNNPACK partitions,
    a convolution head and a Linear: small, nested, and runnable by the pip runtime."""

    def __init__(self):
        super().__init__()
        self.stem = ConvBNReLU(3, 8, stride=2)
        self.block = InvertedResidual(8, 8, 1, 2)
        self.mix = RunningSum()
        self.head = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.head(self.mix(self.block(self.stem(x))))
        return self.fc(x.mean(dim=(2, 3)))
