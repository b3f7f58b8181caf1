#!/usr/bin/env python3
"""Generate `src/pte_adapter/delegates/arm/_generated/cortex_m_rewrites.py`: which edge operators
Arm's Cortex-M passes of the pinned ExecuTorch rewrite into which CPU kernels.

Why generated: an ETRecord keeps the edge program from before these passes, while the `.pte` runs
what they made of it (`cortex_m::quantized_linear` for an `aten.linear` node, `cortex_m::
quantize_per_tensor` for a `quantized_decomposed` one, `aten.clamp` for a quantized `aten.relu`).
To tell such a kernel from one of another program, the adapter needs the rewrites exactly as the
pinned release makes them; they change with every release, so they are read from its source.

Which passes: the flows of the pinned release that lower for Arm's Cortex-M CPU kernels, taken
from the package itself, not typed here:
- `CortexMPassManager.pass_list` (its default pass list; `backends/cortex_m/passes/
  cortex_m_pass_manager.py`);
- every pass that `backends/arm/scripts/aot_arm_compiler.py` applies with `edge.transform([...])`
  (its Ethos-U/TOSA path: `ReplaceQuantNodesPass` alone).
The experimental explicit-layout list (`--cortex-m-explicit-layout`) is not covered: its passes
rewrite through helpers of other modules that these rules do not follow.

How each pass's rewrites are read (the AST of the module that defines it; nothing is executed but
the imports that name the passes and their registries):
1. an operator-keyed dict (`{edge op: edge op}`, or `{edge op: {"new_target": edge op}}`) in the
   pass's class: key -> value;
2. a function registered with `@<Pass>.register_dialect_substitution(op)` (checked against the
   pass's evaluated registry): op -> every edge operator it, or a module-level function it calls,
   produces (`DialectNodeSpec(op)`, `create_node(target=op)`, `call_operator(op)`);
3. any other produced operator (also `node.target = op`): from the operators its node was matched
   on - the `if` tests around it (`node.target.__name__ == "aten.x.default"`, `node.target == op`)
   or, outside such tests, the node whose `meta` the new node copies (or whose `target` is set),
   bound to an operator set by a test such as `node.target not in self.TARGETS`.
A produced operator whose source cannot be told this way stops the generator: extend it rather
than guess. The table is the closure of these rewrites in each flow's pass order, by operator
(namespace and name, the overload dropped: the `.pte` names out-variants).

This generator imports ExecuTorch (and so torch): it takes about half a minute.

Usage: python scripts/gen_cortex_m_rewrites.py [--check]
"""

from __future__ import annotations

import ast
import inspect
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from _codegen import REPO, emit, header, installed_file, parser

OUT = REPO / "src/pte_adapter/delegates/arm/_generated/cortex_m_rewrites.py"
SCRIPT = "gen_cortex_m_rewrites.py"
AOT_COMPILER = "executorch/backends/arm/scripts/aot_arm_compiler.py"
PASS_MANAGER = "executorch/backends/cortex_m/passes/cortex_m_pass_manager.py"
EDGE = ("exir_ops", "edge")
PRODUCERS = {"DialectNodeSpec": (0, "op"), "create_node": (1, "target"), "call_operator": (0, "op")}


def dotted(expr: ast.expr) -> list[str] | None:
    """`exir_ops.edge.aten.add.Tensor` -> ["exir_ops", "edge", "aten", "add", "Tensor"]."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    return [expr.id, *reversed(parts)]


def edge_op(expr: ast.expr) -> str | None:
    """The edge operator an expression names ("aten.add.Tensor"), or None."""
    parts = dotted(expr)
    if parts and tuple(parts[:2]) == EDGE and len(parts) == 5:
        return ".".join(parts[2:])
    return None


def _meta_source(value: ast.expr) -> str | None:
    """`node.meta`, `node.meta.copy()`, `dict(node.meta)` -> "node"."""
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) and value.func.attr == "copy":
            return _meta_source(value.func.value)
        if isinstance(value.func, ast.Name) and value.func.id == "dict" and value.args:
            return _meta_source(value.args[0])
        return None
    if isinstance(value, ast.Attribute) and value.attr == "meta":
        return value.value.id if isinstance(value.value, ast.Name) else None
    return None


def _target_of(expr: ast.expr) -> str | None:
    """`node.target`, `node.target.__name__` -> "node"; the bare `op` of call_operator -> "op"."""
    if isinstance(expr, ast.Attribute) and expr.attr == "__name__":
        expr = expr.value
    if isinstance(expr, ast.Attribute) and expr.attr == "target":
        return expr.value.id if isinstance(expr.value, ast.Name) else None
    if isinstance(expr, ast.Name) and expr.id == "op":
        return "op"
    return None


def _call_name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def _producer_arg(call: ast.Call) -> ast.expr | None:
    """The operator argument of `DialectNodeSpec(op)`, `create_node(kind, target)`,
    `call_operator(op)`."""
    name = _call_name(call)
    if name not in PRODUCERS:
        return None
    index, keyword = PRODUCERS[name]
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return call.args[index] if len(call.args) > index else None


def _assignments(body: list[ast.stmt] | ast.AST) -> dict[str, list[ast.expr]]:
    """Name -> every value assigned to it (plain and annotated assignments)."""
    out: dict[str, list[ast.expr]] = {}
    nodes = body if isinstance(body, list) else list(ast.walk(body))
    for n in nodes:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            out.setdefault(n.targets[0].id, []).append(n.value)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value:
            out.setdefault(n.target.id, []).append(n.value)
    return out


@dataclass(frozen=True)
class Produced:
    op: str
    line: int
    node: str | None  # the node whose meta (or target) the produced node takes
    tests: tuple[tuple[bool, frozenset[str]], ...]  # enclosing if-tests: (in its body?, operators)
    replaces: bool  # it takes over the node's value (`node.target = op`, `DialectNodeSpec(op)`)


Tests = tuple[tuple[bool, frozenset[str]], ...]
# (edge operator, the operator made of it, whether that node replaces it: takes over its value)
Rewrite = tuple[str, str, bool]


class PassSource:
    """The module that defines one pass class, read for the rewrites that class makes."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.path = Path(str(inspect.getsourcefile(cls)))
        self.tree = ast.parse(self.path.read_text(encoding="utf-8"))
        self.parents = {c: p for p in ast.walk(self.tree) for c in ast.iter_child_nodes(p)}
        self.functions = {f.name: f for f in self.tree.body if isinstance(f, ast.FunctionDef)}
        self.module_values = _assignments(self.tree.body)
        found = [
            c for c in self.tree.body if isinstance(c, ast.ClassDef) and c.name == cls.__name__
        ]
        if len(found) != 1:
            raise SystemExit(f"{self.path}: no single class {cls.__name__}")
        self.klass = found[0]
        self.attrs = _assignments(self.klass.body)
        for n in ast.walk(self.klass):  # `self.<name> = ...` in its methods
            if isinstance(n, ast.Assign) and len(n.targets) == 1:
                t = n.targets[0]
                if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self":
                    self.attrs.setdefault(t.attr, []).append(n.value)
        self.methods = [f for f in self.klass.body if isinstance(f, ast.FunctionDef)]

    # -- what an expression names ------------------------------------------------------------

    def ops(self, expr: ast.expr, local: dict[str, list[ast.expr]], depth: int = 0) -> set[str]:
        """Every edge operator an expression may evaluate to (locals, if-expressions, getattr)."""
        if depth > 8:
            return set()
        if (op := edge_op(expr)) is not None:
            return {op}
        if isinstance(expr, ast.IfExp):
            return self.ops(expr.body, local, depth + 1) | self.ops(expr.orelse, local, depth + 1)
        if isinstance(expr, ast.Name):
            return {o for v in local.get(expr.id, []) for o in self.ops(v, local, depth + 1)}
        if isinstance(expr, ast.Attribute):  # `<packet>.default` of a packet taken by getattr
            return {f"{p}.{expr.attr}" for p in self._packets(expr.value, local, depth + 1)}
        return set()

    def _packets(self, expr: ast.expr, local: dict[str, list[ast.expr]], depth: int) -> set[str]:
        """`getattr(exir_ops.edge.cortex_m, "quantized_max_pool2d", None)` -> that packet."""
        if isinstance(expr, ast.Name) and depth <= 8:
            return {p for v in local.get(expr.id, []) for p in self._packets(v, local, depth + 1)}
        if (
            isinstance(expr, ast.Call)
            and getattr(expr.func, "id", "") == "getattr"
            and len(expr.args) >= 2
            and isinstance(expr.args[1], ast.Constant)
            and isinstance(expr.args[1].value, str)
        ):
            parts = dotted(expr.args[0])
            if parts and tuple(parts[:2]) == EDGE and len(parts) == 3:
                return {f"{parts[2]}.{expr.args[1].value}"}
        return set()

    def collection_ops(
        self, expr: ast.expr, local: dict[str, list[ast.expr]], depth: int = 0
    ) -> set[str]:
        """The operators of a set/list/tuple/dict-keys literal, or of the name holding one."""
        if depth > 8:
            return set()
        if isinstance(expr, (ast.Set, ast.List, ast.Tuple)):
            return {o for e in expr.elts for o in self.ops(e, local)}
        if isinstance(expr, ast.Dict):
            return {o for k in expr.keys if k is not None for o in self.ops(k, local)}
        values: list[ast.expr] = []
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            values = self.attrs.get(expr.attr, [])  # self.TARGETS, cls.TARGETS, Pass.TARGETS
        elif isinstance(expr, ast.Name):
            values = self.module_values.get(expr.id, [])
        return {o for v in values for o in self.collection_ops(v, local, depth + 1)}

    def test_ops(self, test: ast.expr, local: dict[str, list[ast.expr]]) -> frozenset[str]:
        """The operators a test requires a node to be (`x.target == op`, `x.target in {...}`,
        `x.target.__name__ == "aten.x.default"`, joined by `or`); empty for any other test."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            parts = [self.test_ops(v, local) for v in test.values]
            return frozenset().union(*parts) if all(parts) else frozenset()
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return frozenset()
        if _target_of(test.left) is None:
            return frozenset()
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq) and isinstance(right, ast.Constant):
            text = right.value
            return (
                frozenset({text}) if isinstance(text, str) and text.count(".") == 2 else frozenset()
            )
        if isinstance(op, ast.Eq):
            return frozenset(self.ops(right, local))
        if isinstance(op, ast.In):
            return frozenset(self.collection_ops(right, local))
        return frozenset()

    # -- what a function produces, and from what ----------------------------------------------

    def bindings(
        self, fn: ast.FunctionDef, local: dict[str, list[ast.expr]]
    ) -> dict[str, set[str]]:
        """Node name -> the operators a comparison anywhere in the function matches it on,
        whatever the polarity (`if node.target not in self.TARGETS: continue` binds `node`)."""
        out: dict[str, set[str]] = {}
        for n in ast.walk(fn):
            if not (isinstance(n, ast.Compare) and len(n.ops) == 1):
                continue
            name, op = _target_of(n.left), n.ops[0]
            if name is None or not isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                continue
            positive = ast.Eq() if isinstance(op, (ast.Eq, ast.NotEq)) else ast.In()
            test = ast.Compare(left=n.left, ops=[positive], comparators=n.comparators)
            out.setdefault(name, set()).update(self.test_ops(test, local))
        return out

    def produced(self, fn: ast.FunctionDef, local: dict[str, list[ast.expr]]) -> list[Produced]:
        """Every operator the function produces, the node it takes after, and the tests around."""
        out: list[Produced] = []
        meta_from: dict[str, str] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Attribute):
                t, src = n.targets[0], _meta_source(n.value)
                if t.attr == "meta" and isinstance(t.value, ast.Name) and src:
                    meta_from[t.value.id] = src
        takes_op = "op" in {a.arg for a in fn.args.args}

        def visit(node: ast.AST, tests: Tests) -> None:
            if isinstance(node, ast.If):
                ops = self.test_ops(node.test, local)
                for child in node.body:
                    visit(child, (*tests, (True, ops)) if ops else tests)
                for child in node.orelse:
                    visit(child, (*tests, (False, ops)) if ops else tests)
                return
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Attribute):
                t = node.targets[0]
                if t.attr == "target" and isinstance(t.value, ast.Name):
                    out.extend(
                        Produced(o, node.lineno, t.value.id, tests, True)
                        for o in self.ops(node.value, local)
                    )
            if isinstance(node, ast.Call) and (arg := _producer_arg(node)) is not None:
                parent = self.parents.get(node)
                name = (
                    parent.targets[0].id
                    if isinstance(parent, ast.Assign) and isinstance(parent.targets[0], ast.Name)
                    else None
                )
                taken = meta_from.get(name or "") or ("op" if takes_op else None)
                spec = _call_name(node) == "DialectNodeSpec"
                ops = self.ops(arg, local)
                out.extend(Produced(o, node.lineno, taken, tests, spec) for o in ops)
            for child in ast.iter_child_nodes(node):
                visit(child, tests)

        for stmt in fn.body:
            visit(stmt, ())
        return sorted(out, key=lambda p: (p.line, p.op))

    def called(self, fns: list[ast.FunctionDef], skip: set[str]) -> list[ast.FunctionDef]:
        """The module-level functions `fns` call, transitively (by name), `skip` excepted."""
        seen: dict[str, ast.FunctionDef] = {}
        todo = list(fns)
        while todo:
            for n in ast.walk(todo.pop()):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                    name = n.func.id
                    if name in self.functions and name not in seen and name not in skip:
                        seen[name] = self.functions[name]
                        todo.append(self.functions[name])
        return list(seen.values())

    # -- the three rules ----------------------------------------------------------------------

    def dict_rewrites(self) -> list[tuple[str, str]]:
        """Rule 1: `{edge op: edge op}` and `{edge op: {"new_target": edge op}}` in the class."""
        pairs: list[Rewrite] = []
        for n in ast.walk(self.klass):
            if not isinstance(n, ast.Dict):
                continue
            for k, v in zip(n.keys, n.values, strict=True):
                sources = self.ops(k, {}) if k is not None else set()
                if isinstance(v, ast.Dict):
                    v = next(
                        (
                            val
                            for key, val in zip(v.keys, v.values, strict=True)
                            if isinstance(key, ast.Constant) and key.value == "new_target"
                        ),
                        v,
                    )
                pairs += [(s, t, True) for s in sorted(sources) for t in sorted(self.ops(v, {}))]
        return pairs

    def substitutions(self) -> tuple[list[Rewrite], set[str]]:
        """Rule 2: the functions registered with `@<Pass>.register_dialect_substitution(op)`; also
        the names of those functions."""
        pairs: list[Rewrite] = []
        registered: set[str] = set()
        names: set[str] = set()
        for fn in self.functions.values():
            sources: set[str] = set()
            for d in fn.decorator_list:
                if (
                    isinstance(d, ast.Call)
                    and dotted(d.func) == [self.cls.__name__, "register_dialect_substitution"]
                    and d.args
                ):
                    sources |= self.ops(d.args[0], {})
            if not sources:
                continue
            names.add(fn.name)
            registered |= sources
            produced: dict[str, bool] = {}
            for f in [fn, *self.called([fn], skip=set())]:
                for p in self.produced(f, _assignments(f)):
                    produced[p.op] = produced.get(p.op, False) or p.replaces
            pairs += [
                (s, t, produced[t]) for s in sorted(sources) for t in sorted(produced) if t != s
            ]
        evaluated = {op_name(t) for t in getattr(self.cls, "_DIALECT_SUBSTITUTIONS", {})}
        if registered != evaluated:
            raise SystemExit(
                f"{self.cls.__name__}: the source registers {sorted(registered)}, its registry "
                f"holds {sorted(evaluated)}: extend {SCRIPT}"
            )
        return pairs, names

    def method_rewrites(self, skip: set[str]) -> list[Rewrite]:
        """Rule 3: what the class's methods (and the module functions they call) produce, from
        the operators the replaced node was matched on."""
        fns = self.methods + self.called(self.methods, skip)
        shared: dict[str, set[str]] = {}
        for fn in self.methods:
            for name, ops in self.bindings(fn, _assignments(fn)).items():
                shared.setdefault(name, set()).update(ops)
        pairs: list[Rewrite] = []
        for fn in fns:
            local = _assignments(fn)
            bound = {**shared, **{k: v for k, v in self.bindings(fn, local).items() if v}}
            for p in self.produced(fn, local):
                sources = matched_on(p, bound)
                if not sources:
                    raise SystemExit(
                        f"{self.path.name}:{p.line}: {self.cls.__name__} produces {p.op}, and "
                        f"which operator it replaces cannot be told: extend {SCRIPT}"
                    )
                pairs += [(s, p.op, p.replaces) for s in sorted(sources) if s != p.op]
        return pairs

    def rewrites(self) -> list[Rewrite]:
        substituted, names = self.substitutions()
        out = self.dict_rewrites() + substituted + self.method_rewrites(names)
        return list(dict.fromkeys(out))


def matched_on(p: Produced, bound: dict[str, set[str]]) -> set[str]:
    """The operators the node that a produced operator replaces was matched on (rule 3): the
    innermost `if` around it that names operators (less those of `else` branches inside it), else
    the operators its node is bound to."""
    positive = [i for i, (in_body, _) in enumerate(p.tests) if in_body]
    if positive:
        i = positive[-1]
        ops = set(p.tests[i][1])
        for in_body, excluded in p.tests[i + 1 :]:
            if not in_body:
                ops -= excluded
        return ops
    return set(bound.get(p.node or "", set()))


def op_name(target: Any) -> str:
    """An evaluated edge operator -> "aten.linear.default"."""
    return str(getattr(target, "_op", target))


# -- flows, closure, output ------------------------------------------------------------------


def flows() -> dict[str, list[type]]:
    """Flow -> its pass classes in order, read from the pinned package."""
    import executorch.backends.arm.scripts.aot_arm_compiler as aot
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager

    out: dict[str, list[type]] = {
        "CortexMPassManager (default pass list)": list(CortexMPassManager.legacy_pass_list)
    }
    tree = ast.parse(Path(str(aot.__file__)).read_text(encoding="utf-8"))
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Call)
            and getattr(n.func, "attr", "") == "transform"
            and n.args
            and isinstance(n.args[0], ast.List)
        ):
            names = [
                e.func.id
                for e in n.args[0].elts
                if isinstance(e, ast.Call) and isinstance(e.func, ast.Name)
            ]
            out[f"aot_arm_compiler.py: edge.transform([{', '.join(names)}])"] = [
                getattr(aot, name) for name in names
            ]
    if len(out) < 2:
        raise SystemExit(f"no edge.transform([...]) found in {AOT_COMPILER}: extend {SCRIPT}")
    return out


def base(op: str) -> str:
    """`aten.linear.default` -> `aten.linear`."""
    return ".".join(op.split(".")[:2])


def closure(flow: list[list[Rewrite]]) -> dict[str, dict[str, bool]]:
    """Edge operator -> every operator the flow's passes, run in order, can turn it into, and
    whether a chain of replacements alone gets there (the kernel then holds the node's value)."""
    starts = {a for pairs in flow for a, _, _ in pairs}
    out: dict[str, dict[str, bool]] = {}
    for start in sorted(starts):
        reached = {start: True}
        for pairs in flow:
            for a, b, replaces in pairs:
                if a in reached:
                    reached[b] = reached.get(b, False) or (reached[a] and replaces)
        del reached[start]
        out[start] = reached
    return out


@dataclass
class Table:
    flows: dict[str, tuple[str, ...]] = field(default_factory=dict)
    rewrites: list[tuple[str, str, str, str]] = field(default_factory=list)
    rewritten_from: dict[str, set[str]] = field(default_factory=dict)
    replaced_from: dict[str, set[str]] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)


def build() -> Table:
    table = Table()
    cache: dict[type, list[Rewrite]] = {}
    for name, passes in flows().items():
        table.flows[name] = tuple(p.__name__ for p in passes)
        per_pass = []
        for p in passes:
            if p not in cache:
                source = PassSource(p)
                cache[p] = source.rewrites()
                table.files[p.__name__] = source.path
                table.rewrites += [
                    (p.__name__, a, b, "replaces" if r else "adds") for a, b, r in cache[p]
                ]
            per_pass.append(cache[p])
        for start, reached in closure(per_pass).items():
            for op, replaced in reached.items():
                if base(op) != base(start):
                    table.rewritten_from.setdefault(base(op), set()).add(base(start))
                    if replaced:
                        table.replaced_from.setdefault(base(op), set()).add(base(start))
    return table


def _in_dist(path: Path) -> str:
    root = Path(str(metadata.distribution("executorch").locate_file(""))).resolve()
    return str(path.resolve().relative_to(root))


NOTES = """\
Rewrites are read from each pass's source (rules in the generator's docstring); REWRITTEN_FROM is
their closure in each flow's pass order, by operator (namespace.name: the .pte names out-variants),
REPLACED_FROM the part made by replacements alone."""


def _table_lines(table: dict[str, set[str]]) -> list[str]:
    return [f"    {k!r}: frozenset({sorted(v)!r})," for k, v in sorted(table.items())]


def render(table: Table, version: str) -> str:
    files = [AOT_COMPILER, PASS_MANAGER, *sorted({_in_dist(p) for p in table.files.values()})]
    sources = [installed_file("executorch", f)[0] for f in dict.fromkeys(files)]
    lines = [
        header(
            "Arm's Cortex-M passes: which edge operators they rewrite into which CPU kernels",
            SCRIPT,
            sources,
            NOTES,
        )
        + "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        f"EXECUTORCH_VERSION: Final = {version!r}",
        "",
        "# Flow -> its passes, in the order they run.",
        "FLOWS: Final[dict[str, tuple[str, ...]]] = {",
        *[f"    {k!r}: {v!r}," for k, v in table.flows.items()],
        "}",
        "",
        "# (pass, the edge operator it rewrites, the operator it makes of it, how: `replaces` when",
        "# the new node takes over the node's value, `adds` for a node it adds beside it).",
        "REWRITES: Final[tuple[tuple[str, str, str, str], ...]] = (",
        *[f"    {r!r}," for r in table.rewrites],
        ")",
        "",
        "# Kernel operator -> the edge operators some flow's passes turn into it (itself excluded).",
        "REWRITTEN_FROM: Final[dict[str, frozenset[str]]] = {",
        *_table_lines(table.rewritten_from),
        "}",
        "",
        "# The part of REWRITTEN_FROM made by replacements alone: the kernel computes the value the",
        "# node computed (so it has the node's output shape).",
        "REPLACED_FROM: Final[dict[str, frozenset[str]]] = {",
        *_table_lines(table.replaced_from),
        "}",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parser(__doc__).parse_args(argv)
    version = metadata.version("executorch")
    return emit({OUT: render(build(), version)}, args.check)


if __name__ == "__main__":
    sys.exit(main())
