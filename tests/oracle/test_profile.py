"""ETDump profiles: our reader and join against ExecuTorch's Inspector over the same `.etdp`.

The `.etdp` files are real: `examples/profile_examples.py` ran each program 12 times per method in
ExecuTorch's Python runtime. The oracle is `executorch.devtools.Inspector`, which reads the file with
its own deserializer (flatc + the ETDump schema) and groups runs with the same events into event
blocks; every expected number here comes from it (or from numpy, for percentiles), never from our
own output.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pte_adapter.analysis.profile.join import (
    PlacedEvent,
    ProfileMismatchError,
    join_profile,
    time_split,
)
from pte_adapter.analysis.profile.stats import Stats
from pte_adapter.analysis.profile.summary import instruction_times, profile_summary
from pte_adapter.api import load
from pte_adapter.container.etdump import ETDump, ProfileEvent, load_etdump, read_etdump
from pte_adapter.errors import PteFormatError
from tests.support.examples import EXAMPLES
from tests.support.profiles import inspector

ETDPS = sorted(EXAMPLES.glob("*.etdp"))
MIN_RUNS = 10


def _key(e: ProfileEvent) -> tuple[str, int, object]:
    delegate: object = e.delegate_debug_id_str or (
        e.delegate_debug_id_int if e.delegate_debug_id_int != -1 else None
    )
    return (e.label, e.instruction_id, delegate)


def _groups(etdump: ETDump) -> list[tuple[str, list[int]]]:
    """Runs that have the same events, in order of first appearance (how Inspector forms blocks)."""
    groups: dict[tuple[object, ...], list[int]] = {}
    for run in etdump.runs:
        if not run.profile_events and not run.debug_events:
            continue
        sig = (run.name, tuple((*_key(e), e.chain_index) for e in run.profile_events))
        groups.setdefault(sig, []).append(run.index)
    return [(str(sig[0]), runs) for sig, runs in groups.items()]


def test_examples_exist() -> None:
    stems = {p.stem for p in ETDPS}
    assert {"mv2_xnnpack_fp32", "mv2_xnnpack_int8", "xnnpack_ptd", "undelegated"} <= stems
    for p in ETDPS:
        assert (EXAMPLES / f"{p.stem}.pte").exists(), p


@pytest.mark.parametrize("path", ETDPS, ids=[p.stem for p in ETDPS])
def test_events_match_inspector_run_by_run(path: Path) -> None:
    """Every event: name, duration in every run, instruction id and placement, against Inspector."""
    ours = load_etdump(path)
    program = load(EXAMPLES / f"{path.stem}.pte")
    profile = join_profile(program, ours)
    placed: dict[tuple[int, int], PlacedEvent] = {(p.run, p.event.index): p for p in profile.placed}
    runs = {r.index: r for r in ours.runs}
    blocks = inspector(path).event_blocks
    groups = _groups(ours)
    assert [b.name for b in blocks] == [name for name, _ in groups]
    compared = 0
    for block, (_, run_ids) in zip(blocks, groups, strict=True):
        timed = [e for e in block.events if e.perf_data is not None]
        # Inspector keeps one Event per distinct event of the block: we must have each of them.
        assert len(timed) == len(runs[run_ids[0]].profile_events)
        for ie in timed:
            mine = []
            for rid in run_ids:
                found = [
                    e
                    for e in runs[rid].profile_events
                    if _key(e) == (ie.name, ie._instruction_id, ie.delegate_debug_identifier)
                ]
                assert len(found) == 1, (ie.name, rid)
                mine.append(found[0])
            assert len(ie.perf_data.raw) == len(mine)
            for rid, raw, e in zip(run_ids, ie.perf_data.raw, mine, strict=True):
                assert raw == pytest.approx(e.duration / 1e6, rel=1e-9, abs=1e-12)
                p = placed[(rid, e.index)]
                assert p.event is e
                assert (p.role == "delegate") == bool(ie.is_delegated_op)
                if p.instruction is not None:
                    ins = program.method(p.method).instructions[p.instruction]
                    assert (ins.chain, ins.chain_position) == (e.chain_index, ie._instruction_id)
                else:
                    assert p.role in ("method", "load", "unplaced")
                compared += 1
    assert compared >= MIN_RUNS


@pytest.mark.parametrize("path", ETDPS, ids=[p.stem for p in ETDPS])
def test_every_run_is_placed(path: Path) -> None:
    program = load(EXAMPLES / f"{path.stem}.pte")
    profile = join_profile(program, load_etdump(path))
    executes = sum(1 for r in profile.etdump.runs if r.name == "Execute")
    assert sum(len(m.runs) for m in profile.methods) == executes
    # The numeric-gap examples record one run, with its intermediate outputs (issue 43).
    runs = 1 if path.stem.startswith("numerics_") else MIN_RUNS
    for m in profile.methods:
        assert len(m.runs) >= runs
    assert profile.unplaced == []
    assert profile.problems == []


@pytest.mark.parametrize("stem", ["undelegated", "mv2_xnnpack_int8", "two_methods"])
def test_instruction_percentiles_match_inspector(stem: str) -> None:
    """Where all runs of a method form one Inspector block, Inspector's p10/p50/p90/min/max of each
    instruction event are ours."""
    path = EXAMPLES / f"{stem}.etdp"
    program = load(EXAMPLES / f"{stem}.pte")
    etdump = load_etdump(path)
    profile = join_profile(program, etdump)
    checked = 0
    for block, (_, run_ids) in zip(inspector(path).event_blocks, _groups(etdump), strict=True):
        mp = next((m for m in profile.methods if [r.run for r in m.runs] == run_ids), None)
        if mp is None:
            continue
        times = instruction_times(mp)
        first = mp.method.chains[0].first_instruction
        for ie in block.events:
            if ie.name not in ("OPERATOR_CALL", "DELEGATE_CALL"):
                continue
            t = times[first + ie._instruction_id]
            perf = ie.perf_data
            assert t.stats.median == pytest.approx(perf.p50, rel=1e-9)
            assert t.stats.p10 == pytest.approx(perf.p10, rel=1e-9)
            assert t.stats.p90 == pytest.approx(perf.p90, rel=1e-9)
            assert t.stats.min == pytest.approx(perf.min, rel=1e-9)
            assert t.stats.max == pytest.approx(perf.max, rel=1e-9)
            checked += 1
    assert checked >= 1


@pytest.mark.parametrize("stem", ["mv2_xnnpack_fp32", "undelegated", "two_methods", "cond"])
def test_latency_and_split_against_inspector(stem: str) -> None:
    """Per-run latency is Inspector's Method::execute; the split's parts add up to it."""
    path = EXAMPLES / f"{stem}.etdp"
    program = load(EXAMPLES / f"{stem}.pte")
    profile = join_profile(program, load_etdump(path))
    executes = sorted(
        x
        for b in inspector(path).event_blocks
        for e in b.events
        if e.name == "Method::execute"
        for x in e.perf_data.raw
    )
    summary = profile_summary(profile)
    ours = sorted(v for m in summary["methods"] for v in m["latency_ms"])
    assert ours == pytest.approx([round(x, 4) for x in executes], abs=1e-4)
    for mp in profile.methods:
        for run in mp.runs:
            split = time_split(mp, run)
            assert sum(split.values()) == run.total
            assert split["runtime"] >= 0


def test_stats_match_numpy() -> None:
    values = [
        e.duration / 1e6
        for r in load_etdump(EXAMPLES / "undelegated.etdp").runs
        for e in r.profile_events
    ]
    for n in (1, 2, 3, 10, len(values)):
        s = Stats.of(values[:n])
        for q, got in ((10, s.p10), (50, s.median), (90, s.p90)):
            assert got == pytest.approx(float(np.percentile(values[:n], q)), rel=1e-12)
    assert math.isnan(Stats.of([]).median)


def test_xnnpack_events_go_to_the_partition() -> None:
    program = load(EXAMPLES / "mv2_xnnpack_int8.pte")
    profile = join_profile(program, load_etdump(EXAMPLES / "mv2_xnnpack_int8.etdp"))
    mp = profile.methods[0]
    (part,) = mp.partitions.delegate_partitions
    delegate = [p for p in profile.placed if p.role == "delegate"]
    assert delegate and all(p.partition == part.index for p in delegate)
    # Inspector marks exactly these as delegated ops.
    n = sum(
        len(e.perf_data.raw)
        for b in inspector(EXAMPLES / "mv2_xnnpack_int8.etdp").event_blocks
        for e in b.events
        if e.is_delegated_op
    )
    assert len(delegate) == n


@pytest.mark.parametrize(
    ("pte", "etdp"),
    [
        ("undelegated", "mv2_xnnpack_fp32"),
        ("mv2_xnnpack_fp32", "undelegated"),
        ("two_methods", "undelegated"),
        ("cond", "two_methods"),
        ("mv2_xnnpack_int8", "cond"),
    ],
)
def test_profile_of_another_program_is_refused(pte: str, etdp: str) -> None:
    program = load(EXAMPLES / f"{pte}.pte")
    with pytest.raises(ProfileMismatchError, match="another program"):
        join_profile(program, load_etdump(EXAMPLES / f"{etdp}.etdp"))


def _mutants(data: bytes, count: int) -> list[bytes]:
    rng = np.random.default_rng(14)
    out = [data[:n] for n in (0, 3, 4, 11, 12, len(data) // 2, len(data) - 1)]
    out.append(b"\x00" * 4 + data[4:])
    out.append(data[:8] + b"XX00" + data[12:])
    out.append((len(data) * 2).to_bytes(4, "little") + data[4:])
    # Lengths and offsets: every aligned u32 is a candidate field, set to extreme values.
    for pos in rng.choice(np.arange(4, len(data) - 4, 4), size=min(count, len(data) // 4 - 2)):
        for value in (0xFFFFFFFF, 0x7FFFFFFF, 0x10000000, 3):
            buf = bytearray(data)
            buf[int(pos) : int(pos) + 4] = value.to_bytes(4, "little")
            out.append(bytes(buf))
    for _ in range(count):
        buf = bytearray(data)
        for pos in rng.integers(0, len(buf), size=int(rng.integers(1, 8))):
            buf[int(pos)] = int(rng.integers(0, 256))
        out.append(bytes(buf))
    return out


@pytest.mark.parametrize("stem", ["xnnpack_ptd", "two_methods"])
def test_corrupt_etdump_raises_one_error_type(stem: str) -> None:
    data = (EXAMPLES / f"{stem}.etdp").read_bytes()
    program = load(EXAMPLES / f"{stem}.pte")
    failures = 0
    slowest = 0.0
    for buf in _mutants(data, 60):
        start = time.process_time()
        try:
            profile = join_profile(program, read_etdump(buf, "x.etdp"))
            profile_summary(profile)
        except PteFormatError:
            failures += 1
        slowest = max(slowest, time.process_time() - start)
    assert failures >= 50  # truncations, bad headers, inflated lengths
    assert slowest < 1.0  # bounded work: no input costs more than a clean read by far


def test_bad_identifier_message() -> None:
    data = bytearray((EXAMPLES / "undelegated.etdp").read_bytes())
    data[8:12] = b"ET12"
    with pytest.raises(PteFormatError, match="not an ETDump") as info:
        read_etdump(bytes(data), "bad.etdp")
    assert info.value.offset == 8


def test_events_by_role_are_counted() -> None:
    profile = join_profile(load(EXAMPLES / "cond.pte"), load_etdump(EXAMPLES / "cond.etdp"))
    roles: dict[str, int] = defaultdict(int)
    for p in profile.placed:
        roles[p.role] += 1
    # cond takes both branches: JF_CALL and MOVE_CALL are instructions too.
    names = {p.event.name for p in profile.placed if p.role == "instruction"}
    assert {"OPERATOR_CALL", "JF_CALL", "MOVE_CALL"} <= names
    assert roles["method"] == len(profile.methods[0].runs)


@pytest.mark.parametrize("stem", ["mv2_xnnpack_fp32", "mv2_xnnpack_int8"])
def test_inside_the_delegate_against_inspector(stem: str) -> None:
    """The XNNPACK partition's time split into its compute operators, its Convert/Transpose/Copy
    operators and the call's time outside them: per run, from Inspector's events."""
    path = EXAMPLES / f"{stem}.etdp"
    (block,) = [b for b in inspector(path).event_blocks if b.name == "Execute"]
    call = next(e for e in block.events if e.name == "DELEGATE_CALL").perf_data.raw
    runs = len(call)
    compute, glue = [0.0] * runs, [0.0] * runs
    for e in block.events:
        if e.is_delegated_op:
            target = glue if e.name.startswith(("Convert", "Transpose", "Copy")) else compute
            for i, v in enumerate(e.perf_data.raw):
                target[i] += v
    assert any(glue) and any(compute)
    outside = [c - a - b for c, a, b in zip(call, compute, glue, strict=True)]
    summary = profile_summary(join_profile(load(EXAMPLES / f"{stem}.pte"), load_etdump(path)))
    (part,) = summary["methods"][0]["partitions"]
    for key, values in (
        ("inside_compute", compute),
        ("inside_glue", glue),
        ("outside_logged_ops", outside),
    ):
        assert part[key]["median"] == pytest.approx(float(np.median(values)), abs=1e-4), key
        assert part[key]["n"] == runs


@cache
def _et_deserialized(path: Path) -> Any:
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    return deserialize_from_etdump_flatcc(path.read_bytes())


def _same_value(ours: Any, theirs: Any) -> None:
    """A debug event's logged value: its tensors (dtype, sizes, strides, offset in the debug
    buffer), its scalar, and whether it is a method output, as ExecuTorch reads them."""
    if theirs is None:
        assert ours is None
        return
    assert ours.is_output == bool(theirs.output is not None and theirs.output.bool_val)
    tensors = [theirs.tensor] if theirs.tensor is not None else []
    tensors += theirs.tensor_list.tensors if theirs.tensor_list is not None else []
    assert [(t.scalar_type, list(t.sizes), list(t.strides), t.offset) for t in ours.tensors] == [
        (t.scalar_type.value, list(t.sizes), list(t.strides or []), t.offset) for t in tensors
    ]
    scalars = {
        "Int": theirs.int_value and theirs.int_value.int_val,
        "Bool": theirs.bool_value and theirs.bool_value.bool_val,
        "Float": theirs.float_value and theirs.float_value.float_val,
        "Double": theirs.double_value and theirs.double_value.double_val,
    }
    if ours.kind in scalars:
        assert ours.scalar == scalars[ours.kind]


@pytest.mark.parametrize("path", ETDPS, ids=[p.stem for p in ETDPS])
def test_reader_matches_executorchs_deserializer(path: Path) -> None:
    """Every field of every run and event, against ExecuTorch's own ETDump deserializer (flatc with
    the schema that ships in the wheel): profile, allocation and debug events alike."""
    theirs = _et_deserialized(path)
    ours = load_etdump(path)
    assert ours.version == theirs.version
    assert len(ours.runs) == len(theirs.run_data)
    debug_seen = 0
    for run, ref in zip(ours.runs, theirs.run_data, strict=True):
        assert run.name == ref.name
        assert run.bundled_input_index == (
            ref.bundled_input_index if ref.bundled_input_index is not None else -1
        )
        assert run.allocators == [a.name for a in ref.allocators or []]
        events = ref.events or []
        profile = [(i, e.profile_event) for i, e in enumerate(events) if e.profile_event]
        alloc = [(i, e.allocation_event) for i, e in enumerate(events) if e.allocation_event]
        debug = [(i, e.debug_event) for i, e in enumerate(events) if e.debug_event]
        assert [e.index for e in run.profile_events] == [i for i, _ in profile]
        for e, (_, r) in zip(run.profile_events, profile, strict=True):
            assert (e.name, e.chain_index, e.instruction_id) == (
                r.name or "",
                r.chain_index,
                r.instruction_id,
            )
            assert e.delegate_debug_id_int == (
                r.delegate_debug_id_int if r.delegate_debug_id_int is not None else -1
            )
            assert e.delegate_debug_id_str == (r.delegate_debug_id_str or "")
            assert e.metadata_bytes == len(r.delegate_debug_metadata or b"")
            assert (e.start, e.end) == (r.start_time, r.end_time)
        assert [(a.index, a.allocator_id, a.size) for a in run.allocation_events] == [
            (i, r.allocator_id, r.allocation_size) for i, r in alloc
        ]
        assert [e.index for e in run.debug_events] == [i for i, _ in debug]
        for e, (_, r) in zip(run.debug_events, debug, strict=True):
            assert (e.name, e.chain_index, e.instruction_id) == (
                r.name or "",
                r.chain_index,
                r.instruction_id,
            )
            assert e.value_type == (r.debug_entry.val if r.debug_entry else "")
            _same_value(e.value, r.debug_entry)
            debug_seen += 1
        assert run.empty_events == len(events) - len(profile) - len(alloc) - len(debug)
    if path.stem == "two_methods" or path.stem.startswith("numerics_"):
        assert debug_seen > 0  # recorded with a debug buffer: intermediate outputs were logged
