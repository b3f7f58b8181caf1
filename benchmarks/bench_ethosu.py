"""Time the Ethos-U decoder on the MobileNetV2 payload (and any other Ethos-U example).

    python -m benchmarks.bench_ethosu [file.pte ...]

Payloads are taken with ExecuTorch's own deserializer so only the decoder is timed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pte_adapter.delegates.ethosu.decode import decode, decode_stream
from pte_adapter.delegates.ethosu.perf import estimate_operations, target_for
from pte_adapter.delegates.hooks import DecodeContext

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
                # The performance estimate alone (it is part of decode above).
                _s, config, cmds, _p = decode_stream(payload, ctx)
                est_times = []
                if config is not None and cmds is not None:
                    target = target_for(config.accelerator_config)
                    for _ in range(REPEATS):
                        t0 = time.perf_counter()
                        estimate_operations(cmds.operations, target)
                        est_times.append(time.perf_counter() - t0)
                    est_times.sort()
                est = (
                    f", estimate {est_times[len(est_times) // 2] * 1e3:.1f} ms" if est_times else ""
                )
                print(
                    f"{path.name} {plan.name}[{i}]: {len(payload)} bytes, "
                    f"{result.stats.get('cmd_words')} command words, "
                    f"{result.inner_op_count} NPU ops: median {times[len(times) // 2] * 1e3:.1f} ms, "
                    f"best {times[0] * 1e3:.1f} ms{est}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
