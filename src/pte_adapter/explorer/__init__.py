"""The Model Explorer entry: the adapter (`adapter`), path -> graphs (`convert`) and the node data
provider for measured time (`node_data_provider`). `pte_adapter.main` re-exports the first and the
last, because Model Explorer imports `<extension>.main` to find them."""
