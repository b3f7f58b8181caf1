"""README.md of the examples folder: a table of every example from manifest.json, the notes
found while building, and one section per example."""

from __future__ import annotations

import os

from examples.manifest import human_size

README_NOTES = """\
## Notes (facts found while building)

- **Partition tags are not delegate indices.** In `mv2_lrn_ethosu85_artifacts/`,
  `output_tag0_*.tosa` is the large *second* partition (delegate 1) and `output_tag1_*.tosa`
  the small first one. Match sidecars to delegates by I/O shapes, not by file order.
- **Only `output_tag*_*.tosa` sidecars are kept** for Ethos-U. The toolchain also writes
  `out.tosa` (a copy of the last partition compiled) and `output/out_vela.npz` (Vela's output,
  same content as the payload); the script deletes those two to save space.
- **TOSA debug locations**: with `DebugMode.TOSA` every operator lowered from an FX node has a
  JSON `location.text`; operators created by helpers (`CONST`, `CONST_SHAPE`) have none. The
  stack traces of real files contain absolute paths of the build machine; here they are
  rewritten (`<site-packages>/...`, repository-relative paths) and the `node_trace` graph ids
  (Python object addresses) renumbered, so the example is portable and reproducible.
- **Reproducibility**: each example is built in a fresh process with `PYTHONHASHSEED=0`
  (generated TOSA tensor names otherwise depend on what was lowered earlier in the same
  process). Build times ("build s") were measured on a shared, loaded 2-core machine.
- **Source lines point into `models/`.** The stack traces in the ETRecords and in
  `tosa_debug`'s TOSA debug info record the file and line of each model's `forward`
  (`examples/models/mobilenet.py:NNN`, shown by Model Explorer as a node's source line). The
  networks live in `models/` (one module per family), the builders in `builders/` and the
  drivers (`build_*.py`), so a builder, a lowering helper or a driver can change without
  touching a committed file; a model's file changes only when the model does, and then its
  examples must be rebuilt anyway: those whose ETRecord (unzipped) or TOSA debug info names the
  file. Before this split the traces pointed into `build_examples.py` itself, and several
  committed ETRecords recorded lines the script had long since moved.
- **Another machine, other last bits.** A rebuild reproduces the structure and the integer
  weights, not always float32 calibration's last bit (activation scales, hence requantization
  multipliers and biases). When the traces moved to `models/`, the rebuilt `mv2_lrn_ethosu85`,
  `mv2_lrn2_ethosu85` and `classifier_cortex_m_ethosu85` differed from the committed programs in
  that way only: their `.pte`, sidecars and memory plans were kept, their ETRecords and
  `rejections.json` replaced (graph, debug handles and delegate map identical; the float scales,
  and with them the ETRecord's copy of the payloads, differ). `tosa_debug` holds its traces in
  the program itself and was replaced whole (a few TOSA rescale multipliers moved with it).
- **FreeCall** is unreachable from the stock ExecuTorch 1.5.1 flow (data-dependent shapes are
  planned as DYNAMIC_BOUND and unbound specs are filtered out before `insert_calls_to_free`);
  `free_call.pte` forces it through a `MemoryPlanningPass` subclass. `cond.pte` therefore has
  JumpFalseCall and MoveCall but no FreeCall.
- **`mutable_buffer.pte`** contains the in-place `aten::copy_` operator with an empty overload
  name (not an `.out` variant) and a `mutable_data_segments` entry.
- **ETRecords** (`<stem>.etrecord`: `mv2_lrn_ethosu85`, `mv2_lrn2_ethosu85`, `xnnpack_lrn`,
  `undelegated`, ...) are written with `generate_etrecord=True` and `get_etrecord().save()`, then compacted
  (`compact_etrecord`: the optional ATen `exported_program` dropped, parts deflated, zip dates
  fixed) and made portable (stack-trace paths rewritten, `id()`-based graph ids renumbered).
  `<stem>.rejections.json` holds what the Arm partitioner told its `WhyNoPartitionReporter`
  (or XNNPACK's configs their `WhyNoPartition`) during the build (node, target, debug handle,
  module, reason): the partitioners only log it. XNNPACK gives no reason for an operator it has
  no config for (`aten.avg_pool3d` in `xnnpack_lrn`), only for configs whose constraints fail
  (`aten.pow.Tensor_Scalar`: "only support int powers, got 0.75").
- **`xnnpack_ptd`** mixes storage: weights XNNPACK creates itself (BatchNorm folding) ignore the
  external tag and stay in the `.pte`; unused `num_batches_tracked` buffers are EXTERNAL
  tensors in the plan.
- **The before/after pair for `pte-adapter diff`**: `mv2_lrn_ethosu85` (with one
  LocalResponseNorm after `features[3]`) and `mv2_ethosu85_full` (without it) are the same
  MobileNetV2 1.0/224: `mobilenet_v2()` seeds torch right before building the model,
  `nn.LocalResponseNorm` has no parameters and draws no random numbers, so every weight (and the
  example input drawn after the model) is the same; `tests/oracle/test_diff.py` checks that every
  INT8 convolution weight of the full export's TOSA is byte-identical in the LRN export's TOSA.
  Activation scales after the LRN differ (calibration sees different activations), and the two
  store their payloads differently (`mv2_lrn_ethosu85` in segments, `mv2_ethosu85_full`
  inline), which shows in `pte-adapter size`, not in the partitioning.
- **`<stem>.memory.json`** is ExecuTorch's own memory plan of the program, recorded while it is
  built (`memory_plan.py`): each planned tensor spec's value, arena, offset, size and lifetime
  (the planner's first and last graph node, mapped onto the instructions the emitter wrote for
  them). The oracle of the adapter's memory picture (`tests/oracle/test_memory.py`); nothing in
  the `.pte` holds lifetimes.
- **`mv2_residual_cpu_ethosu85`** keeps every `aten.add` off the NPU with a partitioner
  `additional_checks` entry: MobileNetV2's ten residual adds then split it into 11 Ethos-U
  partitions and 12 CPU islands, the case where folding into blocks would hide the split.
- **`emulated/` holds an emulated run, not a measurement** (`build_emulated.py`): the committed
  `mv2_lrn_ethosu85.pte` stepped through on one fixed input, each Ethos-U call computed by the
  TOSA reference model on its partition's `.tosa`, quantize/dequantize by ExecuTorch's own
  kernels in the pip runtime, `aten::avg_pool3d` by torch; written as ExecuTorch's runtime writes
  an ETDump and debug buffer, its run named `emulated: ...`, with no profile events. ExecuTorch
  1.5.1 has **no kernel for `aten::avg_pool3d.out`** (LocalResponseNorm's decomposition) in any
  kernel library: the pip runtime refuses `xnnpack_lrn.pte` ("Missing operator"), and the LRN
  programs here would need a custom kernel on a board. The float reference
  (`emulated/float_reference/`, ~115 MB, git-ignored) rewrites that one operator as an
  `avg_pool2d` over a view before lowering. See `docs/numerics.md` (the Ethos-U path, emulated).
- **What-if pairs** (`build_whatif_pairs.py`, listed in `whatif_pairs.json`): one network
  exported fragmented and fixed (a check removed, an operator replaced, a block quantized, another
  target), the truth a what-if is checked against. `mv2_residual_npu_ethosu85` is the fixed twin
  of `mv2_residual_cpu_ethosu85`; calibrated in float32, the two agree on every quantization
  parameter only when built on the same machine (the committed pair differs in the last bit of
  some activation scales).
- **Numeric-gap examples** (`builders/numerics.py`, `numerics_*`): each program is run once by the
  pip runtime with a debug buffer (`<stem>.etdp`, `<stem>.debug_buffer.bin`) on the input its
  ETRecord records as representative (`update_representative_inputs`; the ETRecord keeps its ATen
  graph, whose names the Inspector gives its rows). The runtime writes its whole debug buffer,
  used or not: a first run in a 1 MiB buffer measures what one run logs, the recorded run gets a
  buffer of that size. Quantized programs run with `import executorch.kernels.quantized` (the
  pip runtime registers the quantize kernels only then), and LocalResponseNorm cannot run there
  (`aten.avg_pool3d` is not among its kernels), so the CPU island of `numerics_island_*` is a
  fractional power instead.
"""


def write_readme(out: str, doc: dict):
    """README.md in ``out`` from the manifest ``doc`` (``write_manifest``'s result)."""
    lines = [
        "# Example ExecuTorch programs",
        "",
        "Generated by `python -m examples.build_examples` (from the repository root; see its "
        "docstring) with " + ", ".join(f"{k} {v}" for k, v in doc["toolchain"].items() if v) + ".",
        "All models use random, seeded weights (rebuilding gives the same bytes); no absolute",
        "machine paths are stored. `manifest.json` holds the facts printed by the build's",
        "verification (files re-read with `deserialize_pte_binary`); it is for orientation",
        "only -- tests should derive numbers from the files.",
        "",
        "| example | kind | size | methods | delegate calls (storage) | instructions | build s |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [_table_row(e) for e in doc["examples"]]
    total = sum(e["total_size"] for e in doc["examples"])
    lines += [
        "",
        f"Total size of these examples: {human_size(total)} "
        "(plus this README, manifest.json and the build scripts).",
    ]
    listed = {x for e in doc["examples"] for x in e["files"]}
    others = sorted(f for f in os.listdir(out) if f.endswith(".pte") and f not in listed)
    if others:
        lines += [
            "",
            "Programs in this folder that manifest.json does not list (no builder wrote "
            "them; rebuild or remove): " + ", ".join(f"`{o}`" for o in others) + ".",
        ]
    runtimes = os.path.join(out, "runtimes")
    if os.path.isdir(runtimes):
        lines += [
            "",
            "Runtime operator lists in `runtimes/`, written with ExecuTorch's own tools by "
            "`build_runtime_lists.py` (what `pte-adapter ops --runtime-ops` is checked against): "
            + ", ".join(f"`{f}`" for f in sorted(os.listdir(runtimes)))
            + ".",
        ]
    lines += [
        "",
        "Large benchmark programs (never committed): "
        "`python -m examples.build_examples --large --out DIR` with DIR outside the repository "
        "(see the script's docstring).",
        "",
        README_NOTES,
        "## Examples",
        "",
    ]
    for e in doc["examples"]:
        lines += _details(e)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines))


def _pte_facts(e: dict) -> list[dict]:
    return [v for k, v in e["facts"].items() if k.endswith(".pte")]


def _constant_methods(pf: dict) -> list[str]:
    """An LLM export's configuration methods: no instructions."""
    return [n for n, m in pf["methods"].items() if not m["instructions"]]


def _table_row(e: dict) -> str:
    meths, calls, instrs = [], [], []
    for pf in _pte_facts(e):
        constant = _constant_methods(pf)
        for mname, m in pf["methods"].items():
            if mname in constant:
                continue
            meths.append(mname)
            storage = ",".join(sorted(set(m["delegate_storage"])))
            calls.append(
                (
                    ", ".join(f"{k} ×{v}" for k, v in m["delegate_calls"].items())
                    + (f" ({storage})" if storage else "")
                )
                or "—"
            )
            instrs.append(", ".join(f"{k} {v}" for k, v in m["instructions"].items()))
        if constant:  # one row for all of them
            meths.append(f"+ {len(constant)} constant methods")
            calls.append("—")
            instrs.append("none")
    for f, facts in e["facts"].get("etdump", {}).items():  # a run of another example's program
        meths.append(f"({e['settings'].get('program', f)})")
        calls.append("—")
        instrs.append(f"{facts['debug_events']} debug events")
    return (
        f"| [`{e['name']}`](#{e['name']}) | {e['kind']} | {human_size(e['total_size'])} | "
        f"{'<br>'.join(meths)} | {'<br>'.join(calls)} | {'<br>'.join(instrs)} | "
        f"{e['build_seconds']} |"
    )


def _details(e: dict) -> list[str]:
    files = ", ".join(f"`{f}`" for f in e["files"] + [s + "/" for s in e["sidecars"]])
    settings = "; ".join(
        f"{k}={v}"
        for k, v in e["settings"].items()
        if v not in (None, [], {}) and k != "compile_flags"
    )
    details = [
        f"### {e['name']}",
        "",
        e["description"],
        "",
        f"- files: {files}",
        f"- settings: {settings}",
    ]
    for pf in _pte_facts(e):
        constant = _constant_methods(pf)
        for mname, m in pf["methods"].items():
            if mname not in constant:
                details.append(
                    f"- `{mname}` operators: "
                    + (", ".join(f"`{o}`" for o in m["operators"]) or "none")
                )
        if constant:
            names = ", ".join(f"`{n}`" for n in constant)
            details.append(f"- constant methods (no instructions): {names}")
    details.append("")
    return details
