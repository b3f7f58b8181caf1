"""ExecuTorch's Inspector joining an ETRecord to a program, for programs that cannot run here.

The Inspector joins an ETRecord to the events of an ETDump: each event's instruction id is looked
up in the ETRecord's `debug_handle_map` (its delegate map for delegate calls), and every edge-graph
node that carries one of those handles gives the event its stack traces and module hierarchy.
Programs with Ethos-U delegates and `cortex_m::` kernels do not run in ExecuTorch's Python runtime,
so no real ETDump exists for them; this writes one with ExecuTorch's own ETDump schema and flatc
(size-prefixed, as the runtime writes it): one profile event per instruction of each method's
first chain, `OPERATOR_CALL` or `DELEGATE_CALL` as the runtime names them. The join itself is the
Inspector's.
"""

from __future__ import annotations

import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from pte_adapter.program.model import InstructionKind, Program


@dataclass
class JoinedEvent:
    """What the Inspector attached to one instruction's event."""

    instruction: int  # instruction id (position in chain 0)
    debug_handles: list[int]
    nodes: list[str]  # edge-graph node names, in the Inspector's order
    stack_traces: dict[str, str]  # node -> stack trace ("" when none)
    module_stacks: dict[str, list[tuple[str, str]]]  # node -> [(path, class)], outermost first


def write_instruction_etdump(
    program: Program, path: Path, kernel_events: str = "OPERATOR_CALL"
) -> None:
    """An ETDump with one run per method: one profile event per chain-0 instruction, a kernel's
    named `kernel_events` ("native_call" names it as the runtime's kernel events are named,
    `native_call_<operator>.<overload>`)."""
    from executorch.devtools.etdump import schema_flatcc as s
    from executorch.devtools.etdump import serialize
    from executorch.exir._serialize._flatbuffer import _get_flatc_path

    runs = []
    for method in program.methods:
        events = []
        for ins in (i for i in method.instructions if i.chain == 0):
            name = "DELEGATE_CALL" if ins.kind is InstructionKind.DELEGATE else kernel_events
            op = method.operator_of(ins.op_index)
            if kernel_events == "native_call" and ins.kind is not InstructionKind.DELEGATE:
                name = f"native_call_{op.full_name.split('::')[-1] if op else 'unknown'}"
            start = 1000 * (ins.chain_position + 1)
            event = s.ProfileEvent(name, 0, ins.chain_position, -1, "", b"", start, start + 500)
            events.append(s.Event(profile_event=event, allocation_event=None, debug_event=None))
        runs.append(
            s.RunData(name=method.name, bundled_input_index=-1, allocators=[], events=events)
        )
    doc = s.ETDumpFlatCC(version=0, run_data=runs)
    with tempfile.TemporaryDirectory() as d:
        serialize._write_schema(d, serialize.ETDUMP_FLATCC_SCHEMA_NAME)
        serialize._write_schema(d, serialize.SCALAR_TYPE_SCHEMA_NAME)
        name = serialize.ETDUMP_FLATCC_SCHEMA_NAME
        (Path(d) / f"{name}.json").write_text(serialize._serialize_from_etdump_to_json(doc))
        flatc = [_get_flatc_path(), "--binary", "--size-prefixed", "-o", d]
        subprocess.run([*flatc, f"{d}/{name}.fbs", f"{d}/{name}.json"], check=True)
        path.write_bytes((Path(d) / f"{name}.etdp").read_bytes())


def inspector_join(program: Program, etrecord: Path, workdir: Path) -> dict[int, JoinedEvent]:
    """Instruction id -> what the Inspector joined to it (method `forward`: the only method the
    Inspector maps)."""
    from executorch.devtools import Inspector

    etdump = workdir / "probe.etdp"
    write_instruction_etdump(program, etdump)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Output Buffer not found": no debug buffer is kept
        inspector = Inspector(etdump_path=str(etdump), etrecord=str(etrecord))
    out: dict[int, JoinedEvent] = {}
    for block in inspector.event_blocks:
        if block.name != "forward":
            continue
        for e in block.events:
            if e._instruction_id is None:
                continue
            handles = e.debug_handles
            handles = [] if handles is None else [handles] if isinstance(handles, int) else handles
            # The Inspector's operator graph names each node `<name>_`.
            nodes = [n.removesuffix("_") for n in e.stack_traces]
            out[e._instruction_id] = JoinedEvent(
                e._instruction_id,
                list(handles),
                nodes,
                {n.removesuffix("_"): t or "" for n, t in e.stack_traces.items()},
                {
                    n.removesuffix("_"): [tuple(v) for v in (h or {}).values()]
                    for n, h in e.module_hierarchy.items()
                },
            )
    return out
