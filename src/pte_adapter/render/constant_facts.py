"""Constant values as people read them (Model Explorer attributes, `summary`) and as JSON.

`128`, `True`, `0.00068`, `"tiny_llama"`, `[2, 3]`, `float32[2, 2] [[0.02, 0.015], [0.031, 0.027]]`,
`bool[128] [False, False, True, …] (first 16 of 128)`. A float32/float16/bfloat16 element is shown
with the fewest digits that read back to the same stored value; the JSON keeps every value exactly
as the file has it (a float32 widened to a float), and long strings and lists whole.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

from pte_adapter.analysis.constants import ConstantValue, NotConstant, TensorPreview
from pte_adapter.wording import shape_text

# Text only: longer strings and lists are cut (the JSON has them whole).
TEXT_CHARS = 120
TEXT_ITEMS = 16

# Struct formats that round a float to the precision it was stored in.
_NARROW = {"float32": "f", "float16": "e"}


def _float_text(x: float, dtype: str = "float64") -> str:
    if not math.isfinite(x):
        return str(x)
    if dtype == "bfloat16":
        return f"{x:.4g}"
    fmt = _NARROW.get(dtype)
    if fmt is None:
        return repr(x)
    for digits in range(1, 10):
        text = f"{x:.{digits}g}"
        if struct.unpack(fmt, struct.pack(fmt, float(text)))[0] == x:
            return text
    return repr(x)


def _element_text(x: object, dtype: str) -> str:
    return _float_text(x, dtype) if isinstance(x, float) else str(x)


def _nested(values: list[str], shape: tuple[int, ...]) -> str:
    if len(shape) <= 1:
        return "[" + ", ".join(values) + "]"
    step = len(values) // shape[0] if shape[0] else 0
    rows = [_nested(values[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]
    return "[" + ", ".join(rows) + "]"


def tensor_text(t: TensorPreview) -> str:
    head = f"{t.dtype}{shape_text(t.shape)}"
    if t.values is None:
        return f"{head} ({t.note})"
    items = [_element_text(x, t.dtype) for x in t.values]
    if not t.shape and items:
        body = items[0]
    elif t.complete and 0 not in t.shape:
        body = _nested(items, t.shape)
    else:
        more = f"first {len(items)} of {t.numel}"
        body = "[" + ", ".join([*items, "…"]) + f"] ({more})" if items else "[]"
    return f"{head} {body}" + (f" ({t.note})" if t.note else "")


def _items_text(items: list[ConstantValue], open_: str, close: str) -> str:
    shown = [constant_text(x) for x in items[:TEXT_ITEMS]]
    if len(items) > TEXT_ITEMS:
        shown.append(f"… ({len(items)} items)")
    if open_ == "(" and len(items) == 1:
        return f"({shown[0]},)"
    return open_ + ", ".join(shown) + close


def constant_text(value: ConstantValue) -> str:
    """One line for a constant value."""
    if isinstance(value, TensorPreview):
        return tensor_text(value)
    if isinstance(value, NotConstant):
        return f"<{value.what}>"
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        cut = len(text) > TEXT_CHARS
        return text[:TEXT_CHARS] + f"… ({len(value)} characters)" if cut else text
    if isinstance(value, list):
        return _items_text(value, "[", "]")
    if isinstance(value, tuple):
        return _items_text(list(value), "(", ")")
    pairs = [f"{json.dumps(k)}: {constant_text(v)}" for k, v in list(value.items())[:TEXT_ITEMS]]
    if len(value) > TEXT_ITEMS:
        pairs.append(f"… ({len(value)} keys)")
    return "{" + ", ".join(pairs) + "}"


def constant_json(value: ConstantValue) -> Any:
    """The value as JSON data: scalars as themselves, lists and tuples as arrays, a tensor as
    `{"dtype", "shape", "values"}` (`values`: its first elements, row-major; null when not read),
    a value that is not a constant (a method input handed back) as null."""
    if isinstance(value, TensorPreview):
        values = None if value.values is None else list(value.values)
        return {"dtype": value.dtype, "shape": list(value.shape), "values": values}
    if isinstance(value, NotConstant):
        return None
    if isinstance(value, (list, tuple)):
        return [constant_json(x) for x in value]
    if isinstance(value, dict):
        return {k: constant_json(v) for k, v in value.items()}
    return value
