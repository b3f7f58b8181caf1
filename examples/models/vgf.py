"""The VGF examples' own small networks (builders/vgf.py; its MobileNetV2 is mobilenet's)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


class SmallNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        y = torch.relu(self.conv2(y)) + y
        return self.fc(torch.flatten(self.pool(y), 1))


class GridSampleNet(torch.nn.Module):
    """A conv, a learned warp of its output (grid_sample), another conv: the warp becomes a
    compute-shader segment between two graph segments."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        y = F.grid_sample(y, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        return self.conv2(y)
