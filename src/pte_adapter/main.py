"""Model Explorer's entry point: `model-explorer --extensions=pte_adapter model.pte`.

Model Explorer imports `<extension>.main` and registers every `Adapter` and `NodeDataProvider`
class defined by then, so this module only imports them; they live in `pte_adapter.explorer`.
"""

from pte_adapter import no_cycle_collection

with no_cycle_collection():  # an import frees almost nothing (as the package's own)
    from pte_adapter.explorer.adapter import PteAdapter
    from pte_adapter.explorer.node_data_provider import PteProfileNodeData
    from pte_adapter.explorer.numerics_provider import PteNumericsNodeData

__all__ = ["PteAdapter", "PteNumericsNodeData", "PteProfileNodeData"]
