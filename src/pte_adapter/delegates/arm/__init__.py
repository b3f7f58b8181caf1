"""What ExecuTorch's Arm backends (Ethos-U, TOSA and VGF) share: one partitioner, whose operator
support lists and checks decide what leaves the CPU (`partition_rules`)."""
