"""The Model Explorer server's memory over many mutated side files (issue 44): one adapter instance
opening the small example programs while their ETRecord or ETDump is replaced, input after input,
by a seeded mutation (`tests/support/server_memory.py`, in a fresh interpreter without torch).

    python -m benchmarks.bench_server_memory                     # 3,000 inputs
    python -m benchmarks.bench_server_memory --inputs 1000 --seed 2

Prints the resident memory after a clean pass over the programs, at the end, the peak, and the
objects the cycle collector finds unreachable at the end (what the conversions left in cycles).
"""

from __future__ import annotations

import argparse

from tests.support.server_memory import run_in_subprocess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    f = run_in_subprocess(args.inputs, args.seed)
    print(
        f"{f['inputs']} inputs over {f['programs']} programs in {f['seconds']} s: "
        f"{f['rss_start_mb']} MB -> {f['rss_end_mb']} MB (peak {f['peak_mb']} MB), "
        f"{f['unreachable']} objects left in cycles"
    )


if __name__ == "__main__":
    main()
