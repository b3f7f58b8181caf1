"""Every hook of every record resolves to a function of its hook's type (a typo fails here, not in
a user's run), and a hook that fails is a problem naming the backend and the hook, never a crash."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

import pte_adapter
from pte_adapter.backends import BACKENDS, Backend
from pte_adapter.cli import main
from pte_adapter.delegates import hooks
from tests.support.examples import example


def _positional(fn: object) -> int:
    params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds and p.name != "self" for p in params)


def unresolved(records: list[Backend]) -> list[str]:
    """What is wrong with the records' hooks: each that cannot be imported, or whose function does
    not take its hook type's arguments."""
    found = []
    for record in records:
        for name, protocol in hooks.HOOK_TYPES.items():
            try:
                fn = hooks.resolve(record, name)
            except hooks.HookError as e:
                found.append(str(e))
                continue
            if fn is None:
                continue
            wanted = _positional(protocol.__call__)  # type: ignore[operator]
            required = sum(
                p.default is inspect.Parameter.empty
                for p in inspect.signature(fn).parameters.values()
                if p.kind is not inspect.Parameter.KEYWORD_ONLY
            )
            if not required <= wanted <= _positional(fn):
                found.append(f"{record.id}'s {name} hook takes {_positional(fn)}, not {wanted}")
    return found


def test_every_hook_of_every_record_resolves() -> None:
    records = list(BACKENDS.values())
    assert sum(getattr(r, n) is not None for r in records for n in hooks.HOOK_TYPES) >= 25
    assert unresolved(records) == []


def test_a_planted_typo_fails_it() -> None:
    ethosu = BACKENDS["EthosUBackend"]
    typo = dataclasses.replace(ethosu, layout="pte_adapter.delegates.ethosu.layout:payload_layuot")
    assert unresolved([typo]) == [
        "EthosUBackend's layout hook (pte_adapter.delegates.ethosu.layout:payload_layuot) failed "
        "(pte_adapter.delegates.ethosu.layout has no function 'payload_layuot'); this is a bug "
        "in pte_adapter, please report it with the file"
    ]
    wrong_module = dataclasses.replace(
        ethosu, price_operators="pte_adapter.delegates.ethosu.nope:f"
    )
    (problem,) = unresolved([wrong_module])
    assert "is not available in this install" in problem
    wrong_type = dataclasses.replace(ethosu, layout=ethosu.decoder)
    assert unresolved([wrong_type]) == ["EthosUBackend's layout hook takes 2, not 3"]


def test_every_hook_field_has_a_type() -> None:
    """A hook added to the record gets its type here too (fields named "module:function")."""
    named = {
        f.name
        for f in dataclasses.fields(Backend)
        for r in BACKENDS.values()
        if isinstance(v := getattr(r, f.name), str) and ":" in v and "." in v.split(":")[0]
    }
    assert named <= set(hooks.HOOK_TYPES)
    assert set(hooks.HOOK_TYPES) <= {f.name for f in dataclasses.fields(Backend)}


def _broken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **fields: str) -> None:
    """EthosUBackend's record with these hooks pointed at a module whose functions raise."""
    (tmp_path / "raising_hooks.py").write_text(
        "def fail(*args):\n    raise ValueError('planted')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    record = BACKENDS["EthosUBackend"]
    monkeypatch.setitem(BACKENDS, "EthosUBackend", dataclasses.replace(record, **fields))


def test_a_failing_layout_is_a_problem_of_size(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A layout hook whose module is not installed used to crash `size`; now the payload is one
    opaque part and the problem names the hook."""
    _broken(monkeypatch, tmp_path, layout="pte_adapter_not_installed.layout:payload_layout")
    path = example("mv2_lrn_ethosu85")
    assert main(["size", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sum(report["totals"].values()) == path.stat().st_size
    assert any(
        "EthosUBackend's layout hook (pte_adapter_not_installed.layout:payload_layout) is not "
        "available in this install" in p
        for p in report["problems"]
    ), report["problems"]


def test_failing_analysis_hooks_are_problems_on_their_delegates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _broken(
        monkeypatch,
        tmp_path,
        partition_rules="raising_hooks:fail",
        price_operators="raising_hooks:fail",
        side_files="raising_hooks:fail",
        partition_report="raising_hooks:fail",
    )
    result = pte_adapter.analyse(pte_adapter.load(example("mv2_lrn_ethosu85")))
    problems = result.methods[0].method.delegates[0].decoded.problems
    for hook in ("partition_rules", "side_files", "partition_report"):
        assert (
            f"EthosUBackend's {hook} hook (raising_hooks:fail) failed (ValueError: planted); "
            "this is a bug in pte_adapter, please report it with the file" in problems
        ), problems
    # No price: the what-if still says what the merge does to the partitioning.
    assert result.methods[0].summary.why == []
    assert any("price_operators hook (raising_hooks:fail) failed" in p for p in problems)
