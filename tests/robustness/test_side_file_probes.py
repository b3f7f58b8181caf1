"""A side-file name the system refuses to look up (`EACCES` from a folder that may not be
searched, as a non-root user meets it) is a problem on the view, never an exception: simulated on
the real Arm example's folder, since the tests may run as root, for whom permissions do not hold."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import pte_adapter
from tests.support.examples import EXAMPLES
from tests.support.hostile import ARM


def test_a_name_that_may_not_be_looked_up_is_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pte = tmp_path / f"{ARM}.pte"
    shutil.copyfile(EXAMPLES / f"{ARM}.pte", pte)
    shutil.copyfile(EXAMPLES / f"{ARM}.etrecord", tmp_path / f"{ARM}.etrecord")
    refused = str(tmp_path / f"{ARM}.etrecord")
    real_lstat = os.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if os.fspath(path) == refused:
            raise PermissionError(errno.EACCES, "Permission denied", refused)
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    result = pte_adapter.open_analysis(pte)
    assert result.program.etrecord is None
    assert any(
        "ETRecord not used" in p and "Permission denied" in p for p in result.program.problems
    ), result.program.problems
