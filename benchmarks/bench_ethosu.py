"""Time the Ethos-U decoder on the MobileNetV2 payload (and any other Ethos-U example).

    python benchmarks/bench_ethosu.py [file.pte ...]

Payloads are taken with ExecuTorch's own deserializer so only the decoder is timed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pte_adapter.delegates.ethosu import decode
from pte_adapter.delegates.registry import DecodeContext

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REPEATS = 20


def main(argv: list[str]) -> int:
    from executorch.exir._serialize._program import deserialize_pte_binary

    paths = [Path(a) for a in argv] or [EXAMPLES / "mv2_ethosu85_full.pte"]
    for path in paths:
        program = deserialize_pte_binary(path.read_bytes()).program
        for plan in program.execution_plan:
            for i, d in enumerate(plan.delegates):
                if d.id != "EthosUBackend":
                    continue
                payload = memoryview(bytes(program.backend_delegate_data[d.processed.index].data))
                ctx = DecodeContext("EthosUBackend", {c.key: c.value for c in d.compile_specs})
                decode(payload, ctx)  # warm-up: imports and table look-ups
                times = []
                for _ in range(REPEATS):
                    t0 = time.perf_counter()
                    result = decode(payload, ctx)
                    times.append(time.perf_counter() - t0)
                times.sort()
                print(
                    f"{path.name} {plan.name}[{i}]: {len(payload)} bytes, "
                    f"{result.stats.get('cmd_words')} command words, "
                    f"{result.inner_op_count} NPU ops: median {times[len(times) // 2] * 1e3:.1f} ms, "
                    f"best {times[0] * 1e3:.1f} ms"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
