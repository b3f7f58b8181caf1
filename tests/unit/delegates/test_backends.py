"""One record per backend, the explicit glue list, and problems that must not be dropped."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter import backends
from pte_adapter.analysis.partitions import partition_method
from pte_adapter.backends import BACKENDS, backend_colour, backend_info, is_glue
from pte_adapter.delegates import hooks
from pte_adapter.delegates.ethosu import dataflow as ethosu_dataflow
from pte_adapter.render.facts import method_facts
from tests.support.examples import EXAMPLES, example

# ExecuTorch 1.5.1's BackendDetails class names (the delegate id a .pte stores), read from the
# installed package rather than copied: every one of them must have a readable record.
EXECUTORCH_BACKEND_IDS = (
    "CoreMLBackend", "EnnBackend", "EthosUBackend", "NeuropilotBackend", "NeutronBackend",
    "OpenvinoBackend", "QnnBackend", "TOSABackend", "VgfBackend", "VulkanBackend",
    "XnnpackBackend", "CudaBackend",
)  # fmt: skip


def test_executorch_backend_ids_exist_in_the_installed_executorch() -> None:
    """The ids above are real: each names a BackendDetails subclass in ExecuTorch."""
    import re

    import executorch.backends

    root = Path(executorch.backends.__file__).parent
    found: set[str] = set()
    for path in root.rglob("*.py"):
        if "/test" in str(path):
            continue
        found.update(
            re.findall(r"^class (\w+)\([^)]*BackendDetails\)", path.read_text(), re.MULTILINE)
        )
    assert set(EXECUTORCH_BACKEND_IDS) <= found


@pytest.mark.parametrize("backend_id", EXECUTORCH_BACKEND_IDS)
def test_every_executorch_backend_has_a_readable_record(backend_id: str) -> None:
    record = BACKENDS[backend_id]
    assert record.group_prefix.endswith(" partition")
    assert record.group_prefix.isascii() and record.display
    # Its own colour: no other backend and no CPU colour shares it.
    others = [b.colour for b in BACKENDS.values() if b.id != backend_id]
    assert record.colour not in others
    assert record.colour not in (
        backends.CPU_GROUP_COLOUR,
        backends.CPU_COMPUTE_COLOUR,
        backends.CPU_GLUE_COLOUR,
        backends.CPU_CONTROL_COLOUR,
        backends.OTHER_DELEGATE_COLOUR,
    )


def test_an_unknown_backend_still_gets_a_name_and_a_colour() -> None:
    record = backend_info("MyCustomBackend")
    assert record.group_prefix == "Delegate partition"
    assert backend_colour("MyCustomBackend") == backends.OTHER_DELEGATE_COLOUR
    assert backend_colour(backends.CPU) == backends.CPU_GROUP_COLOUR


@pytest.mark.parametrize(("name", "glue"), [
    ("quantized_decomposed::quantize_per_tensor.out", True),
    ("quantized_decomposed::dequantize_per_channel.out", True),
    ("quantized_decomposed::choose_qparams.Tensor_out", True),
    ("cortex_m::quantize_per_tensor.out", True),
    ("cortex_m::dequantize_per_tensor.out", True),
    ("dim_order_ops::_to_dim_order_copy.out", True),
    ("aten::view_copy.out", True),
    ("aten::copy_", True),
    # Compute, though their names contain "quantize" or "copy":
    ("cortex_m::quantized_conv2d.out", False),
    ("cortex_m::quantized_linear.out", False),
    ("cortex_m::quantized_add.out", False),
    ("quantized_decomposed::embedding_byte.out", False),
    ("quantized_decomposed::mixed_linear.out", False),
    ("mycompany::quantize_and_convolve.out", False),
    ("aten::convolution.out", False),
    ("aten::copy_from_everywhere.out", False),
])  # fmt: skip
def test_glue_is_an_explicit_list(name: str, glue: bool) -> None:
    assert is_glue(name) is glue


def test_glue_list_names_real_operators() -> None:
    """Every cortex_m:: and quantized_decomposed:: glue entry is an operator torch knows once
    ExecuTorch's libraries are loaded (so the list cannot drift into names that do not exist)."""
    import executorch.backends.cortex_m.passes
    import executorch.kernels.quantized  # noqa: F401
    import torch
    import torch.ao.quantization.fx._decomposed

    for name in sorted(backends.glue_operators()):
        ns, _, op = name.partition("::")
        if ns in ("cortex_m", "quantized_decomposed"):
            assert hasattr(getattr(torch.ops, ns), op), name


def test_partition_names_and_legend_come_from_the_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = example("mv2_lrn_ethosu85")
    program = pte_adapter.load(path)
    method = program.methods[0]
    renamed = dataclasses.replace(
        BACKENDS["EthosUBackend"],
        group_prefix="Ethos partition",
        display="Arm Ethos-U (test)",
        colour_name="tangerine",
    )
    monkeypatch.setitem(BACKENDS, "EthosUBackend", renamed)
    parts = partition_method(method)
    assert [p.name for p in parts.delegate_partitions] == [
        "Ethos partition 1 (EthosUBackend)",
        "Ethos partition 2 (EthosUBackend)",
    ]
    result = pte_adapter.analyse(program)
    legend = method_facts(result, result.methods[0])["legend"]
    assert legend.startswith("tangerine = Arm Ethos-U (test), red = CPU compute")


# -- problems that must reach the user ------------------------------------------------------------


def _decode_first_ethosu(path: Path) -> list[str]:
    program = pte_adapter.load(path, sidecars=False)
    d = program.methods[0].delegates[0]
    return d.problems + d.decoded.problems


def test_a_bug_inside_a_decoder_is_not_a_missing_decoder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An ImportError raised while importing a decoder that exists is a bug, reported as one;
    only a decoder module that is not installed is 'not available'."""
    (tmp_path / "broken_decoder.py").write_text(
        "from pte_adapter.container.flatbuf import no_such_name  # a bug\n"
        "def decode(payload, ctx):\n    raise AssertionError\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "broken_decoder", raising=False)
    record = BACKENDS["EthosUBackend"]
    monkeypatch.setitem(
        BACKENDS, "EthosUBackend", dataclasses.replace(record, decoder="broken_decoder:decode")
    )
    problems = _decode_first_ethosu(example("mv2_ethosu85_full"))
    assert len(problems) == 1
    assert problems[0].startswith(
        "EthosUBackend's decoder hook (broken_decoder:decode) failed (ImportError: "
    )
    assert "this is a bug in pte_adapter" in problems[0]

    monkeypatch.setitem(
        BACKENDS,
        "EthosUBackend",
        dataclasses.replace(record, decoder="pte_adapter_not_installed:decode"),
    )
    problems = _decode_first_ethosu(example("mv2_ethosu85_full"))
    assert problems == [
        "EthosUBackend's decoder hook (pte_adapter_not_installed:decode) is not available in "
        "this install (No module named 'pte_adapter_not_installed')"
    ]


def test_an_attribute_error_in_a_decoder_is_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    def decode(payload: memoryview, ctx: hooks.DecodeContext) -> None:
        raise AttributeError("'NoneType' object has no attribute 'shape'")

    monkeypatch.setattr(hooks, "resolve", lambda record, hook: decode)
    problems = _decode_first_ethosu(example("mv2_ethosu85_full"))
    assert problems == [
        "EthosUBackend's decoder hook (pte_adapter.delegates.ethosu.decode:decode) failed "
        "(AttributeError: 'NoneType' object has no attribute 'shape'); this is a bug in "
        "pte_adapter, please report it with the file"
    ]


def test_a_malformed_debug_json_is_reported(tmp_path: Path) -> None:
    """mv2_tosa's TOSA graph has no operator locations, so a debug.json in its artifact folder
    would map it to source; a broken one must say so on the delegate."""
    src = example("mv2_tosa")
    shutil.copy(src, tmp_path / src.name)
    shutil.copytree(EXAMPLES / "mv2_tosa_artifacts", tmp_path / "mv2_tosa_artifacts")
    before = pte_adapter.load(tmp_path / src.name).methods[0].delegates[0].decoded.problems
    assert before == []
    (tmp_path / "mv2_tosa_artifacts" / "debug.json").write_text('[{"tosa_info": ')
    decoded = pte_adapter.load(tmp_path / src.name).methods[0].delegates[0].decoded
    assert len(decoded.problems) == 1
    assert decoded.problems[0].startswith("no source mapping: debug.json is not valid JSON: ")


def test_the_ethosu_dataflow_cap_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    path = example("mv2_ethosu85_full")
    assert not any("dataflow is incomplete" in p for p in _decode_first_ethosu(path))
    monkeypatch.setattr(ethosu_dataflow, "MAX_LIVE_WRITES", 2)
    problems = [p for p in _decode_first_ethosu(path) if "dataflow is incomplete" in p]
    assert len(problems) == 1
    assert "more than" in problems[0] and "feature-map writes" in problems[0]


def test_a_backend_record_extends_the_glue_list(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not is_glue("qaisw::requantize.out")
    record = BACKENDS["QnnBackend"]
    monkeypatch.setitem(
        BACKENDS,
        "QnnBackend",
        dataclasses.replace(record, cpu_glue_ops=frozenset({"qaisw::requantize"})),
    )
    assert is_glue("qaisw::requantize.out")
    monkeypatch.setitem(BACKENDS, "QnnBackend", record)
    assert not is_glue("qaisw::requantize.out")
