"""Every file a command writes goes through the one safe output path (`cli/usage.py`): `-o`,
`profile --node-data`, `export --npu-overlay` and `numerics --node-data` are checked before any work
and never written through a symlink; a usage mistake is one line on stderr and exit 2, `profile`'s
included."""

from __future__ import annotations

from pathlib import Path

import pytest

from pte_adapter.cli import EXIT_OK, EXIT_USAGE, main
from tests.support.examples import EXAMPLES

PROFILED = EXAMPLES / "undelegated.pte"  # with its .etdp beside it


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _symlink_to_a_victim(tmp_path: Path) -> tuple[Path, Path]:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "out.json"
    link.symlink_to(victim)
    return link, victim


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (("profile", str(PROFILED), "--node-data"), "--node-data"),
        (("export", str(PROFILED), "-o", "{dir}/graph.json", "--npu-overlay"), "--npu-overlay"),
    ],
)
def test_a_symlink_is_never_written_through(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...], option: str
) -> None:
    link, victim = _symlink_to_a_victim(tmp_path)
    args = [a.format(dir=tmp_path) for a in argv]
    code, _out, err = _run(capsys, *args, str(link))
    assert code == EXIT_USAGE
    assert err.startswith(f"pte-adapter {args[0]}: {option} {link}: is a symlink")
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize(
    "argv",
    [
        ("profile", str(PROFILED), "--node-data"),
        ("export", str(PROFILED), "-o", "{dir}/graph.json", "--npu-overlay"),
        ("numerics", str(PROFILED), "--reference", str(PROFILED), "--node-data"),
    ],
)
def test_a_folder_is_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...]
) -> None:
    args = [a.format(dir=tmp_path) for a in argv]
    code, out, err = _run(capsys, *args, str(tmp_path))
    assert code == EXIT_USAGE and out == ""
    assert f"{args[-1]} {tmp_path}: is a directory; give a file name" in err
    assert not (tmp_path / "graph.json").exists()  # refused before the -o file was written


def test_the_files_are_written(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    node_data = tmp_path / "node-data.json"
    code, out, _err = _run(capsys, "profile", str(PROFILED), "--node-data", str(node_data))
    assert code == EXIT_OK and f"wrote {node_data}" in out
    assert node_data.read_text().startswith("{")


def test_a_profile_usage_error_goes_to_stderr_with_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(capsys, "profile", str(PROFILED), "--tick-ns", "0")
    assert (code, out) == (EXIT_USAGE, "")
    assert err == "pte-adapter profile: --tick-ns must be a positive number\n"
