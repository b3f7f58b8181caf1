"""Start the real `model-explorer` server for a test, and talk to it as the web app does.

The one way tests (tests/e2e/), benchmarks and scripts start Model Explorer: `model_explorer_server()`
runs `model-explorer --extensions=pte_adapter --no_open_in_browser` on a free port in its own
process group, yields the URL it prints once it answers, and stops exactly that group afterwards.
`send_command()` posts a command to the server's `send_command` API, as the web app does.
`ProcessOutput` and `stop_group` are shared with the Chromium driver (tests/support/browser.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from tests.support.examples import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def model_explorer_exe() -> str:
    """The `model-explorer` of this environment (beside the running Python, else on PATH)."""
    beside = Path(sys.executable).parent / "model-explorer"
    exe = str(beside) if beside.exists() else shutil.which("model-explorer")
    if not exe:
        raise RuntimeError("model-explorer is not installed in this environment")
    return exe


class ProcessOutput:
    """Collects a child's output lines on a thread so its pipe never fills up."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: Any) -> None:
        for raw in iter(stream.readline, b""):
            with self._cond:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._cond.notify_all()

    def wait_for(
        self, pattern: str, proc: subprocess.Popen[bytes], timeout: float
    ) -> re.Match[str]:
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    m = rx.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or proc.poll() is not None:
                    raise RuntimeError(
                        f"{proc.args!r} did not print /{pattern}/ "
                        f"(exit {proc.poll()}):\n" + "\n".join(self.lines[-40:])
                    )
                self._cond.wait(min(left, 0.5))

    def text(self) -> str:
        with self._cond:
            return "\n".join(self.lines)


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the process group this module started for `proc` (its own session), and only that."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
    # Children that outlived the leader are still in the group: make sure none is left.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def model_explorer_server(
    *models: Path,
    timeout: float = 150,
    extension: bool = True,
    exe: Path | None = None,
    extension_name: str = "pte_adapter",
) -> Iterator[str]:
    """Start Model Explorer (with the `extension_name` extension unless `extension` is False);
    yield the URL it prints. `exe` is another installation's `model-explorer` (benchmarks)."""
    port = free_port()
    ext = [f"--extensions={extension_name}"] if extension else []
    proc = subprocess.Popen(
        [
            str(exe) if exe else model_explorer_exe(),
            *ext,
            "--no_open_in_browser",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *(str(m.resolve()) for m in models),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=ROOT,
        # The URL (with the model list the app opens) is printed once the server answers; Python
        # block-buffers a child's stdout on a pipe, so without this the line would only arrive
        # when the caller's own environment happened to set PYTHONUNBUFFERED.
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    out = ProcessOutput(proc.stdout)
    try:
        # Printed without a path when no model is given, with `/?data=...` otherwise.
        url = out.wait_for(rf"(http://127\.0\.0\.1:{port}(?:/\S*)?)$", proc, timeout).group(1)
        yield url
    finally:
        stop_group(proc)


def model_url(server_url: str, model: Path) -> str:
    """The URL that opens `model` on a running Model Explorer server (what its command line prints
    for a model given there)."""
    data = quote(json.dumps({"models": [{"url": str(model.resolve())}]}))
    return f"{server_base(server_url)}/?data={data}"


def server_base(server_url: str) -> str:
    """`http://host:port` of the server that printed `server_url`."""
    parts = urlsplit(server_url)
    return f"{parts.scheme}://{parts.netloc}"


def get_json(server_url: str, path: str, timeout: float = 30) -> Any:
    """GET `path` (e.g. `/api/v1/get_extensions`) from the server and decode its JSON."""
    with urllib.request.urlopen(f"{server_base(server_url)}{path}", timeout=timeout) as r:
        return json.loads(r.read())


def send_command(server_url: str, cmd: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
    """POST an extension command (`extensionId`, `cmdId`, ...) as the web app does; its reply."""
    req = urllib.request.Request(
        f"{server_base(server_url)}/apipost/v1/send_command",
        data=json.dumps(cmd).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        result: dict[str, Any] = json.loads(r.read())
        return result
