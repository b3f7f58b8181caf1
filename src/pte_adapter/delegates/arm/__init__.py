"""What the Arm backends share: Ethos-U (`EthosUBackend`), TOSA (`TOSABackend`) and VGF
(`VgfBackend`) are all lowered through TOSA and chosen by one partitioner, Arm's
`TOSAPartitioner`, whose operator support rules decide which nodes a partition may take.

`partition_rules.py` evaluates those rules for a CPU kernel (the `partition_rules` hook of the three
records); the rules themselves, extracted from the pinned ExecuTorch, are in
`_generated/partition_rules.py`. `artifacts.py` says where an export's intermediate files may be
(the `debug_artifact_path` compile spec) and `partition_report.py` reads the partitioner's own
report there; the `.tosa` files among them are matched to delegates by `delegates/tosa/sidecars.py`.
The backend packages import this one, never the other way round.
"""
