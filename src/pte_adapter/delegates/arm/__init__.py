"""What the Arm backends share: Ethos-U (`EthosUBackend`), TOSA (`TOSABackend`) and VGF
(`VgfBackend`) are all lowered through TOSA and chosen by one partitioner, Arm's
`TOSAPartitioner`, whose operator support rules decide which nodes a partition may take.

Those rules, extracted from the pinned ExecuTorch, are in `_generated/partition_rules.py`.
"""
