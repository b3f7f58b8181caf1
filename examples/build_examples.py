#!/usr/bin/env python3
"""Build the example ExecuTorch ``.pte`` programs shown by the pte_adapter.

Every example is produced with the real toolchain (ExecuTorch 1.5.1, torch 2.13 CPU,
ethos-u-vela 5.2.0, tosa-tools) from randomly initialised, seeded models: no
weights are downloaded, and the same environment gives the same bytes.

Usage (from the repository root)::

    python examples/build_examples.py                       # all examples -> examples/
    python examples/build_examples.py --only cond two_methods
    python examples/build_examples.py --out /some/dir       # build elsewhere
    python examples/build_examples.py --list                # names + descriptions
    python examples/build_examples.py --verify-only         # re-inspect existing files

Large benchmark programs (NOT built by default, NEVER committed; ~5 min on 2 cores,
~4 GB peak RAM, 1.3 GB of output)::

    python examples/build_examples.py --large --out /tmp/pte_bench

This writes ``gpt_xnnpack_fp32.pte`` (a 12-layer, hidden-768, vocab-50257, 128-token
decoder-only transformer with an untied LM head, 163M fp32 parameters, ~650 MB;
XNNPACK delegated: LayerNorm, embedding and mask ops stay on the CPU, which gives
62 XnnpackBackend partitions and ~316 KernelCalls) and ``gpt_portable_fp32.pte``
(the same model undelegated, ~596 KernelCalls, ~650 MB in the constant segment).
Add ``--only gpt_xnnpack_fp32`` to build one of them. ``--large`` refuses to write
into this folder.

Each example is one function decorated with ``@example``. The build runs with the
current directory set to the output folder, and every path handed to the
toolchain is relative, so no absolute machine path (``/tmp``, ``/root``,
``/work``, ``/home``) ends up in the committed files; ``--check-paths`` (on by
default) greps the outputs and fails if one does.

After building, each ``.pte`` is re-read with
``executorch.exir._serialize._program.deserialize_pte_binary`` and the facts
(methods, instruction kinds, delegates per backend, operators, segments, named
data) are written to ``manifest.json`` and ``README.md`` in the output folder.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 20240611
HERE = os.path.dirname(os.path.abspath(__file__))
ABS_PATH_RE = re.compile(rb"/(tmp|root|work|home)/")

# --------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------


@dataclass
class Example:
    name: str
    kind: str
    description: str
    fn: Callable[[], dict]
    large: bool = False


EXAMPLES: dict[str, Example] = {}


def example(name: str, kind: str, description: str, large: bool = False):
    def deco(fn):
        EXAMPLES[name] = Example(name, kind, description, fn, large)
        return fn

    return deco


# --------------------------------------------------------------------------------------
# Models (plain torch.nn, random seeded weights)
# --------------------------------------------------------------------------------------


def _make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:  # do not go down by more than 10%
        new_v += divisor
    return new_v


class ConvBNReLU(nn.Sequential):
    """Conv2d + BatchNorm2d (+ ReLU6), torchvision's Conv2dNormActivation layout."""

    def __init__(self, cin, cout, kernel_size=3, stride=1, groups=1, act=True):
        padding = (kernel_size - 1) // 2
        layers = [
            nn.Conv2d(cin, cout, kernel_size, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ]
        if act:
            layers.append(nn.ReLU6(inplace=False))
        super().__init__(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand_ratio: int):
        super().__init__()
        hidden = round(cin * expand_ratio)
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(cin, hidden, kernel_size=1))  # pointwise expand
        layers += [
            ConvBNReLU(hidden, hidden, stride=stride, groups=hidden),  # depthwise
            ConvBNReLU(hidden, cout, kernel_size=1, act=False),  # pointwise linear
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al. 2018) in plain torch.nn.

    ``lrn_after`` inserts an ``nn.LocalResponseNorm`` after the given indices of the
    standard ``features`` list (0 = stem conv, 1..17 = inverted residual blocks,
    18 = last 1x1 conv). LRN is not supported by the Arm backends, so each one
    splits the delegated graph.
    """

    CFG: ClassVar[list[tuple[int, int, int, int]]] = [  # t, c, n, s
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]

    def __init__(self, width_mult: float = 1.0, num_classes: int = 1000, lrn_after=()):
        super().__init__()
        cin = _make_divisible(32 * width_mult)
        last = _make_divisible(1280 * max(1.0, width_mult))
        blocks: list[nn.Module] = [ConvBNReLU(3, cin, stride=2)]
        for t, c, n, s in self.CFG:
            cout = _make_divisible(c * width_mult)
            for i in range(n):
                blocks.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        blocks.append(ConvBNReLU(cin, last, kernel_size=1))
        feats: list[nn.Module] = []
        for i, b in enumerate(blocks):
            feats.append(b)
            if i in lrn_after:
                feats.append(nn.LocalResponseNorm(size=5, alpha=1e-4, beta=0.75, k=2.0))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))
        self._init_weights()

    def _init_weights(self):
        # torchvision's init, plus non-trivial BatchNorm statistics so that the
        # folded weights look like a trained network rather than an identity.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.normal_(m.bias, 0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 2.0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def mobilenet_v2(width: float = 1.0, lrn_after=(), seed: int = SEED) -> MobileNetV2:
    torch.manual_seed(seed)
    return MobileNetV2(width_mult=width, lrn_after=tuple(lrn_after)).eval().requires_grad_(False)


class SmallNet(nn.Module):
    """A tiny CNN with nested modules: conv/relu/pool, linear, residual add, softmax."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            ConvBNReLU(3, 8, stride=2),
            InvertedResidual(8, 8, 1, 2),
            ConvBNReLU(8, 16, stride=2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.ReLU())
        self.skip = nn.Linear(16 * 4 * 4, 32)
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        f = F.max_pool2d(self.features(x), 2)
        flat = torch.flatten(f, 1)
        h = self.head(f) + self.skip(flat)
        return torch.softmax(self.out(h), dim=-1)


def _seeded(fn, *args, seed=SEED, **kwargs):
    torch.manual_seed(seed)
    m = fn(*args, **kwargs)
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            nn.init.uniform_(mod.weight, 0.5, 1.5)
            nn.init.normal_(mod.bias, 0.0, 0.1)
            mod.running_mean.normal_(0.0, 0.1)
            mod.running_var.uniform_(0.5, 2.0)
    return m.eval().requires_grad_(False)


# --------------------------------------------------------------------------------------
# Lowering helpers
# --------------------------------------------------------------------------------------


def _inputs(shape, n=1, seed=SEED):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(*shape, generator=g),) for _ in range(n)]


def quantize_pt2e(model, example_inputs, quantizer, calib):
    """export -> unlifted module (no guards) -> prepare_pt2e -> calibrate -> convert -> export."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    ep = torch.export.export(model, example_inputs)
    # check_guards=False: otherwise a `_guards_fn` submodule is inserted that the
    # Arm passes reject.
    gm = ep.module(check_guards=False)
    prepared = prepare_pt2e(gm, quantizer)
    with torch.no_grad():
        for args in calib:
            prepared(*args)
    converted = convert_pt2e(prepared)
    return torch.export.export(converted, example_inputs)


def _write_pte(prog, name: str) -> str:
    with open(f"{name}.pte", "wb") as f:  # and its memory plan, while `_build_recording` records
        prog.write_to_file(f)
    _record_memory_plan(prog, name)
    return f"{name}.pte"


def _reset_outputs(*paths: str):
    for p in paths:
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)


def _list_files(d: str) -> list[str]:
    out = []
    for root, _, files in os.walk(d):
        for f in files:
            out.append(os.path.join(root, f))
    return sorted(out)


def arm_lower(
    model,
    example_inputs,
    spec,
    *,
    backend: str,
    extract_delegate_segments: bool,
    calib_n: int = 4,
    etrecord: str | None = None,
):
    """Quantize (INT8, per-channel symmetric) and lower to Ethos-U or TOSA.

    With ``etrecord`` (an example name) the ETRecord is written to ``<name>.etrecord`` and the
    partitioner's rejection reasons to ``<name>.rejections.json`` (see ``save_etrecord``).
    """
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        TOSAQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    if backend == "ethosu":
        from executorch.backends.arm.ethosu import EthosUPartitioner

        quantizer = EthosUQuantizer(spec)
        partitioner = EthosUPartitioner(spec)
    elif backend == "tosa":
        from executorch.backends.arm.tosa.partitioner import TOSAPartitioner

        quantizer = TOSAQuantizer(spec)
        partitioner = TOSAPartitioner(spec)
    else:
        raise ValueError(backend)
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    shape = tuple(example_inputs[0].shape)
    qep = quantize_pt2e(model, example_inputs, quantizer, _inputs(shape, calib_n))
    with captured_partition_rejections() as rejections:
        edge = to_edge_transform_and_lower(
            qep,
            partitioner=[partitioner],
            compile_config=EdgeCompileConfig(_check_ir_validity=False),
            generate_etrecord=etrecord is not None,
        )
    prog = edge.to_executorch(
        ExecutorchBackendConfig(extract_delegate_segments=extract_delegate_segments)
    )
    if etrecord is not None:
        save_etrecord(prog, etrecord, rejections)
    return prog


# --------------------------------------------------------------------------------------
# ETRecords and the partitioner's own rejection reasons
# --------------------------------------------------------------------------------------


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


def _stabilize_etrecord(etrecord) -> None:
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


def compact_etrecord(path: str) -> None:
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
            if not i.filename.startswith("exported_program")
        ]
    with zipfile.ZipFile(path, "w") as dst:
        for name, data in parts:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(info, data, compresslevel=9)


def save_etrecord(prog, name: str, rejections: list[dict] | None = None) -> None:
    """``<name>.etrecord`` (ExecuTorch's own writer) and ``<name>.rejections.json``."""
    etrecord = prog.get_etrecord()
    _stabilize_etrecord(etrecord)
    etrecord.save(f"{name}.etrecord")
    compact_etrecord(f"{name}.etrecord")
    if rejections is not None:
        from importlib.metadata import version

        doc = {
            "generator": "examples/build_examples.py (captured_partition_rejections: "
            "WhyNoPartitionReporter.report_reject, WhyNoPartition.__call__)",
            "executorch": version("executorch"),
            "rejections": rejections,
        }
        with open(f"{name}.rejections.json", "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


def ethosu_spec(target: str, artifacts: str | None, **kw):
    from executorch.backends.arm.ethosu import EthosUCompileSpec

    if target.startswith("ethos-u85"):
        kw.setdefault("system_config", "Ethos_U85_SYS_DRAM_Mid")
        kw.setdefault("memory_mode", "Shared_Sram")
    else:
        kw.setdefault("system_config", "Ethos_U55_High_End_Embedded")
        kw.setdefault("memory_mode", "Shared_Sram")
    spec = EthosUCompileSpec(target, **kw)
    if artifacts:
        # RELATIVE on purpose: it is recorded in the compile specs of the .pte.
        spec.dump_intermediate_artifacts_to(artifacts)
    return spec


def xnnpack_lower(
    model,
    example_inputs,
    *,
    quantize: bool,
    extract_delegate_segments: bool,
    external_tag: str | None = None,
    calib_n: int = 4,
    etrecord: str | None = None,
):
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
        XnnpackPartitioner,
    )
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

    if quantize:
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )

        q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
        shape = tuple(example_inputs[0].shape)
        ep = quantize_pt2e(model, example_inputs, q, _inputs(shape, calib_n))
    else:
        ep = torch.export.export(model, example_inputs)
    if external_tag is not None:
        # Tag every constant the delegate will consume; XNNPACK then puts them
        # in named data with this external tag -> <tag>.ptd.
        from executorch.exir.passes.external_constants_pass import (
            delegate_external_constants_pass_unlifted,
        )

        gm = ep.module(check_guards=False)
        delegate_external_constants_pass_unlifted(gm, lambda node: external_tag)
        ep = torch.export.export(gm, example_inputs)
    with captured_partition_rejections() as rejections:
        edge = to_edge_transform_and_lower(
            ep, partitioner=[XnnpackPartitioner()], generate_etrecord=etrecord is not None
        )
    prog = edge.to_executorch(
        ExecutorchBackendConfig(
            extract_delegate_segments=extract_delegate_segments,
            external_constants=(lambda n: external_tag) if external_tag else False,
        )
    )
    if etrecord is not None:
        save_etrecord(prog, etrecord, rejections)
    return prog


def portable_lower(programs, config_kwargs=None, edge_passes=None, etrecord=None):
    from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge

    edge = to_edge(
        programs, compile_config=EdgeCompileConfig(), generate_etrecord=etrecord is not None
    )
    prog = edge.to_executorch(ExecutorchBackendConfig(**(config_kwargs or {})))
    if etrecord is not None:
        save_etrecord(prog, etrecord)
    return prog


# --------------------------------------------------------------------------------------
# Stack-trace sanitising for TOSA debug info
# --------------------------------------------------------------------------------------

_SITE_RE = re.compile(r'(?:/[^"\s]*)?/(?:site|dist)-packages/')


def sanitize_path_text(text: str) -> str:
    """Make absolute source paths in a stack trace machine-independent.

    ``.../site-packages/torch/nn/...`` -> ``<site-packages>/torch/nn/...``, the
    repository root -> relative, the Python stdlib -> ``<python>/``.
    """
    text = _SITE_RE.sub("<site-packages>/", text)
    repo = os.path.dirname(HERE)
    text = text.replace(repo + os.sep, "")
    stdlib = os.path.dirname(os.__file__)
    text = text.replace(stdlib + os.sep, "<python>/")
    return text


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


def _ethosu_example(
    name,
    *,
    width,
    res,
    target,
    lrn_after=(),
    keep_artifacts,
    segments,
    ptd_tag=None,
    prune_artifacts=True,
    etrecord=False,
):
    from executorch.backends.arm.ethosu import VelaExternalBlockPlacements

    art = f"{name}_artifacts"
    _reset_outputs(
        f"{name}.pte",
        art,
        f"{ptd_tag}.ptd" if ptd_tag else "",
        f"{name}.etrecord",
        f"{name}.rejections.json",
    )
    kw = {}
    if ptd_tag:
        kw["external_block_placements"] = VelaExternalBlockPlacements(weight_data=ptd_tag)
    spec = ethosu_spec(target, art if keep_artifacts else None, **kw)
    model = mobilenet_v2(width, lrn_after)
    prog = arm_lower(
        model,
        (torch.randn(1, 3, res, res),),
        spec,
        backend="ethosu",
        extract_delegate_segments=segments,
        etrecord=name if etrecord else None,
    )
    files = [_write_pte(prog, name)]
    if etrecord:
        files += [f"{name}.etrecord", f"{name}.rejections.json"]
    if ptd_tag:
        prog.write_tensor_data_to_file(".")
        files.append(f"{ptd_tag}.ptd")
    sidecars = []
    if keep_artifacts:
        if prune_artifacts:
            # `out.tosa` duplicates the last partition's output_tag*.tosa and
            # `output/out_vela.npz` duplicates the delegate payload: both belong
            # to the LAST partition only; dropped to keep the examples small.
            _reset_outputs(os.path.join(art, "out.tosa"), os.path.join(art, "output"))
        sidecars = [art]
    return {
        "files": files,
        "sidecars": sidecars,
        "settings": {
            "model": "MobileNetV2",
            "width_mult": width,
            "input": [1, 3, res, res],
            "lrn_after_features": list(lrn_after),
            "target": target,
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-channel symmetric (EthosUQuantizer)",
            "extract_delegate_segments": segments,
            "external_weight_tag": ptd_tag,
        },
    }


@example(
    "mv2_ethosu85_full",
    "ethos-u",
    "MobileNetV2 1.0/224 INT8 fully delegated to Ethos-U85-256 (one EthosUBackend call); "
    "intermediate TOSA in mv2_ethosu85_full_artifacts/; payload inline.",
)
def build_mv2_ethosu85_full():
    return _ethosu_example(
        "mv2_ethosu85_full",
        width=1.0,
        res=224,
        target="ethos-u85-256",
        keep_artifacts=True,
        segments=False,
    )


@example(
    "mv2_lrn_ethosu85",
    "ethos-u",
    "MobileNetV2 1.0/224 with one LocalResponseNorm after features[3]: two Ethos-U85 "
    "partitions with aten::avg_pool3d (from the LRN decomposition, wrapped in "
    "dequantize/quantize) on the CPU between them; payloads in segments; per-partition "
    "TOSA in mv2_lrn_ethosu85_artifacts/ (output_tag0 is the LARGE second partition: "
    "tags are not delegate indices).",
)
def build_mv2_lrn_ethosu85():
    return _ethosu_example(
        "mv2_lrn_ethosu85",
        width=1.0,
        res=224,
        target="ethos-u85-256",
        lrn_after=(3,),
        keep_artifacts=True,
        segments=True,
        etrecord=True,
    )


@example(
    "mv2_lrn2_ethosu85",
    "ethos-u",
    "MobileNetV2 0.5/160 with two LocalResponseNorm layers (after features[3] and [10]): "
    "three Ethos-U85 partitions, CPU ops between; payloads inline.",
)
def build_mv2_lrn2_ethosu85():
    return _ethosu_example(
        "mv2_lrn2_ethosu85",
        width=0.5,
        res=160,
        target="ethos-u85-256",
        lrn_after=(3, 10),
        keep_artifacts=True,
        segments=False,
        etrecord=True,
    )


@example(
    "mv2_ethosu55",
    "ethos-u",
    "MobileNetV2 0.35/160 INT8 fully delegated to Ethos-U55-128 "
    "(Ethos_U55_High_End_Embedded, Shared_Sram); payload in a segment.",
)
def build_mv2_ethosu55():
    return _ethosu_example(
        "mv2_ethosu55",
        width=0.35,
        res=160,
        target="ethos-u55-128",
        keep_artifacts=True,
        segments=True,
    )


@example(
    "mv2_ethosu85_ptd",
    "ethos-u",
    "MobileNetV2 0.35/160 on Ethos-U85-256 with the Vela weight_data block stored "
    "externally (named data tagged 'mv2_u85_weights' -> mv2_u85_weights.ptd); "
    "the payload's weight_data block holds a sha256 key.",
)
def build_mv2_ethosu85_ptd():
    return _ethosu_example(
        "mv2_ethosu85_ptd",
        width=0.35,
        res=160,
        target="ethos-u85-256",
        keep_artifacts=True,
        segments=False,
        ptd_tag="mv2_u85_weights",
    )


# --------------------------------------------------------------------------------------
# Examples: TOSA backend
# --------------------------------------------------------------------------------------


@example(
    "mv2_tosa",
    "tosa",
    "MobileNetV2 0.35/128 INT8 lowered with the TOSA backend (TOSA-1.0+INT): the "
    "TOSABackend payload is a TOSA flatbuffer; the sidecar in mv2_tosa_artifacts/ is "
    "byte-identical to it.",
)
def build_mv2_tosa():
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

    name, art = "mv2_tosa", "mv2_tosa_artifacts"
    _reset_outputs(f"{name}.pte", art)
    spec = TosaCompileSpec("TOSA-1.0+INT")
    spec.dump_intermediate_artifacts_to(art)
    prog = arm_lower(
        mobilenet_v2(0.35),
        (torch.randn(1, 3, 128, 128),),
        spec,
        backend="tosa",
        extract_delegate_segments=True,
    )
    return {
        "files": [_write_pte(prog, name)],
        "sidecars": [art],
        "settings": {
            "model": "MobileNetV2",
            "width_mult": 0.35,
            "input": [1, 3, 128, 128],
            "tosa_spec": "TOSA-1.0+INT",
            "extract_delegate_segments": True,
        },
    }


@example(
    "tosa_debug",
    "tosa",
    "Small nested CNN (features/0..2, head, skip, out) lowered with the TOSA backend and "
    "DebugMode.TOSA: every TOSA operator carries a JSON location (aten node, nn_module_stack, "
    "stack trace with <site-packages>/ relative paths); sidecar in tosa_debug_artifacts/.",
)
def build_tosa_debug():
    from executorch.backends.arm.common.arm_compile_spec import ArmCompileSpec
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

    name, art = "tosa_debug", "tosa_debug_artifacts"
    _reset_outputs(f"{name}.pte", art)
    spec = TosaCompileSpec("TOSA-1.0+INT")
    spec.dump_intermediate_artifacts_to(art)
    spec.dump_debug_info(ArmCompileSpec.DebugMode.TOSA)
    with sanitized_tosa_debug_info():
        prog = arm_lower(
            _seeded(SmallNet),
            (torch.randn(1, 3, 32, 32),),
            spec,
            backend="tosa",
            extract_delegate_segments=False,
        )
    return {
        "files": [_write_pte(prog, name)],
        "sidecars": [art],
        "settings": {
            "model": "SmallNet",
            "input": [1, 3, 32, 32],
            "tosa_spec": "TOSA-1.0+INT",
            "debug_mode": "TOSA",
            "extract_delegate_segments": False,
            "note": "stack traces rewritten: site-packages -> <site-packages>/, "
            "repo root -> relative, stdlib -> <python>/; node_trace "
            "graph_id values (memory addresses) renumbered 0, 1, 2...",
        },
    }


# --------------------------------------------------------------------------------------
# Examples: XNNPACK
# --------------------------------------------------------------------------------------


@example(
    "mv2_xnnpack_fp32",
    "xnnpack",
    "MobileNetV2 0.35/224 fp32 on XNNPACK; delegate payload stored in a SEGMENT "
    "(extract_delegate_segments=True), weights in named data.",
)
def build_mv2_xnnpack_fp32():
    name = "mv2_xnnpack_fp32"
    _reset_outputs(f"{name}.pte")
    prog = xnnpack_lower(
        mobilenet_v2(0.35),
        (torch.randn(1, 3, 224, 224),),
        quantize=False,
        extract_delegate_segments=True,
    )
    return {
        "files": [_write_pte(prog, name)],
        "sidecars": [],
        "settings": {
            "model": "MobileNetV2",
            "width_mult": 0.35,
            "input": [1, 3, 224, 224],
            "dtype": "fp32",
            "extract_delegate_segments": True,
        },
    }


@example(
    "mv2_xnnpack_int8",
    "xnnpack",
    "MobileNetV2 0.5/224 INT8 (XNNPACKQuantizer, per-channel symmetric) on XNNPACK; "
    "delegate payload stored INLINE (extract_delegate_segments=False).",
)
def build_mv2_xnnpack_int8():
    name = "mv2_xnnpack_int8"
    _reset_outputs(f"{name}.pte")
    prog = xnnpack_lower(
        mobilenet_v2(0.5),
        (torch.randn(1, 3, 224, 224),),
        quantize=True,
        extract_delegate_segments=False,
    )
    return {
        "files": [_write_pte(prog, name)],
        "sidecars": [],
        "settings": {
            "model": "MobileNetV2",
            "width_mult": 0.5,
            "input": [1, 3, 224, 224],
            "dtype": "int8",
            "extract_delegate_segments": False,
        },
    }


@example(
    "xnnpack_ptd",
    "xnnpack",
    "Small nested CNN fp32 on XNNPACK with constants tagged 'xnnpack_weights' -> "
    "xnnpack_weights.ptd. Real-world mix: the linear weights (tagged parameters) go to the "
    ".ptd under sha256 keys, the BatchNorm-folded conv weights (new tensors made by "
    "XNNPACK's fusion, untagged) stay in the .pte's named data, and the unused "
    "num_batches_tracked buffers become EXTERNAL plan tensors keyed by their FQN in the .ptd.",
)
def build_xnnpack_ptd():
    name, tag = "xnnpack_ptd", "xnnpack_weights"
    _reset_outputs(f"{name}.pte", f"{tag}.ptd")
    prog = xnnpack_lower(
        _seeded(SmallNet),
        (torch.randn(1, 3, 32, 32),),
        quantize=False,
        extract_delegate_segments=True,
        external_tag=tag,
    )
    files = [_write_pte(prog, name)]
    prog.write_tensor_data_to_file(".")
    files.append(f"{tag}.ptd")
    return {
        "files": files,
        "sidecars": [],
        "settings": {
            "model": "SmallNet",
            "input": [1, 3, 32, 32],
            "dtype": "fp32",
            "external_tag": tag,
        },
    }


class SmallLrnNet(SmallNet):
    """SmallNet with a LocalResponseNorm after features[1]: XNNPACK has no kernel for parts of
    its decomposition, so the graph splits around them."""

    def __init__(self):
        super().__init__()
        self.features.insert(2, nn.LocalResponseNorm(size=3, alpha=1e-4, beta=0.75, k=2.0))


@example(
    "xnnpack_lrn",
    "xnnpack",
    "Small nested CNN fp32 on XNNPACK with a LocalResponseNorm (features.2): the LRN's "
    "decomposition splits the XNNPACK graph; ETRecord in xnnpack_lrn.etrecord and the "
    "XNNPACK partitioner's own reasons (WhyNoPartition) in xnnpack_lrn.rejections.json.",
)
def build_xnnpack_lrn():
    name = "xnnpack_lrn"
    _reset_outputs(f"{name}.pte", f"{name}.etrecord", f"{name}.rejections.json")
    prog = xnnpack_lower(
        _seeded(SmallLrnNet),
        (torch.randn(1, 3, 32, 32),),
        quantize=False,
        extract_delegate_segments=True,
        etrecord=name,
    )
    return {
        "files": [_write_pte(prog, name), f"{name}.etrecord", f"{name}.rejections.json"],
        "sidecars": [],
        "settings": {"model": "SmallLrnNet", "input": [1, 3, 32, 32], "dtype": "fp32"},
    }


@example(
    "tiny_gpt_xnnpack",
    "xnnpack",
    "The large benchmark's GPT-like decoder at toy size (4 layers, hidden 32, vocab 256, 16 "
    "tokens), fp32 on XNNPACK: the attention mask and layer norms stay on the CPU, so one method "
    "has dozens of partitions and CPU islands (the case the first screen folds into blocks); "
    "ETRecord in tiny_gpt_xnnpack.etrecord.",
)
def build_tiny_gpt_xnnpack():
    name = "tiny_gpt_xnnpack"
    _reset_outputs(f"{name}.pte", f"{name}.etrecord", f"{name}.rejections.json")
    torch.manual_seed(SEED)
    m = TinyGPT(vocab=256, d=32, layers=4, heads=2, ctx=16).eval()
    x = (torch.randint(0, 256, (1, 16)),)
    with torch.no_grad():
        prog = xnnpack_lower(m, x, quantize=False, extract_delegate_segments=True, etrecord=name)
    return {
        "files": [_write_pte(prog, name), f"{name}.etrecord", f"{name}.rejections.json"],
        "sidecars": [],
        "settings": {"layers": 4, "hidden": 32, "heads": 2, "vocab": 256, "seq": 16},
    }


# --------------------------------------------------------------------------------------
# Examples: portable (no delegate)
# --------------------------------------------------------------------------------------


@example(
    "undelegated",
    "portable",
    "Small nested CNN (convolution, batch norm, hardtanh/ReLU6, max_pool2d, addmm, add, "
    "softmax) with no delegate: portable KernelCalls only, constants in the constant segment; "
    "ETRecord in undelegated.etrecord.",
)
def build_undelegated():
    name = "undelegated"
    _reset_outputs(f"{name}.pte", f"{name}.etrecord")
    ep = torch.export.export(_seeded(SmallNet), (torch.randn(1, 3, 32, 32),))
    prog = portable_lower(ep, etrecord=name)
    return {
        "files": [_write_pte(prog, name), f"{name}.etrecord"],
        "sidecars": [],
        "settings": {"model": "SmallNet", "input": [1, 3, 32, 32]},
    }


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8))
        self.dec = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 16))

    def forward(self, x):
        return self.dec(self.enc(x))

    def encode(self, x):
        return self.enc(x)


class _Method(nn.Module):
    def __init__(self, m, method):
        super().__init__()
        self.m, self.method = m, method

    def forward(self, *args):
        return getattr(self.m, self.method)(*args)


@example(
    "two_methods",
    "portable",
    "One program with two methods: 'forward' (encoder+decoder MLP) and 'encode' "
    "(encoder only), built with to_edge({'forward': ep1, 'encode': ep2}); no delegate.",
)
def build_two_methods():
    name = "two_methods"
    _reset_outputs(f"{name}.pte")
    m = _seeded(TwoHeads)
    x = (torch.randn(2, 16),)
    ep1 = torch.export.export(m, x)
    ep2 = torch.export.export(_Method(m, "encode"), x)
    prog = portable_lower({"forward": ep1, "encode": ep2})
    return {
        "files": [_write_pte(prog, name)],
        "sidecars": [],
        "settings": {"methods": ["forward", "encode"], "input": [2, 16]},
    }


class CondModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        def true_fn(x):
            return torch.sin(self.lin(x)) + 1.0

        def false_fn(x):
            return torch.cos(x) * 2.0

        return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))


@example(
    "cond",
    "portable",
    "torch.cond program (two branch sub-graphs) lowered with plain to_edge: control flow "
    "as JumpFalseCall / MoveCall instructions (no FreeCall: see free_call).",
)
def build_cond():
    name = "cond"
    _reset_outputs(f"{name}.pte")
    ep = torch.export.export(_seeded(CondModel), (torch.randn(4, 8),))
    prog = portable_lower(ep)
    return {"files": [_write_pte(prog, name)], "sidecars": [], "settings": {"input": [4, 8]}}


class NonzeroCount(nn.Module):
    def forward(self, x):
        positions = torch.nonzero(x > 0)  # data-dependent (unbacked) row count
        return positions.sum(dim=1) * 2, x.relu()


def _unbound_planning_pass():
    """A MemoryPlanningPass that makes nonzero's output DYNAMIC_UNBOUND and frees it.

    The emitter turns ``memory.free`` nodes into FreeCall, and
    ``exir.memory_planning.insert_calls_to_free`` inserts them for DYNAMIC_UNBOUND
    tensors. In ExecuTorch 1.5.1 that path is unreachable from the normal flow:
    every data-dependent shape is classified DYNAMIC_BOUND (planned at its upper
    bound), and ``apply_algo`` collects specs with ``ignore_dynamic_unbound_tensor``
    left at True, so unbound specs never reach ``insert_calls_to_free``. This pass
    marks the nonzero spec unbound (so it is not planned), runs the normal planner,
    then calls ``insert_calls_to_free`` for the unbound specs itself. (Its
    ``graph_module.recompile()`` needs ``TensorSpec.__repr__`` to be valid Python,
    which it is not in 1.5.1 -- ``device=CPU:0`` -- see ``_valid_tensorspec_repr``.)
    """
    from executorch.exir.memory_planning import insert_calls_to_free
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.exir.schema import TensorShapeDynamism

    class UnboundNonzeroPlanning(MemoryPlanningPass):
        def run(self, graph_module, graph_signature=None):
            unbound = set()
            for n in graph_module.graph.nodes:
                if n.op == "call_function" and "nonzero" in str(n.target):
                    n.meta["spec"].shape_dynamism = TensorShapeDynamism.DYNAMIC_UNBOUND
                    unbound.add(n.meta["spec"])
            result = super().run(graph_module, graph_signature)  # sets lifetimes
            insert_calls_to_free(graph_module, unbound)
            return result

    return UnboundNonzeroPlanning()


@contextlib.contextmanager
def _valid_tensorspec_repr():
    """Quote the device in TensorSpec's repr so FX can compile graphs holding specs."""
    from executorch.exir.tensor import TensorSpec

    orig = TensorSpec.__repr__

    def rep(self):
        return re.sub(r"device=([^,)]*)", lambda m: f"device={m.group(1)!r}", orig(self))

    TensorSpec.__repr__ = rep
    try:
        yield
    finally:
        TensorSpec.__repr__ = orig


@example(
    "free_call",
    "portable",
    "nonzero() output marked DYNAMIC_UNBOUND (via a MemoryPlanningPass subclass): the tensor "
    "has no memory-planned allocation and is released by a FreeCall instruction.",
)
def build_free_call():
    name = "free_call"
    _reset_outputs(f"{name}.pte")
    ep = torch.export.export(NonzeroCount(), (torch.randn(4, 8),))
    with _valid_tensorspec_repr():
        prog = portable_lower(ep, config_kwargs={"memory_planning_pass": _unbound_planning_pass()})
    return {"files": [_write_pte(prog, name)], "sidecars": [], "settings": {"input": [4, 8]}}


class Accumulator(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.arange(32, dtype=torch.float32).reshape(4, 8) / 10)
        self.register_buffer("steps", torch.ones(1))
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        self.acc.add_(self.lin(x))
        self.steps.add_(1.0)
        return self.acc / self.steps


@example(
    "mutable_buffer",
    "portable",
    "Module with two registered buffers updated in place in forward (acc, steps): mutable "
    "tensors with their initial values in a mutable data segment "
    "(InitializedMutableBufferPass) and names emitted (emit_mutable_buffer_names).",
)
def build_mutable_buffer():
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass

    name = "mutable_buffer"
    _reset_outputs(f"{name}.pte")
    ep = torch.export.export(_seeded(Accumulator), (torch.randn(4, 8),))
    prog = portable_lower(
        ep,
        config_kwargs={
            "passes": [InitializedMutableBufferPass(["acc", "steps"])],
            "emit_mutable_buffer_names": True,
        },
    )
    return {
        "files": [_write_pte(prog, name)],
        "sidecars": [],
        "settings": {"input": [4, 8], "buffers": ["acc", "steps"]},
    }


# --------------------------------------------------------------------------------------
# Examples: Ethos-U with Arm's Cortex-M CPU fallback
# --------------------------------------------------------------------------------------


class ConvHead(nn.Module):
    """Two convolutions (for the NPU) and a Linear head (kept on the Cortex-M CPU)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.head = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.head(torch.flatten(x, 1))


def _not_linear_check():
    """An `additional_checks` entry for the Arm partitioner that keeps every Linear off the NPU."""
    from torch.fx.passes.operator_support import OperatorSupportBase

    class NotLinear(OperatorSupportBase):
        def is_node_supported(self, submodules, node) -> bool:
            name = str(getattr(node.target, "__name__", node.target))
            return not any(k in name for k in ("linear", "addmm"))

    return NotLinear()


@example(
    "convnet_cortex_m_ethosu85",
    "ethos-u",
    "Small conv net, INT8 with weights quantized per tensor, on Ethos-U85-256; its Linear "
    "head kept off the NPU (partitioner additional_checks) and lowered for Arm's Cortex-M "
    "CPU fallback (CortexMPassManager, Cortex-M55): "
    "cortex_m::quantized_linear and cortex_m:: quantize/dequantize kernels on the CPU; "
    "TOSA in convnet_cortex_m_ethosu85_artifacts/.",
)
def build_convnet_cortex_m_ethosu85():
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.backends.cortex_m.passes import CortexMPassManager
    from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    name, art = "convnet_cortex_m_ethosu85", "convnet_cortex_m_ethosu85_artifacts"
    _reset_outputs(f"{name}.pte", art)
    spec = ethosu_spec("ethos-u85-256", art)
    quantizer = EthosUQuantizer(spec)
    # Per tensor: the Cortex-M linear rewrite rejects per-channel weights.
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=False))
    example_inputs = (torch.randn(1, 3, 16, 16),)
    qep = quantize_pt2e(_seeded(ConvHead), example_inputs, quantizer, _inputs((1, 3, 16, 16), 4))
    partitioner = EthosUPartitioner(spec, additional_checks=[_not_linear_check()])
    edge = to_edge_transform_and_lower(
        qep, partitioner=[partitioner], compile_config=EdgeCompileConfig(_check_ir_validity=False)
    )
    # The pass manager first folds the CPU-side dq -> linear -> q into qparams on the linear, then
    # replaces the remaining quantize/dequantize with cortex_m:: kernels (its own
    # ReplaceQuantNodesPass) and the linear with cortex_m::quantized_linear. Running
    # ReplaceQuantNodesPass on its own first (edge.transform) would turn those q/dq into
    # cortex_m:: kernels before the fold, and the linear would stay aten::linear.
    target = CortexMTargetConfig(cpu=CortexM.M55)
    edge._edge_programs["forward"] = CortexMPassManager(
        edge.exported_program(), target_config=target
    ).transform()
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    files = [_write_pte(prog, name)]
    _reset_outputs(os.path.join(art, "out.tosa"), os.path.join(art, "output"))
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "model": "ConvHead",
            "input": [1, 3, 16, 16],
            "target": "ethos-u85-256",
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-tensor symmetric (EthosUQuantizer)",
            "cpu_fallback": "cortex_m (CortexMPassManager, Cortex-M55)",
            "kept_off_npu": "aten.linear (partitioner additional_checks)",
            "extract_delegate_segments": False,
        },
    }


class MemoryModeNet(nn.Module):
    """Three convolutions and a pooling: small, fully delegated, with enough feature maps that
    Vela's scratch, and with Dedicated_Sram its fast scratch, are more than a few bytes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(32, 32, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.pool(F.relu(self.conv3(x)))


def _memory_mode_example(name: str, target: str, system_config: str, memory_mode: str):
    art = f"{name}_artifacts"
    _reset_outputs(f"{name}.pte", art)
    spec = ethosu_spec(target, art, system_config=system_config, memory_mode=memory_mode)
    prog = arm_lower(
        _seeded(MemoryModeNet),
        (torch.randn(1, 3, 32, 32),),
        spec,
        backend="ethosu",
        extract_delegate_segments=True,
    )
    files = [_write_pte(prog, name)]
    _reset_outputs(os.path.join(art, "out.tosa"), os.path.join(art, "output"))
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "model": "MemoryModeNet",
            "input": [1, 3, 32, 32],
            "target": target,
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-channel symmetric (EthosUQuantizer)",
            "extract_delegate_segments": True,
        },
    }


@example(
    "convnet_dedicated_sram_ethosu85",
    "ethos-u",
    "Small conv net fully delegated to Ethos-U85-256 in the Dedicated_Sram_384KB memory mode "
    "(Ethos_U85_SYS_DRAM_Mid): weights and the scratch arena in DRAM, a 384 KiB fast scratch "
    "cache in SRAM; TOSA in convnet_dedicated_sram_ethosu85_artifacts/.",
)
def build_convnet_dedicated_sram_ethosu85():
    return _memory_mode_example(
        "convnet_dedicated_sram_ethosu85",
        "ethos-u85-256",
        "Ethos_U85_SYS_DRAM_Mid",
        "Dedicated_Sram_384KB",
    )


@example(
    "convnet_sram_only_ethosu55",
    "ethos-u",
    "Small conv net fully delegated to Ethos-U55-128 in the Sram_Only memory mode "
    "(Ethos_U55_High_End_Embedded): weights and scratch both in SRAM; TOSA in "
    "convnet_sram_only_ethosu55_artifacts/.",
)
def build_convnet_sram_only_ethosu55():
    return _memory_mode_example(
        "convnet_sram_only_ethosu55",
        "ethos-u55-128",
        "Ethos_U55_High_End_Embedded",
        "Sram_Only",
    )


class WideNet(nn.Module):
    """Two convolutions on a 256x256 image and a pooling: few weights, large feature maps, so
    the NPU's scratch (about 2 MiB) is far larger than the file."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return self.pool(F.relu(self.conv2(F.relu(self.conv1(x)))))


@example(
    "wide_scratch_ethosu55",
    "ethos-u",
    "Two convolutions on a 256x256 image, fully delegated to Ethos-U55-128 "
    "(Ethos_U55_High_End_Embedded, Shared_Sram): a small file whose NPU scratch (more than "
    "2 MiB) does not fit the Corstone-300's SRAM; TOSA in wide_scratch_ethosu55_artifacts/.",
)
def build_wide_scratch_ethosu55():
    name = "wide_scratch_ethosu55"
    art = f"{name}_artifacts"
    _reset_outputs(f"{name}.pte", art)
    spec = ethosu_spec("ethos-u55-128", art)
    prog = arm_lower(
        _seeded(WideNet),
        (torch.randn(1, 3, 256, 256),),
        spec,
        backend="ethosu",
        extract_delegate_segments=True,
    )
    files = [_write_pte(prog, name)]
    _reset_outputs(os.path.join(art, "out.tosa"), os.path.join(art, "output"))
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "model": "WideNet",
            "input": [1, 3, 256, 256],
            "target": "ethos-u55-128",
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-channel symmetric (EthosUQuantizer)",
            "extract_delegate_segments": True,
        },
    }


# --------------------------------------------------------------------------------------
# Examples: a BundledProgram as Arm's aot_arm_compiler.py --bundleio writes it
# --------------------------------------------------------------------------------------


class BundleNet(nn.Module):
    """Two convolutions, a pooling and a Linear: small enough to keep the bundle small."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


def save_arm_etrecord(edge, prog, path: str) -> None:
    """``<name>_etrecord.bin`` as aot_arm_compiler.py writes it (``generate_etrecord`` of a copy
    of the edge program and the ExecuTorch program), made portable and compacted first like the
    other examples' ETRecords (``_stabilize_etrecord``, ``compact_etrecord``)."""
    import copy

    from executorch.devtools.etrecord._etrecord import ETRecord

    etrecord = ETRecord()  # the body of generate_etrecord, with a chance to stabilise it
    etrecord.add_exported_program(None)
    etrecord.add_edge_dialect_program(copy.deepcopy(edge))
    etrecord.add_executorch_program(prog)
    _stabilize_etrecord(etrecord)
    _stabilize_lowered(etrecord)
    etrecord.save(path)
    compact_etrecord(path)


def _stabilize_lowered(etrecord) -> None:
    """The stack traces inside delegated submodules too: an edge program recorded after lowering
    (as generate_etrecord records it) serialises each LoweredBackendModule's original program,
    which ``_stabilize_etrecord`` does not walk."""
    from executorch.exir.lowered_backend_module import LoweredBackendModule

    edge = etrecord.edge_dialect_program
    for ep in edge.values() if isinstance(edge, dict) else [edge]:
        for module in ep.graph_module.modules():
            if isinstance(module, LoweredBackendModule):
                for node in module.original_module.graph.nodes:
                    if isinstance(node.meta.get("stack_trace"), str):
                        node.meta["stack_trace"] = sanitize_path_text(node.meta["stack_trace"])


@example(
    "bundle_ethosu55",
    "bundle",
    "BundledProgram (.bpte) as Arm's aot_arm_compiler.py --bundleio writes it for Corstone-300 "
    "(Cortex-M55 + Ethos-U55-128): a small INT8 conv net delegated to the Ethos-U55, the "
    "quantize/dequantize left on the CPU replaced by cortex_m:: kernels (ReplaceQuantNodesPass), "
    "one bundled test case per method (the example input, the quantized model's output); "
    "bundle_ethosu55_etrecord.bin is Arm's ETRecord name. bundle_ethosu55_as_pte.pte is the same "
    "bytes under a .pte name, as older examples saved bundles.",
)
def build_bundle_ethosu55():
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.backends.cortex_m.passes.replace_quant_nodes_pass import (
        ReplaceQuantNodesPass,
    )
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    name = "bundle_ethosu55"
    bpte, as_pte, etrecord = f"{name}.bpte", f"{name}_as_pte.pte", f"{name}_etrecord.bin"
    _reset_outputs(bpte, as_pte, etrecord)
    spec = ethosu_spec("ethos-u55-128", None)
    quantizer = EthosUQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    example_inputs = _inputs((1, 3, 16, 16))[0]
    qep = quantize_pt2e(_seeded(BundleNet), example_inputs, quantizer, [example_inputs])
    edge = to_edge_transform_and_lower(
        qep,
        partitioner=[EthosUPartitioner(spec)],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    edge = edge.transform([ReplaceQuantNodesPass()])  # _apply_replace_quant_nodes
    prog = edge.to_executorch(config=ExecutorchBackendConfig(extract_delegate_segments=False))
    # _save_bpte_program: per method, one case of the example input and the reference output of
    # the quantized model ("Realize the quantization impact on numerics").
    reference = qep.module(check_guards=False)
    suites = [
        MethodTestSuite(
            method_name=plan.name,
            test_cases=[
                MethodTestCase(inputs=example_inputs, expected_outputs=reference(*example_inputs))
            ],
        )
        for plan in prog.executorch_program.execution_plan
    ]
    data = serialize_from_bundled_program_to_flatbuffer(BundledProgram(prog, suites))
    for path in (bpte, as_pte):
        with open(path, "wb") as f:
            f.write(data)
    _record_memory_plan(prog, f"{name}_as_pte")  # the bundle's program is `prog`'s, byte for byte
    save_arm_etrecord(edge, prog, etrecord)
    return {
        "files": [bpte, as_pte, etrecord],
        "sidecars": [],
        "settings": {
            "model": "BundleNet",
            "input": [1, 3, 16, 16],
            "target": "ethos-u55-128",
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-channel symmetric (EthosUQuantizer)",
            "cpu_fallback": "cortex_m quantize/dequantize (ReplaceQuantNodesPass)",
            "bundled_test_cases": 1,
            "extract_delegate_segments": False,
        },
    }


def inspect_bundle(path: str) -> dict:
    """A bundle as ExecuTorch's own deserializer reads it: its test suites, and its program's facts
    (``inspect_pte`` of the program bytes)."""
    import tempfile

    from executorch.devtools.bundled_program.serialize import (
        deserialize_from_flatbuffer_to_bundled_program,
    )

    with open(path, "rb") as f:
        data = f.read()
    bundle = deserialize_from_flatbuffer_to_bundled_program(data)
    with tempfile.TemporaryDirectory() as td:
        inner = os.path.join(td, "program.pte")
        with open(inner, "wb") as f:
            f.write(bytes(bundle.program))
        facts = inspect_pte(inner)
    facts.update(
        size=len(data),
        file_identifier=data[4:8].decode("latin-1"),
        program_size=len(bundle.program),
        bundle_version=bundle.version,
        test_suites={s.method_name: len(s.test_cases) for s in bundle.method_test_suites},
    )
    return facts


# --------------------------------------------------------------------------------------
# Examples: the Cortex-M flow with its ETRecord and the partitioner's own report
# --------------------------------------------------------------------------------------


class Classifier(nn.Module):
    """Two convolutions (for the NPU) and a two-layer Linear classifier (for the Cortex-M CPU)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class ConvLrn(nn.Module):
    """A LocalResponseNorm between two convolutions: its avg_pool3d keeps it on the CPU."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.lrn = nn.LocalResponseNorm(size=3, alpha=1e-4, beta=0.75, k=2.0)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return self.conv2(self.lrn(F.relu(self.conv1(x))))


@contextlib.contextmanager
def arm_partition_report():
    """Let the Arm partitioner write its own report, as `aot_arm_compiler.py --debug
    --intermediates DIR` does: at INFO level it logs every rejected node and the reason into
    `partition_report.txt` in the compile spec's intermediates folder (a FileHandler it opens
    itself, closed here so the file is complete)."""
    import logging

    log = logging.getLogger("executorch.backends.arm.tosa.partitioner")
    level, handlers = log.level, list(log.handlers)
    log.setLevel(logging.INFO)
    try:
        yield
    finally:
        for h in [h for h in log.handlers if h not in handlers]:
            h.close()
            log.removeHandler(h)
        log.setLevel(level)


def _cortex_m_example(name, model, shape, *, checks, passes):
    """INT8 per tensor for Ethos-U85-256 with the ETRecord recorded before lowering (the edge
    program the Inspector joins), then Arm's CPU fallback: `passes` (callable on the edge
    manager) after lowering, `delegation_info.txt` written by Arm's compiler script."""
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.backends.arm.scripts.aot_arm_compiler import dump_delegation_info
    from executorch.exir import (
        EdgeCompileConfig,
        ExecutorchBackendConfig,
        to_edge_transform_and_lower,
    )

    art = f"{name}_artifacts"
    _reset_outputs(f"{name}.pte", art, f"{name}.etrecord", f"{name}.rejections.json")
    spec = ethosu_spec("ethos-u85-256", art)
    quantizer = EthosUQuantizer(spec)
    # Per tensor: the Cortex-M linear rewrite rejects per-channel weights.
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=False))
    example_inputs = (torch.randn(*shape),)
    qep = quantize_pt2e(_seeded(model), example_inputs, quantizer, _inputs(shape, 4))
    partitioner = EthosUPartitioner(spec, additional_checks=checks)
    with captured_partition_rejections() as rejections, arm_partition_report():
        edge = to_edge_transform_and_lower(
            qep,
            partitioner=[partitioner],
            compile_config=EdgeCompileConfig(_check_ir_validity=False),
            generate_etrecord=True,
        )
    edge = passes(edge)
    dump_delegation_info(edge, art)
    prog = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    files = [_write_pte(prog, name)]
    save_etrecord(prog, name, rejections)
    _reset_outputs(os.path.join(art, "out.tosa"), os.path.join(art, "output"))
    return [*files, f"{name}.etrecord", f"{name}.rejections.json"], art, spec


@example(
    "classifier_cortex_m_ethosu85",
    "ethos-u",
    "Small conv classifier, INT8 per tensor, on Ethos-U85-256; its two Linear layers kept off "
    "the NPU by a partitioner check (additional_checks) and lowered by CortexMPassManager "
    "(Cortex-M55) to cortex_m::quantized_linear; with its ETRecord (recorded before those "
    "passes) and the partitioner's partition_report.txt in classifier_cortex_m_ethosu85_artifacts/.",
)
def build_classifier_cortex_m_ethosu85():
    from executorch.backends.cortex_m.passes import CortexMPassManager
    from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig

    def cortex_m_passes(edge):
        target = CortexMTargetConfig(cpu=CortexM.M55)
        edge._edge_programs["forward"] = CortexMPassManager(
            edge.exported_program(), target_config=target
        ).transform()
        return edge

    name = "classifier_cortex_m_ethosu85"
    files, art, spec = _cortex_m_example(
        name, Classifier, (1, 3, 8, 8), checks=[_not_linear_check()], passes=cortex_m_passes
    )
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "model": "Classifier",
            "input": [1, 3, 8, 8],
            "target": "ethos-u85-256",
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-tensor symmetric (EthosUQuantizer)",
            "cpu_fallback": "cortex_m (CortexMPassManager, Cortex-M55)",
            "kept_off_npu": "aten.linear (partitioner additional_checks: NotLinear)",
            "etrecord": "generate_etrecord=True (edge program before partitioning and passes)",
            "extract_delegate_segments": False,
        },
    }


@example(
    "lrn_cortex_m_qdq_ethosu85",
    "ethos-u",
    "Conv, LocalResponseNorm, conv, INT8 per tensor, on Ethos-U85-256, lowered as "
    "aot_arm_compiler.py lowers for Ethos-U: ReplaceQuantNodesPass turns the CPU's "
    "quantize/dequantize into cortex_m:: kernels, the LRN's decomposition stays aten:: on the "
    "CPU; with its ETRecord and the partitioner's partition_report.txt.",
)
def build_lrn_cortex_m_qdq_ethosu85():
    from executorch.backends.cortex_m.passes import ReplaceQuantNodesPass

    name = "lrn_cortex_m_qdq_ethosu85"
    files, art, spec = _cortex_m_example(
        name,
        ConvLrn,
        (1, 3, 8, 8),
        checks=[],
        passes=lambda edge: edge.transform([ReplaceQuantNodesPass()]),
    )
    return {
        "files": files,
        "sidecars": [art],
        "settings": {
            "model": "ConvLrn",
            "input": [1, 3, 8, 8],
            "target": "ethos-u85-256",
            "compile_flags": spec.compiler_flags,
            "tosa_spec": str(spec.tosa_spec),
            "quantization": "INT8 per-tensor symmetric (EthosUQuantizer)",
            "cpu_fallback": "cortex_m (ReplaceQuantNodesPass, as aot_arm_compiler.py)",
            "etrecord": "generate_etrecord=True (edge program before partitioning and passes)",
            "extract_delegate_segments": False,
        },
    }


# --------------------------------------------------------------------------------------
# Large benchmark programs (not committed)
# --------------------------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_out = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=50257, d=768, layers=12, heads=12, ctx=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)  # untied: ~163M params, ~650 MB fp32

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


def _gpt(seq=128):
    torch.manual_seed(SEED)
    m = TinyGPT().eval()
    return m, (torch.randint(0, 50257, (1, seq)),)


@example(
    "gpt_xnnpack_fp32",
    "xnnpack",
    "LARGE benchmark: 12-layer/768/50257 GPT-like decoder, fp32, XNNPACK (~650 MB).",
    large=True,
)
def build_gpt_xnnpack_fp32():
    name = "gpt_xnnpack_fp32"
    _reset_outputs(f"{name}.pte")
    m, x = _gpt()
    with torch.no_grad():
        prog = xnnpack_lower(m, x, quantize=False, extract_delegate_segments=True)
    return {
        "files": [_write_pte(prog, name)],
        "sidecars": [],
        "settings": {"layers": 12, "hidden": 768, "vocab": 50257, "seq": 128},
    }


@example(
    "gpt_portable_fp32",
    "portable",
    "LARGE benchmark: the same GPT-like model undelegated (portable kernels).",
    large=True,
)
def build_gpt_portable_fp32():
    name = "gpt_portable_fp32"
    _reset_outputs(f"{name}.pte")
    m, x = _gpt()
    with torch.no_grad():
        prog = portable_lower(torch.export.export(m, x))
    return {
        "files": [_write_pte(prog, name)],
        "sidecars": [],
        "settings": {"layers": 12, "hidden": 768, "vocab": 50257, "seq": 128},
    }


def _layered_gpt(layers):
    """The GPT's shape with L blocks at d = 64 (issue 25's per-node speed programs)."""
    torch.manual_seed(SEED)
    m = TinyGPT(vocab=256, d=64, layers=layers, heads=4, ctx=32).eval()
    return m, (torch.randint(0, 256, (1, 32)),)


def _layered_example(layers, backend):
    name = f"gpt{layers}_d64_{backend}"

    @example(
        name,
        backend,
        f"LARGE benchmark: {layers}-layer, hidden-64 GPT-like decoder, fp32, {backend} "
        "(per-node speed: cost follows instructions).",
        large=True,
    )
    def build():
        _reset_outputs(f"{name}.pte")
        m, x = _layered_gpt(layers)
        with torch.no_grad():
            if backend == "xnnpack":
                prog = xnnpack_lower(m, x, quantize=False, extract_delegate_segments=True)
            else:
                prog = portable_lower(torch.export.export(m, x))
        return {
            "files": [_write_pte(prog, name)],
            "sidecars": [],
            "settings": {"layers": layers, "hidden": 64, "heads": 4, "vocab": 256, "seq": 32},
        }


for _layers in (48, 192):
    for _backend in ("portable", "xnnpack"):
        _layered_example(_layers, _backend)


# --------------------------------------------------------------------------------------
# Examples: LLM-shaped (an LLM export's constant methods)
# --------------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class KVAttention(nn.Module):
    """Attention over a KV cache (registered buffers updated in place at `input_pos`)."""

    def __init__(self, d, heads, max_seq):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.register_buffer("k_cache", torch.zeros(1, heads, max_seq, self.hd))
        self.register_buffer("v_cache", torch.zeros(1, heads, max_seq, self.hd))
        self.register_buffer("causal", torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool)))

    def forward(self, x, input_pos):
        b, t, d = x.shape
        q, k, v = (
            w(x).view(b, t, self.heads, self.hd).transpose(1, 2)
            for w in (self.wq, self.wk, self.wv)
        )
        self.k_cache[:, :, input_pos] = k
        self.v_cache[:, :, input_pos] = v
        mask = self.causal[input_pos].view(1, 1, t, -1)
        y = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, d))


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, max_seq):
        super().__init__()
        self.attention_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.attention = KVAttention(d, heads, max_seq)
        self.w1, self.w3 = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
        self.w2 = nn.Linear(2 * d, d, bias=False)

    def forward(self, x, input_pos):
        x = x + self.attention(self.attention_norm(x), input_pos)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class TinyLlama(nn.Module):
    """A Llama-shaped decoder (RMSNorm, KV-cache attention, SwiGLU) at toy size."""

    def __init__(self, vocab=128, d=32, layers=2, heads=2, max_seq=32):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, d)
        self.pos_embeddings = nn.Embedding(max_seq, d)
        self.layers = nn.ModuleList(LlamaBlock(d, heads, max_seq) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.output = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens, input_pos):
        x = self.tok_embeddings(tokens) + self.pos_embeddings(input_pos)
        for layer in self.layers:
            x = layer(x, input_pos)
        return self.output(self.norm(x))


def _llama_metadata(vocab: int, layers: int, max_seq: int) -> dict:
    """What ExecuTorch's llama export stores as constant methods (export_llama_lib's
    _load_llama_model_metadata, with bos/eos from --metadata), plus per-output quantization
    attributes as QNN's llama exports add them, a string, and small tensors."""
    stop = torch.zeros(vocab, dtype=torch.bool)
    stop[[2, 3]] = True
    return {
        "get_bos_id": 1,
        "get_eos_ids": [2, 3],
        "get_max_context_len": max_seq,
        "get_n_layers": layers,
        "get_vocab_size": vocab,
        "use_kv_cache": True,
        "use_sdpa_with_kv_cache": False,
        "enable_dynamic_shape": False,
        "get_logits_scale": 0.00068,
        "get_logits_zero_point": -3,
        "get_model_name": "tiny_llama",
        "get_kv_cache_scales": torch.tensor([[0.02, 0.015], [0.031, 0.027]]),
        "get_stop_token_mask": stop,
    }


@example(
    "tiny_llama_xnnpack",
    "xnnpack",
    "Llama-shaped decoder at toy size (2 layers, hidden 32, vocab 128, KV cache of 32) exported "
    "by ExecuTorch's LLM export (LLMEdgeManager, XNNPACK): 'forward' plus 14 constant methods "
    "without instructions (get_max_seq_len, get_eos_ids, use_kv_cache, get_logits_scale, ...: "
    "int, list, bool, float, string and small-tensor values), as LLM runners read them.",
)
def build_tiny_llama_xnnpack():
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.extension.llm.export.builder import LLMEdgeManager

    name = "tiny_llama_xnnpack"
    _reset_outputs(f"{name}.pte")
    vocab, layers, max_seq = 128, 2, 32
    torch.manual_seed(SEED)
    model = TinyLlama(vocab=vocab, layers=layers, max_seq=max_seq).eval()
    builder = LLMEdgeManager(
        model=model,
        modelname=name,
        max_seq_len=max_seq,  # LLMEdgeManager adds get_max_seq_len itself
        use_kv_cache=True,
        example_inputs=(torch.tensor([[1]]), torch.tensor([0])),
        metadata=_llama_metadata(vocab, layers, max_seq),
    )
    builder.export().to_edge_transform_and_lower([XnnpackPartitioner()]).to_executorch()
    return {
        "files": [_write_pte(builder.export_program, name)],
        "sidecars": [],
        "settings": {
            "layers": layers,
            "hidden": 32,
            "heads": 2,
            "vocab": vocab,
            "kv_cache": max_seq,
            "exporter": "executorch.extension.llm.export.builder.LLMEdgeManager",
        },
    }


# --------------------------------------------------------------------------------------
# Verification (re-read the files with ExecuTorch's own deserializer)
# --------------------------------------------------------------------------------------


def _enum_name(v):
    return getattr(v, "name", str(v))


def inspect_pte(path: str, deep: bool = True) -> dict:
    from executorch.exir._serialize._flatbuffer_program import _flatbuffer_to_program
    from executorch.exir._serialize._program import (
        _get_extended_header,
        deserialize_pte_binary,
    )

    with open(path, "rb") as f:
        data = f.read()
    facts: dict = {"size": len(data), "file_identifier": data[4:8].decode("latin-1")}
    eh = _get_extended_header(data)
    program_size = len(data)
    if eh is not None and eh.is_valid():
        program_size = eh.program_size
        facts["extended_header"] = {
            "program_size": eh.program_size,
            "segment_base_offset": eh.segment_base_offset,
        }
    else:
        facts["extended_header"] = None
    # Raw program: as stored (segments not folded back in) -> storage facts.
    raw = _flatbuffer_to_program(data[:program_size])
    facts["num_segments"] = len(raw.segments)
    facts["named_data_keys"] = len(raw.named_data or [])
    facts["constant_segment_tensors"] = (
        max(0, len(raw.constant_segment.offsets) - 1) if raw.constant_segment else 0
    )
    facts["mutable_data_segments"] = len(raw.mutable_data_segments or [])
    facts["backend_delegate_data_inline"] = len(raw.backend_delegate_data)

    pte = deserialize_pte_binary(data)
    prog = pte.program
    methods = []
    for raw_plan, plan in zip(raw.execution_plan, prog.execution_plan, strict=True):
        kinds = collections.Counter()
        calls = collections.Counter()
        for chain in plan.chains:
            for ins in chain.instructions:
                k = type(ins.instr_args).__name__
                kinds[k] += 1
                if k == "DelegateCall":
                    calls[plan.delegates[ins.instr_args.delegate_index].id] += 1
        delegates = []
        for d in raw_plan.delegates:
            specs = {cs.key: cs.value for cs in d.compile_specs}
            entry = {
                "id": d.id,
                "location": _enum_name(d.processed.location),
                "index": d.processed.index,
            }
            if "compile_flags" in specs:
                entry["compile_flags"] = bytes(specs["compile_flags"]).decode(errors="replace")
            if "debug_artifact_path" in specs:
                entry["debug_artifact_path"] = bytes(specs["debug_artifact_path"]).decode(
                    errors="replace"
                )
            delegates.append(entry)
        ext_tensors = 0
        for v in plan.values:
            t = v.val
            if (
                type(t).__name__ == "Tensor"
                and t.extra_tensor_info is not None
                and _enum_name(t.extra_tensor_info.location) == "EXTERNAL"
            ):
                ext_tensors += 1
        methods.append(
            {
                "name": plan.name,
                "num_values": len(plan.values),
                "num_chains": len(plan.chains),
                "num_inputs": len(plan.inputs),
                "num_outputs": len(plan.outputs),
                "instructions": dict(sorted(kinds.items())),
                "delegate_calls": dict(sorted(calls.items())),
                "delegates": delegates,
                "operators": [
                    f"{o.name}.{o.overload}" if o.overload else o.name for o in plan.operators
                ],
                "external_tensors": ext_tensors,
            }
        )
    facts["methods"] = methods
    if deep:
        facts["payloads"] = _inspect_payloads(data, raw, pte)
    return facts


def _inspect_payloads(data, raw, pte) -> list[dict]:
    """Peek into delegate payloads: Vela block list / TOSA version / XNNPACK header."""
    import struct

    out = []
    prog = pte.program
    for plan in prog.execution_plan:
        for di, d in enumerate(plan.delegates):
            ref = d.processed
            payload = bytes(prog.backend_delegate_data[ref.index].data)
            info = {
                "method": plan.name,
                "delegate_index": di,
                "id": d.id,
                "payload_size": len(payload),
                "sha256": hashlib.sha256(payload).hexdigest(),
            }
            if d.id == "EthosUBackend":
                blocks, off = [], 0
                while off + 32 <= len(payload):
                    nm, size, ext = struct.unpack_from("<16sIB", payload, off)
                    nm = nm.rstrip(b"\0").decode()
                    body = payload[off + 32 : off + 32 + size]
                    b = {"name": nm, "size": size, "external": bool(ext)}
                    if nm == "cmd_data" and not ext:
                        b["magic"] = body[:4].decode("latin-1")
                    if nm in ("inputs", "outputs"):
                        b["count"] = struct.unpack_from("<i", body, 0)[0]
                    blocks.append(b)
                    off += 32 + ((size + 15) // 16) * 16
                    if nm == "vela_end_stream":
                        break
                info["vela_blocks"] = blocks
            elif d.id == "TOSABackend":
                info["identifier"] = payload[4:8].decode("latin-1")
            elif d.id == "XnnpackBackend":
                info["header_magic"] = payload[4:8].decode("latin-1")
                fb_off = struct.unpack_from("<I", payload, 10)[0]
                info["flatbuffer_identifier"] = payload[fb_off + 4 : fb_off + 8].decode("latin-1")
            out.append(info)
    return out


def inspect_ptd(path: str) -> dict:
    from executorch.exir._serialize._cord import Cord
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

    with open(path, "rb") as f:
        data = f.read()
    payload = FlatTensorSerializer().deserialize(Cord(data))
    return {
        "size": len(data),
        "file_identifier": data[4:8].decode("latin-1"),
        "header_magic": data[8:12].decode("latin-1"),
        "named_data_keys": len(payload.named_data),
        "segments": len(payload.buffers),
    }


def inspect_tosa(path: str) -> dict:
    from tosa.TosaGraph import TosaGraph  # tosa-tools' generated reader

    with open(path, "rb") as f:
        data = f.read()
    g = TosaGraph.GetRootAs(data, 0)
    v = g.Version()
    ops, with_loc = 0, 0
    for r in range(g.RegionsLength()):
        reg = g.Regions(r)
        for b in range(reg.BlocksLength()):
            blk = reg.Blocks(b)
            for o in range(blk.OperatorsLength()):
                op = blk.Operators(o)
                ops += 1
                loc = op.Location()
                if loc is not None and loc.Text():
                    with_loc += 1
    return {
        "size": len(data),
        "identifier": data[4:8].decode("latin-1"),
        "version": f"{v._Major()}.{v._Minor()}.{v._Patch()}" + ("-draft" if v._Draft() else ""),
        "regions": g.RegionsLength(),
        "operators": ops,
        "operators_with_location": with_loc,
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def verify_example(name: str, result: dict, out: str) -> dict:
    facts: dict = {"pte": {}, "ptd": {}, "tosa": {}}
    for f in result["files"]:
        p = os.path.join(out, f)
        if f.endswith((".pte", ".bpte")) and _is_bundle(p):
            facts["pte"][f] = inspect_bundle(p)
        elif f.endswith(".pte"):
            facts["pte"][f] = inspect_pte(p, deep=os.path.getsize(p) < 200 * 2**20)
        elif f.endswith(".ptd"):
            facts["ptd"][f] = inspect_ptd(p)
    for s in result.get("sidecars", []):
        for p in _list_files(os.path.join(out, s)):
            if p.endswith(".tosa"):
                rel = os.path.relpath(p, out)
                facts["tosa"][rel] = inspect_tosa(p)
    # Cross-check: TOSABackend payload == sidecar (byte for byte).
    payload_hashes = {
        pl["sha256"]
        for pf in facts["pte"].values()
        for pl in pf.get("payloads", [])
        if pl["id"] == "TOSABackend"
    }
    if payload_hashes:
        facts["tosa_payload_matches_sidecar"] = all(
            h in {t["sha256"] for t in facts["tosa"].values()} for h in payload_hashes
        )
    return facts


def _is_bundle(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(8)[4:8] == b"BP08"


def print_facts(name: str, facts: dict):
    for f, pf in facts["pte"].items():
        print(
            f"  {f}: {pf['size']} bytes, id {pf['file_identifier']}, "
            f"segments={pf['num_segments']}, named_data={pf['named_data_keys']}, "
            f"inline_delegate_data={pf['backend_delegate_data_inline']}, "
            f"mutable_data_segments={pf['mutable_data_segments']}"
        )
        for m in pf["methods"]:
            print(
                f"    method {m['name']!r}: chains={m['num_chains']} values={m['num_values']} "
                f"in={m['num_inputs']} out={m['num_outputs']}"
            )
            print(f"      instructions: {m['instructions']}")
            print(f"      delegate calls: {m['delegate_calls']}")
            for d in m["delegates"]:
                print(f"      delegate {d['id']} ({d['location']}[{d['index']}])")
            print(f"      operators ({len(m['operators'])}): {', '.join(m['operators'])}")
            if m["external_tensors"]:
                print(f"      external tensors: {m['external_tensors']}")
        for pl in pf.get("payloads", []):
            extra = ""
            if "vela_blocks" in pl:
                extra = " blocks=" + ",".join(
                    b["name"] + ("(ext)" if b["external"] else "") for b in pl["vela_blocks"]
                )
            print(
                f"      payload {pl['method']}#{pl['delegate_index']} {pl['id']}: "
                f"{pl['payload_size']} bytes{extra}"
            )
    for f, pf in facts["ptd"].items():
        print(
            f"  {f}: {pf['size']} bytes, {pf['file_identifier']}/{pf['header_magic']}, "
            f"named_data={pf['named_data_keys']}"
        )
    for f, tf in facts["tosa"].items():
        print(
            f"  {f}: {tf['size']} bytes, TOSA {tf['version']}, ops={tf['operators']}, "
            f"with location={tf['operators_with_location']}"
        )
    if "tosa_payload_matches_sidecar" in facts:
        print(f"  TOSA payload == sidecar: {facts['tosa_payload_matches_sidecar']}")


def check_paths(out: str, paths: list[str]) -> list[str]:
    hits = []
    for rel in paths:
        full = os.path.join(out, rel)
        for p in _list_files(full) if os.path.isdir(full) else [full]:
            with open(p, "rb") as f:
                data = f.read()
            if p.endswith((".etrecord", "_etrecord.bin")):  # deflated zip: look inside it
                import zipfile

                with zipfile.ZipFile(p) as z:
                    data = b"".join(z.read(i) for i in z.infolist())
            if ABS_PATH_RE.search(data):
                hits.append(os.path.relpath(p, out))
    return hits


# --------------------------------------------------------------------------------------
# Manifest / README
# --------------------------------------------------------------------------------------


def _dir_size(out, rel):
    full = os.path.join(out, rel)
    if os.path.isdir(full):
        return sum(os.path.getsize(p) for p in _list_files(full))
    return os.path.getsize(full)


def _summary(entry: dict) -> dict:
    """Condensed facts for manifest.json."""
    s = {}
    for f, pf in entry["facts"]["pte"].items():
        s[f] = {
            "size": pf["size"],
            "segments": pf["num_segments"],
            "named_data_keys": pf["named_data_keys"],
            "mutable_data_segments": pf["mutable_data_segments"],
            "methods": {
                m["name"]: {
                    "instructions": m["instructions"],
                    "delegate_calls": m["delegate_calls"],
                    "delegate_storage": [d["location"] for d in m["delegates"]],
                    "num_operators": len(m["operators"]),
                    "operators": m["operators"],
                    "external_tensors": m["external_tensors"],
                }
                for m in pf["methods"]
            },
            "payloads": [
                {k: v for k, v in pl.items() if k != "sha256"} for pl in pf.get("payloads", [])
            ],
        }
        if "bundle_version" in pf:  # inspect_bundle
            s[f]["bundle"] = {k: pf[k] for k in ("bundle_version", "program_size", "test_suites")}
    for f, pf in entry["facts"]["ptd"].items():
        s[f] = pf
    if entry["facts"]["tosa"]:
        s["tosa_sidecars"] = {
            f: {k: v for k, v in t.items() if k != "sha256"}
            for f, t in entry["facts"]["tosa"].items()
        }
    if "tosa_payload_matches_sidecar" in entry["facts"]:
        s["tosa_payload_matches_sidecar"] = entry["facts"]["tosa_payload_matches_sidecar"]
    return s


def write_manifest(out: str, entries: dict):
    path = os.path.join(out, "manifest.json")
    old = {}
    if os.path.exists(path):
        with open(path) as f:
            old = {e["name"]: e for e in json.load(f).get("examples", [])}
    for name, e in entries.items():
        old[name] = {
            "name": name,
            "kind": e["kind"],
            "description": e["description"],
            "files": e["files"],
            "sidecars": e["sidecars"],
            "total_size": sum(_dir_size(out, p) for p in e["files"] + e["sidecars"]),
            "build_seconds": e["build_seconds"],
            "settings": e["settings"],
            "facts": _summary(e),
        }
    # Entries of other builders (build_whatif_pairs.py) are kept, after this script's own.
    order = [n for n in EXAMPLES if n in old] + [n for n in old if n not in EXAMPLES]
    doc = {
        "generator": "examples/build_examples.py",
        "toolchain": _toolchain(),
        "note": "Orientation only: tests derive numbers from the files, not from this manifest.",
        "examples": [old[n] for n in order],
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    return doc


def _toolchain():
    from importlib.metadata import version

    tc = {}
    for pkg in ("torch", "executorch", "ethos-u-vela", "tosa-tools", "torchao"):
        try:
            tc[pkg] = version(pkg)
        except Exception:
            tc[pkg] = None
    return tc


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


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
  process). `tosa_debug` embeds line numbers of `build_examples.py` in its stack traces, so
  editing the script above `SmallNet` changes those bytes. Build times ("build s") were
  measured on a shared, loaded 2-core machine.
- **FreeCall** is unreachable from the stock ExecuTorch 1.5.1 flow (data-dependent shapes are
  planned as DYNAMIC_BOUND and unbound specs are filtered out before `insert_calls_to_free`);
  `free_call.pte` forces it through a `MemoryPlanningPass` subclass. `cond.pte` therefore has
  JumpFalseCall and MoveCall but no FreeCall.
- **`mutable_buffer.pte`** contains the in-place `aten::copy_` operator with an empty overload
  name (not an `.out` variant) and a `mutable_data_segments` entry.
- **ETRecords** (`<stem>.etrecord`: `mv2_lrn_ethosu85`, `mv2_lrn2_ethosu85`, `xnnpack_lrn`,
  `undelegated`) are
  written with `generate_etrecord=True` and `get_etrecord().save()`, then compacted
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
  the `.pte` holds lifetimes. New code in this script goes below the models, so the source lines
  the ETRecords and `tosa_debug` record stay put.
- **`mv2_residual_cpu_ethosu85`** keeps every `aten.add` off the NPU with a partitioner
  `additional_checks` entry: MobileNetV2's ten residual adds then split it into 11 Ethos-U
  partitions and 12 CPU islands, the case where folding into blocks would hide the split.
- **What-if pairs** (`build_whatif_pairs.py`, listed in `whatif_pairs.json`): one network
  exported fragmented and fixed (a check removed, an operator replaced, a block quantized, another
  target), the truth a what-if is checked against. `mv2_residual_npu_ethosu85` is the fixed twin
  of `mv2_residual_cpu_ethosu85`; calibrated in float32, the two agree on every quantization
  parameter only when built on the same machine (the committed pair differs in the last bit of
  some activation scales).
"""


def write_readme(out: str, doc: dict):
    lines = [
        "# Example ExecuTorch programs",
        "",
        "Generated by `python examples/build_examples.py` (see its docstring) with "
        + ", ".join(f"{k} {v}" for k, v in doc["toolchain"].items() if v)
        + ".",
        "All models use random, seeded weights (rebuilding gives the same bytes); no absolute",
        "machine paths are stored. `manifest.json` holds the facts printed by the build's",
        "verification (files re-read with `deserialize_pte_binary`); it is for orientation",
        "only -- tests should derive numbers from the files.",
        "",
        "| example | kind | size | methods | delegate calls (storage) | instructions | build s |",
        "|---|---|---|---|---|---|---|",
    ]
    total = 0
    details = []
    for e in doc["examples"]:
        total += e["total_size"]
        pte_facts = [v for k, v in e["facts"].items() if k.endswith(".pte")]
        meths, calls, instrs = [], [], []
        for pf in pte_facts:
            constant = [n for n, m in pf["methods"].items() if not m["instructions"]]
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
            if constant:  # an LLM export's configuration methods: one row for all of them
                meths.append(f"+ {len(constant)} constant methods")
                calls.append("—")
                instrs.append("none")
        lines.append(
            f"| [`{e['name']}`](#{e['name']}) | {e['kind']} | {_human(e['total_size'])} | "
            f"{'<br>'.join(meths)} | {'<br>'.join(calls)} | {'<br>'.join(instrs)} | "
            f"{e['build_seconds']} |"
        )
        files = ", ".join(f"`{f}`" for f in e["files"] + [s + "/" for s in e["sidecars"]])
        settings = "; ".join(
            f"{k}={v}"
            for k, v in e["settings"].items()
            if v not in (None, [], {}) and k != "compile_flags"
        )
        details += [
            f"### {e['name']}",
            "",
            e["description"],
            "",
            f"- files: {files}",
            f"- settings: {settings}",
        ]
        for pf in pte_facts:
            constant = [n for n, m in pf["methods"].items() if not m["instructions"]]
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
    others = sorted(
        f
        for f in os.listdir(out)
        if f.endswith(".pte") and f not in {x for e in doc["examples"] for x in e["files"]}
    )
    lines += [
        "",
        f"Total size of these examples: {_human(total)} "
        "(plus this README, manifest.json and the build script).",
    ]
    if others:
        lines += [
            "",
            "Other programs in this folder, built by `build_vgf_example.py`, "
            "`build_vulkan_examples.py` and `build_coreml_examples.py`: "
            + ", ".join(f"`{o}`" for o in others)
            + ".",
        ]
    lines += [
        "",
        "Large benchmark programs (never committed): "
        "`python examples/build_examples.py --large --out DIR` with DIR outside the repository "
        "(see the script's docstring).",
        "",
        README_NOTES,
        "## Examples",
        "",
        *details,
    ]
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines))


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


# Everything below the models is added after them, so that the line numbers the committed
# ETRecords record for the models' source lines stay those of this file.


def _record_memory_plan(prog, name: str) -> None:
    """`<name>.memory.json`: ExecuTorch's own memory plan of the program (every planned tensor's
    lifetime, arena and offset, mapped onto instructions; `memory_plan.py`), written while
    `_build_recording` records. The oracle of the adapter's memory picture."""
    _memory_plan().write(prog, name)


def _memory_plan():
    sys.path.insert(0, HERE)
    import memory_plan  # beside this script

    return memory_plan


def _build_recording(ex: Example) -> dict:
    """Build one example, recording ExecuTorch's memory plan of each program it writes."""
    with _memory_plan().recording() as written:
        result = ex.fn()
    result["files"] = result["files"] + [f for f in written if f not in result["files"]]
    return result


def _not_add_check():
    """An `additional_checks` entry for the Arm partitioner that keeps every `aten.add` (the
    residual connections of MobileNetV2's inverted residual blocks) off the NPU."""
    from torch.fx.passes.operator_support import OperatorSupportBase

    class NotAdd(OperatorSupportBase):
        def is_node_supported(self, submodules, node) -> bool:
            # Edge ops are named "aten.add.Tensor", ATen ones "add.Tensor".
            name = str(getattr(node.target, "__name__", node.target)).removeprefix("aten.")
            return name.split(".")[0] not in ("add", "add_")

    return NotAdd()


@contextlib.contextmanager
def _ethosu_partitioner_checks(*checks):
    """Every EthosUPartitioner made inside also applies `checks` (`arm_lower` makes its own)."""
    from executorch.backends.arm.ethosu import EthosUPartitioner

    orig = EthosUPartitioner.__init__

    def init(self, compile_spec, additional_checks=None, **kw):
        orig(self, compile_spec, additional_checks=[*(additional_checks or []), *checks], **kw)

    EthosUPartitioner.__init__ = init
    try:
        yield
    finally:
        EthosUPartitioner.__init__ = orig


@example(
    "mv2_residual_cpu_ethosu85",
    "ethos-u",
    "MobileNetV2 0.35/96 on Ethos-U85-256 with every residual aten::add kept on the CPU "
    "(partitioner additional_checks): the ten adds split the network into 11 Ethos-U "
    "partitions and 12 CPU islands (10 of them one aten::add between dequantize/quantize "
    "glue); payloads inline; no TOSA kept.",
)
def build_mv2_residual_cpu_ethosu85():
    with _ethosu_partitioner_checks(_not_add_check()):
        out = _ethosu_example(
            "mv2_residual_cpu_ethosu85",
            width=0.35,
            res=96,
            target="ethos-u85-256",
            keep_artifacts=False,
            segments=False,
        )
    out["settings"]["kept_off_npu"] = "aten.add (partitioner additional_checks)"
    return out


def _build_in_subprocess(name: str, out: str) -> dict:
    """Build one example in a fresh interpreter with a fixed hash seed.

    Some generated names in the TOSA sidecars depend on set/dict iteration order and
    on what was lowered earlier in the same process; a fresh process with
    PYTHONHASHSEED=0 per example makes every file reproducible on its own.
    """
    import subprocess
    import tempfile

    env = dict(os.environ, PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as td:
        result_file = os.path.join(td, "result.json")
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--_worker",
            name,
            "--out",
            out,
            "--_result",
            result_file,
        ]
        rc = subprocess.call(cmd, env=env)
        if rc != 0:
            raise RuntimeError(f"worker for {name} exited with status {rc}")
        with open(result_file) as f:
            return json.load(f)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="build only these examples")
    ap.add_argument("--out", default=HERE, help="output folder (default: this folder)")
    ap.add_argument(
        "--large",
        action="store_true",
        help="build the large benchmark programs instead (never commit them)",
    )
    ap.add_argument("--list", action="store_true", help="list examples and exit")
    ap.add_argument(
        "--verify-only",
        action="store_true",
        help="do not build; re-inspect existing outputs listed in manifest.json",
    )
    ap.add_argument(
        "--no-check-paths", action="store_true", help="skip the absolute-path grep of the outputs"
    )
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="build in this process instead of one fresh process per example "
        "(faster to debug; bytes may then depend on what was built before)",
    )
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._worker:  # child process: build one example, report its result as JSON
        os.chdir(os.path.abspath(args.out))
        torch.manual_seed(SEED)
        t0 = time.time()
        result = _build_recording(EXAMPLES[args._worker])
        result["build_seconds"] = round(time.time() - t0, 1)
        with open(args._result, "w") as f:
            json.dump(result, f)
        return 0

    if args.list:
        for e in EXAMPLES.values():
            print(f"{e.name:22s} {'[large] ' if e.large else ''}{e.description}")
        return 0

    names = args.only or [n for n, e in EXAMPLES.items() if e.large == args.large]
    unknown = [n for n in names if n not in EXAMPLES]
    if unknown:
        ap.error(f"unknown example(s): {unknown}; see --list")

    out = os.path.abspath(args.out)
    if any(EXAMPLES[n].large for n in names) and out == os.path.abspath(HERE):
        ap.error(
            "large benchmark programs must not go into the committed examples "
            "folder; pass --out DIR"
        )
    os.makedirs(out, exist_ok=True)
    import logging

    logging.basicConfig(level=logging.WARNING)

    entries, failures = {}, {}
    t_all = time.time()
    cwd = os.getcwd()
    for name in names:
        ex = EXAMPLES[name]
        print(f"=== {name}: {ex.description}", flush=True)
        os.chdir(out)  # every toolchain path below is relative to the output folder
        t0 = time.time()
        try:
            if args.verify_only:
                prev = {}
                if os.path.exists("manifest.json"):
                    with open("manifest.json") as f:
                        prev = {e["name"]: e for e in json.load(f)["examples"]}
                if name in prev:
                    result = {k: prev[name][k] for k in ("files", "sidecars", "settings")}
                    build_s = prev[name]["build_seconds"]
                else:  # not recorded yet: guess the usual file names
                    result = {
                        "files": [f"{name}.pte"],
                        "settings": {},
                        "sidecars": [d for d in (f"{name}_artifacts",) if os.path.isdir(d)],
                    }
                    build_s = None
            elif args.in_process:
                torch.manual_seed(SEED)
                result = _build_recording(ex)
                build_s = round(time.time() - t0, 1)
            else:
                result = _build_in_subprocess(name, out)
                build_s = result.pop("build_seconds")
        except Exception as exc:
            traceback.print_exc()
            failures[name] = f"{type(exc).__name__}: {exc}"
            continue
        finally:
            os.chdir(cwd)
        try:
            facts = verify_example(name, result, out)
        except Exception as exc:
            traceback.print_exc()
            failures[name] = f"verification failed: {type(exc).__name__}: {exc}"
            continue
        print(f"  built in {build_s} s")
        print_facts(name, facts)
        if not args.no_check_paths:
            hits = check_paths(out, result["files"] + result["sidecars"])
            if hits:
                failures[name] = f"absolute machine path found in {hits}"
                print(f"  !! absolute path in {hits}")
        entries[name] = {
            **result,
            "kind": ex.kind,
            "description": ex.description,
            "build_seconds": build_s,
            "facts": facts,
        }

    if entries and not args.large:
        doc = write_manifest(out, entries)
        write_readme(out, doc)
    print(f"total time {time.time() - t_all:.1f} s")
    for n, msg in failures.items():
        print(f"FAILED {n}: {msg}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
