"""Map TOSA operators back to the PyTorch code that produced them.

The Arm backend can record, per TOSA operator, the FX node it was lowered from
(`ArmCompileSpec.DebugMode`):

- `TOSA` mode puts a JSON object in the operator's `location.text`;
- `JSON` mode writes a list of the same objects to `debug.json` in the artifact folder, each with
  a `tosa_info` naming the operator by its first output tensor and its operator number. The file
  is overwritten by every partition, so an entry is only used for an operator whose first output
  and operator number both agree.

Each object has `aten_info{node_name, operator_name}` and `torch_info{stack_trace,
nn_module_stack, torch_fn, node_trace}`. The module stack maps module keys to
`[qualified path, module type]` from the root module down; the deepest path ("features.3.conv.0")
becomes the operator's namespace ("features/3/conv/0"), so the TOSA graph folds like the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pte_adapter.container import files
from pte_adapter.errors import PteFormatError

# A frame line of a Python stack trace: File "path", line N, in function
_FRAME: Final = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\S+))?')
# Pieces of a module path as torch.export writes it in different releases:
# "features.3.conv", "L['self'].features[3]", "getattr(L['self'].features, '3')".
_PATH_TOKEN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|'[^']*'")
_ROOT_TOKENS: Final = frozenset({"L", "'self'", "self", "getattr", "L__self__"})

# Largest debug.json this reader will load (a guard against pointing it at the wrong file).
MAX_DEBUG_JSON_BYTES: Final = 256 * 1024 * 1024


@dataclass
class OpDebugInfo:
    attrs: dict[str, str] = field(default_factory=dict)
    namespace: str = ""  # "/"-separated module path; "" for the root module or unknown
    # The node of the exported program it comes from: the last (greatest) ancestor of its
    # torch_info.node_trace, as torch.export named it ("" when not recorded).
    source_node: str = ""


def module_path_to_namespace(path: str) -> str:
    """'features.3.conv.0' or "L['self'].features[3]" -> 'features/3/conv/0' / 'features/3'."""
    parts: list[str] = []
    for token in _PATH_TOKEN.findall(path):
        if token in _ROOT_TOKENS and not parts:
            continue
        parts.append(token.strip("'"))
    return "/".join(p for p in parts if p)


def _deepest_module(stack: Mapping[str, Any]) -> tuple[str, str] | None:
    """(path, type) of the innermost module of an nn_module_stack mapping."""
    best: tuple[str, str] | None = None
    for value in stack.values():
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], str):
            path = value[0]
            mtype = str(value[1]) if len(value) > 1 else ""
            depth = len(module_path_to_namespace(path).split("/")) if path else 0
            best_depth = (
                len(module_path_to_namespace(best[0]).split("/")) if best and best[0] else 0
            )
            # Entries run root -> leaf, so at equal depth the later one is the inner module.
            if best is None or depth >= best_depth:
                best = (path, mtype)
    return best


def _source_line(stack_trace: list[str]) -> str:
    """The first frame of the trace: where the model's own forward() called this op."""
    for i, line in enumerate(stack_trace):
        m = _FRAME.search(line)
        if m:
            where = f"{m.group(1)}:{m.group(2)}"
            if m.group(3):
                where += f" in {m.group(3)}"
            code = stack_trace[i + 1].strip() if i + 1 < len(stack_trace) else ""
            return f"{where}: {code}" if code and not _FRAME.search(code) else where
    return ""


def info_from_event(event: Mapping[str, Any]) -> OpDebugInfo:
    """Readable attributes and a namespace from one debug object (location JSON or debug.json)."""
    info = OpDebugInfo()
    attrs = info.attrs
    if "event_id" in event:
        attrs["debug_event"] = str(event["event_id"])
    aten = event.get("aten_info")
    if isinstance(aten, Mapping):
        if aten.get("node_name"):
            attrs["aten_node"] = str(aten["node_name"])
        if aten.get("operator_name"):
            attrs["aten_op"] = str(aten["operator_name"])
    torch_info = event.get("torch_info")
    if isinstance(torch_info, Mapping):
        stack = torch_info.get("nn_module_stack")
        if isinstance(stack, Mapping):
            deepest = _deepest_module(stack)
            if deepest is not None:
                path, mtype = deepest
                info.namespace = module_path_to_namespace(path)
                attrs["nn_module"] = (
                    f"{path or '<root>'} ({mtype})" if mtype else (path or "<root>")
                )
        trace = torch_info.get("stack_trace")
        if isinstance(trace, str):
            trace = trace.split("\n")
        if isinstance(trace, list):
            lines = [str(x) for x in trace if str(x).strip()]
            if lines:
                attrs["stack_trace"] = "\n".join(lines)
                source = _source_line(lines)
                if source:
                    attrs["source"] = source
        trace = torch_info.get("node_trace")
        root = trace[-1] if isinstance(trace, list) and trace else None
        if isinstance(root, Mapping) and isinstance(root.get("name"), str):
            info.source_node = str(root["name"])
        fn = torch_info.get("torch_fn")
        if isinstance(fn, (list, tuple)) and fn:
            attrs["torch_fn"] = " ".join(str(x) for x in fn)
    return info


def parse_location(text: str) -> OpDebugInfo:
    """Debug info from an operator's `location.text`; non-JSON text is shown as it is."""
    try:
        event = json.loads(text)
    except ValueError:
        return OpDebugInfo({"location": text})
    if not isinstance(event, Mapping):
        return OpDebugInfo({"location": text})
    return info_from_event(event)


@dataclass
class DebugJson:
    path: Path
    # (first output tensor name) -> (operator number or None, event)
    by_output: dict[str, tuple[int | None, Mapping[str, Any]]]
    problem: str = ""  # why the file could not be used (then `by_output` is empty)


def load_debug_json(path: Path, inside: Path | None = None) -> DebugJson | None:
    """Read a `DebugMode.JSON` file (a regular file, inside the folder `inside` when given).
    None when there is no such file; a file that exists but cannot be used (too big, unreadable,
    not JSON, not a list of debug objects) comes back with `problem` set, so the caller can say so
    instead of silently showing no source mapping."""
    try:
        if not files.probe(path):
            return None
        data = files.read_regular(path, MAX_DEBUG_JSON_BYTES, path.name, inside)
        if files.json_values(data) > files.MAX_JSON_VALUES:
            return DebugJson(
                path, {}, f"{path.name}: more than {files.MAX_JSON_VALUES} JSON values: not parsed"
            )
        events = json.loads(data.decode("utf-8", errors="replace"))
    except PteFormatError as e:
        return DebugJson(path, {}, f"{path.name} could not be read: {e.what}")
    except RecursionError:
        return DebugJson(path, {}, f"{path.name} is not usable: JSON nested too deeply")
    except ValueError as e:
        return DebugJson(path, {}, f"{path.name} is not valid JSON: {e}")
    if not isinstance(events, list):
        return DebugJson(
            path,
            {},
            f"{path.name} holds a JSON {type(events).__name__}, expected a list of debug objects",
        )
    by_output: dict[str, tuple[int | None, Mapping[str, Any]]] = {}
    for event in events:
        if not isinstance(event, Mapping):
            continue
        tosa = event.get("tosa_info")
        if not isinstance(tosa, Mapping) or not isinstance(tosa.get("node_name"), str):
            continue
        op_id = tosa.get("operator_id")
        by_output[tosa["node_name"]] = (op_id if isinstance(op_id, int) else None, event)
    if not by_output:
        return DebugJson(
            path, {}, f"{path.name} has no debug objects with a tosa_info ({len(events)} entries)"
        )
    return DebugJson(path, by_output)
