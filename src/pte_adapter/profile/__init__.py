"""Measured time: read an ETDump and place its events on the program's instructions and partitions."""
