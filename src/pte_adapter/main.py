"""Model Explorer's entry point: `model-explorer --extensions=pte_adapter model.pte`.

Model Explorer imports `<extension>.main` and registers every `Adapter` and `NodeDataProvider`
class defined by then, so this module only imports the two; they live in `pte_adapter.explorer`.
"""

from pte_adapter.explorer.adapter import PteAdapter
from pte_adapter.explorer.node_data_provider import PteProfileNodeData

__all__ = ["PteAdapter", "PteProfileNodeData"]
