"""ETRecords and the partitioners' own reasons, recorded while an example is built, and made
portable and reproducible: no absolute machine path, no Python ``id()`` in the committed files."""

from __future__ import annotations

import contextlib
import json

from examples.common import sanitize_path_text


@contextlib.contextmanager
def captured_partition_rejections():
    """Record every (node, reason) a partitioner gives ``WhyNoPartitionReporter`` (Arm) or
    ``WhyNoPartition`` (XNNPACK's configs).

    The partitioners only log their reasons; they are not stored anywhere. Tests compare the
    reasons the adapter infers from the ``.pte`` with these, so they are captured here, the same
    way the reporter keeps them: the first reason per node and reporter.
    """
    from executorch.exir.backend.utils import WhyNoPartition, WhyNoPartitionReporter

    orig = WhyNoPartitionReporter.report_reject
    orig_why = WhyNoPartition.__call__
    records: list[dict] = []
    seen: set[tuple[int, str]] = set()

    def why(self, node, reason):
        report_reject(self, node, reason, forward=False)
        return orig_why(self, node, reason)

    def report_reject(self, node, reason, forward=True):
        key = (id(self), node.name)
        if node.op == "call_function" and key not in seen:
            seen.add(key)
            stack = node.meta.get("nn_module_stack") or {}
            last = list(stack.values())[-1] if stack else None
            records.append(
                {
                    "node": node.name,
                    "target": str(getattr(node.target, "_op", node.target)),
                    "debug_handle": node.meta.get("debug_handle"),
                    "module": last[0] if last else None,
                    "reason": reason,
                }
            )
        return orig(self, node, reason) if forward else None

    WhyNoPartitionReporter.report_reject = report_reject
    WhyNoPartition.__call__ = why
    try:
        yield records
    finally:
        WhyNoPartitionReporter.report_reject = orig
        WhyNoPartition.__call__ = orig_why


def stabilize_etrecord(etrecord) -> None:
    """Make an ETRecord portable and reproducible before it is saved.

    Its graphs carry ``stack_trace`` texts with absolute machine paths (rewritten as in
    ``sanitize_path_text``) and Python ``id()``s of graph objects (``export_graph_id`` and the
    ``graph_id`` of every ``from_node`` provenance entry), renumbered 0, 1, 2... in order of
    first appearance with one mapping, so the equalities Inspector relies on still hold.
    """
    import torch.fx

    graph_ids: dict[int, int] = {}

    def renumber(gid):
        if not isinstance(gid, int) or gid < 0:
            return gid
        return graph_ids.setdefault(gid, len(graph_ids))

    done: set[int] = set()

    def fix_source(src) -> None:
        if id(src) in done:
            return
        done.add(id(src))
        if getattr(src, "node_info", None) is not None:
            src.node_info.graph_id = renumber(src.node_info.graph_id)
        src._dict = None  # NodeSource caches its serialised form
        for parent in getattr(src, "from_node", None) or []:
            fix_source(parent)

    if etrecord.export_graph_id is not None:
        etrecord.export_graph_id = renumber(etrecord.export_graph_id)
    programs = [etrecord.exported_program]
    edge = etrecord.edge_dialect_program
    programs += list(edge.values()) if isinstance(edge, dict) else [edge]
    programs += list((etrecord.graph_map or {}).values())
    for ep in programs:
        if ep is None:
            continue
        for gm in ep.graph_module.modules():
            if not isinstance(gm, torch.fx.GraphModule):
                continue
            for node in gm.graph.nodes:
                if isinstance(node.meta.get("stack_trace"), str):
                    node.meta["stack_trace"] = sanitize_path_text(node.meta["stack_trace"])
                for src in node.meta.get("from_node") or []:
                    fix_source(src)


def compact_etrecord(path: str, keep_aten: bool = False) -> None:
    """Rewrite an ETRecord smaller and reproducible, keeping everything Inspector needs.

    ``ETRecord.save`` stores every part uncompressed with the current time as its zip date, and
    records the ATen ``exported_program`` (an optional part: Inspector then maps to the edge
    dialect program) beside the edge program, each with its own copy of the weights. For the
    committed examples the ATen program is dropped, the parts are deflated (parse_etrecord and
    the adapter read both) and dated 1980-01-01: 11.6 MB -> ~4 MB for mv2_lrn_ethosu85.
    """
    import zipfile

    with zipfile.ZipFile(path) as src:
        parts = [
            (i.filename, src.read(i))
            for i in src.infolist()
            if keep_aten or not i.filename.startswith("exported_program")
        ]
    with zipfile.ZipFile(path, "w") as dst:
        for name, data in parts:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(info, data, compresslevel=9)


def save_etrecord(
    prog, name: str, rejections: list[dict] | None = None, representative_inputs=None
) -> None:
    """``<name>.etrecord`` (ExecuTorch's own writer) and ``<name>.rejections.json``.

    With ``representative_inputs`` (a list of input tuples) the ETRecord also records them, which
    ``Inspector.calculate_numeric_gap`` runs its graph on, and keeps its ATen ``exported_program``
    (the graph the Inspector names its rows by: ``conv2d_1``)."""
    etrecord = prog.get_etrecord()
    if representative_inputs is not None:
        etrecord.update_representative_inputs(representative_inputs)
    stabilize_etrecord(etrecord)
    etrecord.save(f"{name}.etrecord")
    compact_etrecord(f"{name}.etrecord", keep_aten=representative_inputs is not None)
    if rejections is not None:
        from importlib.metadata import version

        doc = {
            "generator": "examples/etrecords.py (captured_partition_rejections: "
            "WhyNoPartitionReporter.report_reject, WhyNoPartition.__call__)",
            "executorch": version("executorch"),
            "rejections": rejections,
        }
        with open(f"{name}.rejections.json", "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


def save_arm_etrecord(edge, prog, path: str) -> None:
    """``<name>_etrecord.bin`` as aot_arm_compiler.py writes it (``generate_etrecord`` of a copy
    of the edge program and the ExecuTorch program), made portable and compacted first like the
    other examples' ETRecords (``stabilize_etrecord``, ``compact_etrecord``)."""
    import copy

    from executorch.devtools.etrecord._etrecord import ETRecord

    etrecord = ETRecord()  # the body of generate_etrecord, with a chance to stabilise it
    etrecord.add_exported_program(None)
    etrecord.add_edge_dialect_program(copy.deepcopy(edge))
    etrecord.add_executorch_program(prog)
    stabilize_etrecord(etrecord)
    _stabilize_lowered(etrecord)
    etrecord.save(path)
    compact_etrecord(path)


def _stabilize_lowered(etrecord) -> None:
    """The stack traces inside delegated submodules too: an edge program recorded after lowering
    (as generate_etrecord records it) serialises each LoweredBackendModule's original program,
    which ``stabilize_etrecord`` does not walk."""
    from executorch.exir.lowered_backend_module import LoweredBackendModule

    edge = etrecord.edge_dialect_program
    for ep in edge.values() if isinstance(edge, dict) else [edge]:
        for module in ep.graph_module.modules():
            if isinstance(module, LoweredBackendModule):
                for node in module.original_module.graph.nodes:
                    if isinstance(node.meta.get("stack_trace"), str):
                        node.meta["stack_trace"] = sanitize_path_text(node.meta["stack_trace"])


@contextlib.contextmanager
def sanitized_tosa_debug_info():
    """Patch the Arm debug schema so stack traces carry no absolute machine paths.

    The TOSA debug locations embed ``node.meta["stack_trace"]`` verbatim, including
    frames appended by the Arm passes themselves; real files therefore contain
    absolute paths of the build machine. We rewrite them to the forms described in
    ``sanitize_path_text`` so the committed example stays portable, and renumber
    the ``node_trace`` graph ids (memory addresses) so it is reproducible.
    """
    from executorch.backends.arm.debug import schema

    orig = schema.TorchDebugSchema.from_node
    graph_ids: dict[int, int] = {}

    def renumber(gid):
        # node_trace graph ids are Python id()s of graph objects: renumber them
        # in order of first appearance so the file is reproducible.
        if not isinstance(gid, int) or gid < 0:
            return gid
        return graph_ids.setdefault(gid, len(graph_ids))

    def from_node(node):
        info = orig(node)
        info.stack_trace = [sanitize_path_text(s) for s in info.stack_trace]
        if isinstance(info.node_trace, list):
            for entry in info.node_trace:
                entry["graph_id"] = renumber(entry.get("graph_id"))
                entry["parent_graph_id"] = renumber(entry.get("parent_graph_id"))
        return info

    schema.TorchDebugSchema.from_node = staticmethod(from_node)
    try:
        yield
    finally:
        schema.TorchDebugSchema.from_node = staticmethod(orig)


# --------------------------------------------------------------------------------------
# Examples: Ethos-U
# --------------------------------------------------------------------------------------
