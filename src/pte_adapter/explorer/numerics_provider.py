"""Model Explorer node data provider: colour a method graph by its numeric gap.

Registered with the adapter (main.py imports this module): in Model Explorer, "Add per-node data"
lists "Numeric gap (debug buffer)" for `.pte` and `.bpte` graphs, and for the graphs of an
ETRecord opened on its own (each node that ran coloured by its runtime step's worst output, from
the run of the program it belongs to). It compares the program's run
(its ETDump and debug buffer, beside it unless given) with a reference program's run on the same
input (`--reference`), or, when chosen, with the ETRecord's graph run by ExecuTorch's Inspector
(`--aot`: it runs the graph the ETRecord records; docs/security.md), and colours every compared
instruction and every partition's group by the metric chosen (render/numerics_overlay.py).

Anything missing or unreadable comes back as the provider's error message: the graph stays as it
is.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from model_explorer.config_editor import DropDownConfigEditor, OptionItem, TextInputConfigEditor
from model_explorer.node_data_builder import GradientItem, GraphNodeData, NodeDataResult
from model_explorer.node_data_provider import (
    GetConfigEditorsResult,
    NodeDataProvider,
    NodeDataProviderFilter,
    NodeDataProviderMetadata,
    NodeDataProviderResult,
)

from pte_adapter.errors import PteFormatError

if TYPE_CHECKING:
    from pte_adapter.analysis.lowering_map import EtRecordAnalysis

PROVIDER_ID: Final = "pte_adapter_numerics"
REFERENCE: Final = "reference"
AGAINST: Final = "against"
METRIC: Final = "metric"
THRESHOLD: Final = "threshold"
FILES: Final = ("etdump", "debug_buffer", "reference_etdump", "reference_debug_buffer")
VS_PROGRAM: Final = "the reference program's run"
VS_AOT: Final = "the ETRecord's graph (runs it: --aot)"


def graph_node_data(model_path: str, graph_id: str, config: dict[str, Any]) -> GraphNodeData:
    """The overlay for one method graph. Raises PteFormatError when it cannot be made."""
    from pte_adapter.api import AotUnavailable, NumericsOptions, open_analysis
    from pte_adapter.render.numerics_overlay import (
        METRICS,
        numerics_node_data,
        recorded_numerics_node_data,
    )
    from pte_adapter.render.plan.program import program_plan

    def path(key: str) -> Path | None:
        text = str(config.get(key) or "").strip()
        return Path(text) if text else None

    aot = str(config.get(AGAINST) or VS_PROGRAM) == VS_AOT
    if not aot and path(REFERENCE) is None:
        raise PteFormatError(
            "give the reference program's path (the same network exported "
            "another way, run on the same input), or choose the ETRecord's graph"
        )
    metric = str(config.get(METRIC) or "snr")
    if metric not in METRICS:
        raise PteFormatError(f"unknown metric {metric!r}")
    try:
        threshold = float(str(config.get(THRESHOLD) or "30"))
    except ValueError as e:
        raise PteFormatError(f"threshold: not a number: {config.get(THRESHOLD)!r}") from e
    options = NumericsOptions(
        debug_buffer=path("debug_buffer"),
        reference=None if aot else path(REFERENCE),
        reference_etdump=path("reference_etdump"),
        reference_debug_buffer=path("reference_debug_buffer"),
        aot=aot,
        threshold_db=threshold,
    )
    view, program = _program_of(Path(model_path))
    try:
        etrecord = Path(model_path) if view is not None else None
        result = open_analysis(program, etrecord=etrecord, etdump=path("etdump"), numerics=options)
    except AotUnavailable as e:
        raise PteFormatError(str(e)) from e
    if result.numerics_error is not None:
        raise copy.copy(result.numerics_error)  # kept without a traceback (`errors.detached`)
    if view is not None:
        data = recorded_numerics_node_data(view, result, metric).get(graph_id)
    else:
        data = numerics_node_data(result, program_plan(result), metric).get(graph_id)
    if data is None:
        problems = "; ".join(result.numerics.problems[:2]) if result.numerics else ""
        raise PteFormatError(
            f"nothing compared in graph '{graph_id}'" + (f": {problems}" if problems else "")
        )
    return GraphNodeData(
        name=data["name"],
        results={k: NodeDataResult(value=v["value"]) for k, v in data["results"].items()},
        gradient=[GradientItem(stop=g["stop"], bgColor=g["bgColor"]) for g in data["gradient"]],
    )


def _program_of(path: Path) -> tuple[EtRecordAnalysis | None, Path]:
    """The program whose run is compared: the file itself, or for a graph of an ETRecord the
    program it belongs to (with the ETRecord's view, whose runtime steps the nodes take)."""
    from pte_adapter.api.sidefiles import ETRECORD_SUFFIXES

    if path.suffix not in ETRECORD_SUFFIXES:
        return None, path
    from pte_adapter.api.etrecord_view import open_etrecord_file

    view = open_etrecord_file(path, profile=False)
    if view.program is None or view.program.program.path is None:
        why = "; ".join(view.notes) or "no program beside it"
        raise PteFormatError(f"no run to compare: {why}", part=path.name)
    return view, view.program.program.path


class PteNumericsNodeData(NodeDataProvider):  # type: ignore[misc]
    """The numeric gap per instruction and per partition, from a run's debug buffer."""

    metadata = NodeDataProviderMetadata(
        id=PROVIDER_ID,
        name="Numeric gap (debug buffer)",
        description="SNR (or MSE, L1, max |difference|, cosine) of each instruction's output "
        "against a reference program's run on the same input, joined layer by layer.",
        icon="compare_arrows",
        filter=NodeDataProviderFilter(modelFileExts=["pte", "bpte", "etrecord", "bin"]),
    )

    def __init__(self) -> None:
        super().__init__()

    def get_config_editors(self, provider_id: str) -> GetConfigEditorsResult:
        from pte_adapter.render.numerics_overlay import METRICS

        def text(key: str, label: str, description: str) -> TextInputConfigEditor:
            return TextInputConfigEditor(
                id=key, label=label, description=description, defaultValue=""
            )

        return GetConfigEditorsResult(
            configEditors=[
                DropDownConfigEditor(
                    id=AGAINST,
                    label="Compare with",
                    description="another program's run, or the ETRecord's graph run by "
                    "ExecuTorch's Inspector (it runs code the ETRecord describes; needs torch)",
                    defaultValue=VS_PROGRAM,
                    options=[OptionItem(value=v, label=v) for v in (VS_PROGRAM, VS_AOT)],
                ),
                text(
                    REFERENCE,
                    "Reference program",
                    "the same network exported another way "
                    "(float vs INT8, CPU-only vs delegated), its ETRecord, ETDump and debug "
                    "buffer beside it",
                ),
                DropDownConfigEditor(
                    id=METRIC,
                    label="Metric",
                    description="what colours the nodes (deep red: the worst)",
                    defaultValue="snr",
                    options=[OptionItem(value=k, label=v[1]) for k, v in METRICS.items()],
                ),
                text(THRESHOLD, "SNR threshold (dB)", "default 30"),
                text("etdump", "ETDump", "default: beside the program"),
                text("debug_buffer", "Debug buffer", "default: beside the ETDump"),
                text("reference_etdump", "Reference ETDump", "default: beside the reference"),
                text("reference_debug_buffer", "Reference debug buffer", "default: beside it"),
            ]
        )

    def run(
        self,
        provider_id: str,
        model_path: str,
        graph_id: str,
        config_values: dict[str, Any],
        graph: Any,
    ) -> NodeDataProviderResult:
        try:
            data = graph_node_data(model_path, graph_id, config_values)
            return NodeDataProviderResult(result=data)
        except PteFormatError as e:
            return NodeDataProviderResult(error=str(e))
