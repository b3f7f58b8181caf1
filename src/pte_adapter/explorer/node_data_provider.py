"""Model Explorer node data provider: colour a method graph by measured time.

Registered with the adapter (main.py imports this module): in Model Explorer, "Add per-node data"
lists "Measured time (ETDump)" for `.pte` and `.bpte` graphs. It reads the ETDump beside the
program (by any of its names, `api/sidefiles.py`) unless another path is given, in the time scale
chosen (default: as the ETDump's name says, else ns), and colours every instruction node and every
partition's group node by its median time over the runs (render/node_data.py).

A missing, corrupt or foreign ETDump comes back as the provider's error message: the graph stays as
it is.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    from pte_adapter.analysis.profile.time_scale import TimeScale

PROVIDER_ID = "pte_adapter_profile"
ETDUMP_FIELD = "etdump"
SCALE_FIELD = "time_scale"
CLOCK_FIELD = "clock_mhz"
FROM_NAME = "from the file name"
TIME_SCALES = ("ns", "us", "ms", "cycles")


def time_scale_setting(unit: str, clock: str) -> TimeScale | None:
    """The provider's time-scale fields; None: as the ETDump's name says (else ns). Raises
    PteFormatError for a clock that is not a positive number."""
    from pte_adapter.analysis.profile.time_scale import TimeScale, TimeScaleError

    unit, clock = unit.strip(), clock.strip()
    if unit in ("", FROM_NAME) and not clock:
        return None
    try:
        mhz = float(clock) if clock else None
        return TimeScale(unit if unit not in ("", FROM_NAME) else "cycles", clock_mhz=mhz)
    except (TimeScaleError, ValueError) as e:
        raise PteFormatError(f"time scale: {e}") from e


def graph_node_data(
    model_path: str, graph_id: str, etdump: str | None, scale: TimeScale | None = None
) -> GraphNodeData:
    """The overlay for one method graph (or one graph of an ETRecord). Raises PteFormatError
    when it cannot be made."""
    from pte_adapter.api import open_analysis
    from pte_adapter.api.sidefiles import ETRECORD_SUFFIXES

    if Path(model_path).suffix in ETRECORD_SUFFIXES:
        return _recorded_graph_node_data(Path(model_path), graph_id, etdump, scale)
    from pte_adapter.api.sidefiles import no_etdump
    from pte_adapter.render.node_data import model_node_data
    from pte_adapter.render.plan.program import program_plan

    result = open_analysis(model_path, etdump=etdump or None, time_scale=scale)
    if result.profile_error is not None:
        raise copy.copy(result.profile_error)  # kept without a traceback (`errors.detached`)
    if result.profile is None:
        raise no_etdump(Path(model_path))
    method = result.method(graph_id)
    if method is None or method.measured is None:
        ran = ", ".join(m.name for m in result.methods if m.measured is not None) or "none"
        raise PteFormatError(
            f"the ETDump has no times for graph '{graph_id}' (methods it ran: {ran})",
            part=result.profile.etdump.name,
        )
    return _graph_node_data(model_node_data(result, program_plan(result))[graph_id])


def _recorded_graph_node_data(
    path: Path, graph_id: str, etdump: str | None, scale: TimeScale | None
) -> GraphNodeData:
    """Measured time on a graph of an ETRecord: each node gets the time of the runtime step it
    ran in, from the ETDump of the program the ETRecord belongs to."""
    from pte_adapter.api.etrecord_view import open_etrecord_file
    from pte_adapter.render.node_data import etrecord_node_data

    view = open_etrecord_file(path, etdump=etdump or None, time_scale=scale)
    data = etrecord_node_data(view).get(graph_id)
    if data is None:
        why = "; ".join(view.notes) or "no program beside it"
        if view.program is not None and view.program.profile_summary is None:
            why = f"no ETDump beside {view.notes[0].removeprefix('the program of ')}"
        raise PteFormatError(f"no measured time for graph '{graph_id}': {why}", part=path.name)
    return _graph_node_data(data)


def _graph_node_data(data: dict[str, Any]) -> GraphNodeData:
    return GraphNodeData(
        name=data["name"],
        results={k: NodeDataResult(value=v["value"]) for k, v in data["results"].items()},
        gradient=[GradientItem(stop=g["stop"], bgColor=g["bgColor"]) for g in data["gradient"]],
    )


class PteProfileNodeData(NodeDataProvider):  # type: ignore[misc]
    """Measured time per instruction and per partition, from an ExecuTorch ETDump."""

    metadata = NodeDataProviderMetadata(
        id=PROVIDER_ID,
        name="Measured time (ETDump)",
        description="Median time per instruction and per partition over the runs recorded in "
        "an ExecuTorch ETDump (default: the one beside the program); on an ETRecord's graphs, "
        "each node's runtime step.",
        icon="timer",
        filter=NodeDataProviderFilter(modelFileExts=["pte", "bpte", "etrecord", "bin"]),
    )

    def __init__(self) -> None:
        super().__init__()

    def get_config_editors(self, provider_id: str) -> GetConfigEditorsResult:
        return GetConfigEditorsResult(
            configEditors=[
                TextInputConfigEditor(
                    id=ETDUMP_FIELD,
                    label="ETDump path",
                    description="Leave empty for the one beside the program "
                    "(<stem>.etdp, <stem>.etdump or etdump.bin)",
                    defaultValue="",
                ),
                DropDownConfigEditor(
                    id=SCALE_FIELD,
                    label="Time scale",
                    description="What one ETDump tick is: as its file name says "
                    "(model.cycles.etdp, etdump.150MHz.bin), else ns",
                    defaultValue=FROM_NAME,
                    options=[OptionItem(value=v, label=v) for v in (FROM_NAME, *TIME_SCALES)],
                ),
                TextInputConfigEditor(
                    id=CLOCK_FIELD,
                    label="Clock (MHz)",
                    description="For cycles: the CPU clock, to show cycles as time too",
                    defaultValue="",
                ),
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
        etdump = str(config_values.get(ETDUMP_FIELD) or "").strip()
        try:
            scale = time_scale_setting(
                str(config_values.get(SCALE_FIELD) or ""), str(config_values.get(CLOCK_FIELD) or "")
            )
            data = graph_node_data(model_path, graph_id, etdump, scale)
            return NodeDataProviderResult(result=data)
        except PteFormatError as e:
            return NodeDataProviderResult(error=str(e))
