#!/usr/bin/env python3
"""Write the runtime operator lists the examples are checked against (`pte-adapter ops
--runtime-ops`), each by ExecuTorch's own tools, into examples/runtimes/:

- `pip_portable_lib.txt`: the operators ExecuTorch's Python runtime (the pip wheel's
  `portable_lib`, with `executorch.kernels.quantized` loaded, as `examples/profile_examples.py`
  runs the examples) registers, one a line, as `_get_operator_names()` gives them; its header
  comment names the backends it registers (`_get_registered_backend_names()`);
- `<example>.selected_operators.yaml`: what ExecuTorch's `gen_oplist` writes for that example,
  the list a selective build of a runtime for exactly that program starts from (`debug_info`
  holds the example's path relative to the repository, so no machine path is stored).

    python -m examples.build_runtime_lists

Run from the repository's root; rerun after upgrading executorch (tests/oracle/test_needs.py
fails when the committed list is not the installed runtime's).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

RUNTIMES = Path("examples") / "runtimes"
PIP_LIST = RUNTIMES / "pip_portable_lib.txt"
# The programs a runtime list is built for: an Ethos-U program with a CPU island (aten and
# quantized kernels) and a portable one (aten kernels only).
SELECTED_FOR = ("mv2_lrn_ethosu85", "undelegated")


def pip_runtime() -> tuple[list[str], list[str]]:
    """The operator names and backend ids of ExecuTorch's Python runtime, as it lists them."""
    import executorch.kernels.quantized  # noqa: F401  (registers the quantized kernels)
    from executorch.extension.pybindings import portable_lib

    names = list(portable_lib._get_operator_names())
    return names, list(portable_lib._get_registered_backend_names())


def write_pip_list() -> None:
    from importlib.metadata import version

    names, backends = pip_runtime()
    header = [
        f"# The operators ExecuTorch's Python runtime registers (executorch {version('executorch')}",
        "# pip wheel: portable_lib with executorch.kernels.quantized loaded), as",
        "# _get_operator_names() lists them; written by examples/build_runtime_lists.py.",
        f"# Its backends (_get_registered_backend_names()): {','.join(backends)}",
    ]
    PIP_LIST.write_text("\n".join(header + sorted(names)) + "\n", encoding="utf-8")


def write_selected(name: str) -> None:
    from executorch.codegen.tools.gen_oplist import gen_oplist

    out = RUNTIMES / f"{name}.selected_operators.yaml"
    with contextlib.redirect_stdout(io.StringIO()):  # gen_oplist prints what it reads
        gen_oplist(output_path=out, model_file_path=f"examples/{name}.pte")


def main() -> int:
    RUNTIMES.mkdir(exist_ok=True)
    write_pip_list()
    for name in SELECTED_FOR:
        write_selected(name)
    for path in sorted(RUNTIMES.iterdir()):
        print(f"{path}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
