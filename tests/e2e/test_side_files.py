"""Side files under the names people and tools give them (api/sidefiles.py): each name gives
exactly the view its canonical name gives; two that fit are refused by name; one of another
program is a problem, never an overlay; the command line wins; a corrupt one never costs the view.

The files are the real examples' ETRecords and ETDumps, copied beside a copy of their program
under each name."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from pte_adapter.api import open_analysis
from pte_adapter.cli import EXIT_BAD_FILE, EXIT_OK, main
from pte_adapter.explorer.convert import convert_path
from pte_adapter.render.summary_json import summary_json
from tests.support.examples import EXAMPLES

STEM = "undelegated"  # has both an ETRecord and an ETDump
ETRECORD = EXAMPLES / f"{STEM}.etrecord"
ETDUMP = EXAMPLES / f"{STEM}.etdp"


def _folder(tmp_path: Path, **side: Path) -> Path:
    """A copy of the program, with `name=source` side files beside it."""
    pte = Path(shutil.copy(EXAMPLES / f"{STEM}.pte", tmp_path / f"{STEM}.pte"))
    for name, source in side.items():
        shutil.copy(source, tmp_path / name.replace("__", "."))
    return pte


def _view(pte: Path) -> dict[str, Any]:
    """What the user sees, without the side file's own name: summary JSON and the graphs."""
    result = open_analysis(pte)
    summary = summary_json(result)
    summary.pop("etrecord")
    graphs = [dataclasses.asdict(g) for g in convert_path(pte)]
    profile = result.profile_summary
    if profile is not None:
        profile = {**profile, "etdump": None}
    return {"summary": summary, "graphs": graphs, "profile": profile}


def _without_names(view: dict[str, Any], *names: str) -> str:
    text = json.dumps(view, sort_keys=True)
    for name in names:
        text = text.replace(name, "<side file>")
    return text


@pytest.fixture(scope="module")
def canonical(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("canonical")
    pte = _folder(folder, **{f"{STEM}__etrecord": ETRECORD, f"{STEM}__etdp": ETDUMP})
    view = _view(pte)
    assert view["summary"]["methods"][0]["sources"]  # the layers are there
    assert view["profile"] is not None
    return _without_names(view, f"{STEM}.etrecord", f"{STEM}.etdp")


@pytest.mark.parametrize("name", [f"{STEM}_etrecord.bin", "etrecord.bin"])
def test_each_etrecord_name_gives_the_canonical_view(
    tmp_path: Path, canonical: str, name: str
) -> None:
    pte = _folder(tmp_path, **{name.replace(".", "__"): ETRECORD, f"{STEM}__etdp": ETDUMP})
    result = open_analysis(pte)
    assert result.source is not None and result.source.etrecord == name
    assert _without_names(_view(pte), name, f"{STEM}.etdp") == canonical
    graphs = {g.id: g for g in convert_path(pte)}
    assert graphs["forward"].groupNodeAttributes[""]["etrecord"] == name


@pytest.mark.parametrize("name", [f"{STEM}.etdump", "etdump.bin"])
def test_each_etdump_name_gives_the_canonical_view(
    tmp_path: Path, canonical: str, name: str
) -> None:
    pte = _folder(tmp_path, **{f"{STEM}__etrecord": ETRECORD, name.replace(".", "__"): ETDUMP})
    result = open_analysis(pte)
    assert result.profile_summary is not None and result.profile_summary["etdump"] == name
    assert _without_names(_view(pte), f"{STEM}.etrecord", name) == canonical
    attrs = {g.id: g for g in convert_path(pte)}["forward"].groupNodeAttributes[""]
    assert attrs["measured profile"].startswith(f"{name}, ")


def test_a_debug_buffer_beside_etdump_bin_is_noted(tmp_path: Path) -> None:
    pte = _folder(tmp_path, etdump__bin=ETDUMP, debug_buffer__bin=ETRECORD)
    result = open_analysis(pte)
    assert result.profile is not None
    (note,) = [p for p in result.problems if "debug_buffer.bin" in p]
    assert note.startswith("debug_buffer.bin beside etdump.bin holds intermediate outputs, read ")
    assert result.numerics is None  # read only when numbers are compared
    assert result.profile_summary is not None and note in result.profile_summary["problems"]


def test_two_etrecords_that_fit_are_both_named_and_neither_used(tmp_path: Path) -> None:
    pte = _folder(tmp_path, **{f"{STEM}__etrecord": ETRECORD, "etrecord__bin": ETRECORD})
    result = open_analysis(pte)
    assert result.source is None
    (problem,) = [p for p in result.problems if "fit this program" in p]
    assert problem == (
        f"2 ETRecords beside it fit this program: {STEM}.etrecord (as <stem>.etrecord) and "
        "etrecord.bin (as etrecord.bin); none is used (pass the one to use with --etrecord, or "
        "remove the other)"
    )
    # The command line wins: the one named is used, and nothing is said of the others.
    named = open_analysis(pte, etrecord=tmp_path / "etrecord.bin")
    assert named.source is not None and named.source.etrecord == "etrecord.bin"
    assert named.problems == []


def test_two_etdumps_that_fit_are_both_named_and_neither_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pte = _folder(tmp_path, **{f"{STEM}__etdp": ETDUMP, "etdump__bin": ETDUMP})
    result = open_analysis(pte)
    assert result.profile is None and result.profile_error is not None
    assert "2 ETDumps beside it fit this program: undelegated.etdp (as <stem>.etdp) and " in str(
        result.profile_error
    )
    attrs = {g.id: g for g in convert_path(pte)}["forward"].groupNodeAttributes[""]
    assert "fit this program" in attrs["measured profile problem"]
    assert main(["profile", str(pte)]) == EXIT_BAD_FILE
    assert "fit this program" in capsys.readouterr().err
    assert main(["profile", str(pte), str(tmp_path / "etdump.bin")]) == EXIT_OK  # the argument wins


def test_a_side_file_of_another_program_is_a_problem_never_an_overlay(tmp_path: Path) -> None:
    other = EXAMPLES / "xnnpack_lrn.etrecord"
    other_dump = EXAMPLES / "mv2_xnnpack_int8.etdp"
    pte = _folder(tmp_path, etrecord__bin=other, etdump__bin=other_dump)
    result = open_analysis(pte)
    assert result.source is None
    assert any(
        p.startswith("etrecord.bin does not belong to this program") for p in result.problems
    )
    assert result.profile is None and result.profile_error is not None
    assert "recorded running another program" in str(result.profile_error)


def test_the_one_that_fits_is_used_and_the_other_named(tmp_path: Path) -> None:
    other = EXAMPLES / "xnnpack_lrn.etrecord"
    pte = _folder(
        tmp_path,
        **{f"{STEM}_etrecord__bin": ETRECORD, "etrecord__bin": other},
        **{f"{STEM}__etdump": ETDUMP, "etdump__bin": EXAMPLES / "mv2_xnnpack_int8.etdp"},
    )
    result = open_analysis(pte)
    assert result.source is not None and result.source.etrecord == f"{STEM}_etrecord.bin"
    assert any(
        p.startswith("etrecord.bin does not belong to this program") for p in result.problems
    )
    assert result.profile_summary is not None
    assert result.profile_summary["etdump"] == f"{STEM}.etdump"
    assert any(p.startswith("ETDump not used: etdump.bin: ") for p in result.problems)


def test_corrupt_side_files_never_cost_the_view(tmp_path: Path) -> None:
    pte = _folder(tmp_path)
    (tmp_path / "etrecord.bin").write_bytes(ETRECORD.read_bytes()[:500])
    (tmp_path / "etdump.bin").write_bytes(ETDUMP.read_bytes()[:500])
    result = open_analysis(pte)
    assert result.source is None and any(
        p.startswith("ETRecord not used: ") for p in result.problems
    )
    assert result.profile_error is not None and "etdump.bin" in str(result.profile_error)
    graphs = convert_path(pte)
    assert graphs[0].id == "forward" and graphs[0].nodes
    assert main(["summary", str(pte)]) == EXIT_OK


def test_no_etdump_names_the_names_looked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pte = _folder(tmp_path)
    assert main(["profile", str(pte)]) == EXIT_BAD_FILE
    assert capsys.readouterr().err.strip() == (
        f"pte-adapter: {STEM}.pte: no ETDump beside it (looked for {STEM}.etdp, {STEM}.etdump, "
        "etdump.bin): pass its path"
    )


def test_arms_etrecord_name_is_found_beside_the_bundle() -> None:
    """The bundle example's ETRecord, as Arm's compiler names it, is the one looked at."""
    program = pte_adapter.load(EXAMPLES / "bundle_ethosu55.bpte")
    assert program.etrecord is not None
    assert program.etrecord.source == "bundle_ethosu55_etrecord.bin"
