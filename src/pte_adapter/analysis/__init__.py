"""Dataflow, partitions and fragmentation numbers over the typed program model."""
