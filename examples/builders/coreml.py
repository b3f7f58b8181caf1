"""The Core ML example: a model lowered with ExecuTorch's own `CoreMLPartitioner`.

ExecuTorch's Core ML backend converts each partition with coremltools (here 9.0, the `test`
extra) into an ML Program package (`model.mlpackage`: `Manifest.json`, the `model.mlmodel`
specification, a `weight.bin`) and stores that folder flattened into the payload beside a
`metadata.json` (`executorchcoreml.flatten_directory_contents`). Converting and flattening run on
Linux; compiling the package (`model_type=COMPILED_MODEL`) needs macOS and is not done.

The weights are random and seeded, yet the bytes differ from build to build: the backend names
each model with a random `uuid4` (its `identifier`), coremltools records the conversion date, and
the package's manifest names its items by random UUIDs.
"""

from __future__ import annotations

import torch

from examples.common import example, reset_outputs, write_pte
from examples.models import SEED
from examples.models.gpu import Small


@example(
    "coreml_small",
    "coreml",
    "Small CNN (conv, ReLU, a mean over H and W, a linear layer), float32, in one Core ML "
    "partition (CoreMLPartitioner, coremltools): the payload holds the ML Program package "
    "flattened; its bytes differ from build to build (random UUIDs, the conversion date).",
)
def build_coreml_small():
    from executorch.backends.apple.coreml.partition import CoreMLPartitioner
    from executorch.exir import to_edge_transform_and_lower

    name = "coreml_small"
    reset_outputs(f"{name}.pte")
    torch.manual_seed(SEED)
    model, x = Small().eval(), torch.randn(1, 3, 16, 16)
    ep = torch.export.export(model, (x,))
    prog = to_edge_transform_and_lower(ep, partitioner=[CoreMLPartitioner()]).to_executorch()
    return {
        "files": [write_pte(prog, name)],
        "sidecars": [],
        "settings": {"model": "Small", "input": [1, 3, 16, 16], "dtype": "fp32"},
    }
