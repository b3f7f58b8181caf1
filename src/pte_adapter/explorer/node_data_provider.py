"""Model Explorer node data provider: colour a method graph by measured time.

Registered with the adapter (main.py imports this module): in Model Explorer, "Add per-node data"
lists "Measured time (ETDump)" for `.pte` graphs. It reads the ETDump beside the `.pte`
(`model.etdp`) unless another path is given, and colours every instruction node and every
partition's group node by its median time over the runs (render/node_data.py).

A missing, corrupt or foreign ETDump comes back as the provider's error message: the graph stays as
it is.
"""

from __future__ import annotations

from typing import Any

from model_explorer.config_editor import TextInputConfigEditor
from model_explorer.node_data_builder import GradientItem, GraphNodeData, NodeDataResult
from model_explorer.node_data_provider import (
    GetConfigEditorsResult,
    NodeDataProvider,
    NodeDataProviderFilter,
    NodeDataProviderMetadata,
    NodeDataProviderResult,
)

from pte_adapter.errors import PteFormatError

PROVIDER_ID = "pte_adapter_profile"
ETDUMP_FIELD = "etdump"


def graph_node_data(model_path: str, graph_id: str, etdump: str | None) -> GraphNodeData:
    """The overlay for one method graph. Raises PteFormatError when it cannot be made."""
    from pte_adapter.api import analyse, etdump_beside, load, read_etdump_beside
    from pte_adapter.render.node_data import model_node_data
    from pte_adapter.render.plan.program import program_plan

    dump = read_etdump_beside(model_path, etdump or etdump_beside(model_path))
    result = analyse(load(model_path), dump)
    if result.profile_error is not None:
        raise result.profile_error
    method = result.method(graph_id)
    if method is None or method.measured is None:
        ran = ", ".join(m.name for m in result.methods if m.measured is not None) or "none"
        raise PteFormatError(
            f"the ETDump has no times for graph '{graph_id}' (methods it ran: {ran})",
            part=dump.name if dump is not None else "",
        )
    data = model_node_data(result, program_plan(result))[graph_id]
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
        "an ExecuTorch ETDump (.etdp; default: beside the .pte).",
        icon="timer",
        filter=NodeDataProviderFilter(modelFileExts=["pte"]),
    )

    def __init__(self) -> None:
        super().__init__()

    def get_config_editors(self, provider_id: str) -> GetConfigEditorsResult:
        return GetConfigEditorsResult(
            configEditors=[
                TextInputConfigEditor(
                    id=ETDUMP_FIELD,
                    label="ETDump path",
                    description="Leave empty for the .etdp beside the .pte",
                    defaultValue="",
                )
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
            return NodeDataProviderResult(result=graph_node_data(model_path, graph_id, etdump))
        except PteFormatError as e:
            return NodeDataProviderResult(error=str(e))
