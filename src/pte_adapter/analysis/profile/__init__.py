"""Measured time: ETDump events placed on the program's instructions, partitions and runs, and their run-to-run statistics (the ETDump reader itself is `container.etdump`)."""
