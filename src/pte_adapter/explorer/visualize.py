"""`pte_adapter.visualize("model.pte")`: the program and its ETRecord side by side in Model Explorer,
their selections synced by the mapping `pte-adapter sync` writes.

What Model Explorer offers (`ai-edge-model-explorer` 0.1.34, read from its web app and server):
its sync navigation takes a mapping from the "Upload mapping from computer" button, or from the
`syncNavigationData` of the visualizer's config - which only a page embedding the visualizer
component can set. The standalone server's URL (`?data=`) carries the models, the panes
(`uiState`: one per pane, with its graph) and the sync *mode*, never the mapping, and its Python
`ModelExplorerConfig` has no sync field.

So this starts Model Explorer's own server (`model-explorer --extensions=pte_adapter`, a child
process) and, in front of it, a small page server of ours on the address it prints: every request
goes through to Model Explorer unchanged, except the app's page, to which one script is added. The
URL opens both files in a split view (left: the method graph, right: the ETRecord's graph); the
script waits for both panes and hands the mapping to Model Explorer's sync service exactly as the
upload button does (`processJsonData(text, "from_computer")`, reached through the renderers Model
Explorer registers on `window.me_test`). Should a Model Explorer release drop that hook, the
panes still open and the printed line names the mapping file to upload by hand.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import webbrowser
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from pte_adapter.api.etrecord_view import SyncMapping, sync_mapping
from pte_adapter.errors import PteFormatError

ADAPTER_ID: Final = "pte_adapter"
SYNC_MODE: Final = "from_computer"  # Model Explorer's "Upload mapping from computer" mode
STARTUP_SECONDS: Final = 60.0
# Headers a proxy must not pass on (RFC 9110 hop-by-hop), and those it sets itself.
_HOP: Final = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host"}
)

# Added to Model Explorer's page: once both panes are drawn, the mapping is loaded as an upload
# would load it. `__MAPPING__` is the mapping's JSON text as a JS string literal.
_LOADER: Final = """<script>
(function () {
  var text = __MAPPING__, deadline = Date.now() + 180000;
  function load() {
    var r = window.me_test && window.me_test.renderers;
    var pane = r && r[0] && r[1];
    var service = pane && pane.syncNavigationService;
    if (service && service.processJsonData && service.mode) {
      var error = service.processJsonData(text, "__MODE__");
      if (!error) { service.mode.set("__MODE__"); window.pteAdapterSync = "loaded"; }
      else { window.pteAdapterSync = error; console.error(error); }
      return;
    }
    if (Date.now() < deadline) { setTimeout(load, 250); }
    else { window.pteAdapterSync = "Model Explorer's panes did not appear"; }
  }
  load();
})();
</script>"""


@dataclass
class Visualization:
    """A running side-by-side view: its `url`, the mapping it loaded (also written to
    `mapping_file`), and `stop()` / `wait()`."""

    url: str
    mapping: SyncMapping
    mapping_file: Path
    _server: subprocess.Popen[bytes] = field(repr=False)
    _front: http.server.ThreadingHTTPServer = field(repr=False)
    _folder: str = field(repr=False, default="")

    def stop(self) -> None:
        """Stop the page server and Model Explorer's server (its whole process group)."""
        self._front.shutdown()
        self._front.server_close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._server.pid, signal.SIGTERM)
        try:
            self._server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._server.pid, signal.SIGKILL)
            self._server.wait()
        if self._folder:
            shutil.rmtree(self._folder, ignore_errors=True)

    def wait(self) -> None:
        """Serve until interrupted (Ctrl-C), then stop."""
        try:
            while self._server.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()


def visualize(
    program: str | Path,
    *,
    etrecord: str | Path | None = None,
    to: str = "auto",
    method: str = "forward",
    host: str = "localhost",
    port: int = 8080,
    open_browser: bool = True,
    block: bool = True,
) -> Visualization:
    """Open the program (left) and its ETRecord's graph `to` (right: the exported program when
    recorded, else the edge program; see `pte-adapter sync`) side by side in Model Explorer, with
    the sync mapping loaded: select a node on one side and what it became (or came from) is
    selected on the other. Serves on `host`:`port` (the next free port from it); blocks until
    Ctrl-C unless `block=False`, which returns the running `Visualization`. Raises
    PteFormatError (one line) when no mapping can be made."""
    mapping = sync_mapping(program, etrecord=etrecord, to=to, method=method)
    folder = tempfile.mkdtemp(prefix="pte_adapter_sync_")
    mapping_file = Path(folder) / f"{mapping.program.stem}.sync.json"
    text = json.dumps(mapping.document)
    mapping_file.write_text(text, encoding="utf-8")
    inner = _free_port("127.0.0.1", 0)
    server = _start_model_explorer(inner)
    try:
        front = _front(host, _free_port(host, port), inner, text)
    except BaseException:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGTERM)
        raise
    base = f"http://{host}:{front.server_address[1]}/"
    view = Visualization(
        base + "?data=" + quote(json.dumps(_url_data(mapping))),
        mapping,
        mapping_file,
        server,
        front,
        folder,
    )
    print(
        f"Model Explorer: {view.url}\n  {mapping.program.name} {mapping.left_graph} (left) <-> "
        f"{mapping.etrecord.name} {mapping.right_graph} (right), {mapping.entries} synced steps"
        + (f" ({mapping.note})" if mapping.note else "")
        + f"\n  the mapping: {mapping_file} (Sync > Upload mapping from computer, if it is not "
        "loaded)"
    )
    if open_browser:
        webbrowser.open(view.url)
    if block:
        view.wait()
    return view


def _url_data(mapping: SyncMapping) -> dict[str, Any]:
    """Model Explorer's `?data=`: both files, and one pane per graph (its `uiState`)."""

    def pane(graph: str, selected: bool) -> dict[str, Any]:
        return {
            "deepestExpandedGroupNodeIds": [],
            "selectedNodeId": "",
            "selectedGraphId": graph,
            "selectedCollectionLabel": "",
            "widthFraction": 0.5,
            "selected": selected,
        }

    return {
        "models": [
            {"url": str(mapping.program.resolve()), "adapterId": ADAPTER_ID},
            {"url": str(mapping.etrecord.resolve()), "adapterId": ADAPTER_ID},
        ],
        "uiState": {
            "paneStates": [pane(mapping.left_graph, True), pane(mapping.right_graph, False)]
        },
        "sync": {"mode": SYNC_MODE},
    }


def _free_port(host: str, start: int) -> int:
    """`start` or the next free port after it (0: any free port)."""
    for port in [0] if start == 0 else range(start, start + 100):
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise PteFormatError(f"no free port from {start} to {start + 99} on {host}")


def _start_model_explorer(port: int) -> subprocess.Popen[bytes]:
    """Model Explorer's server with this adapter, in a process group of its own, once it answers."""
    cmd = [
        sys.executable,
        "-m",
        "model_explorer",
        f"--extensions={ADAPTER_ID}",
        "--no_open_in_browser",
        "--host=127.0.0.1",
        f"--port={port}",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PteFormatError(
                f"Model Explorer's server stopped at start (exit {proc.returncode})"
            )
        health = f"http://127.0.0.1:{port}/check_health"
        with contextlib.suppress(OSError), urllib.request.urlopen(health, timeout=2) as r:
            if r.status == 200:
                return proc
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGTERM)
    raise PteFormatError(f"Model Explorer's server did not answer within {STARTUP_SECONDS:.0f} s")


def _front(host: str, port: int, inner: int, mapping_text: str) -> http.server.ThreadingHTTPServer:
    """The page server: Model Explorer's, with the loader script added to its page."""
    loader = _LOADER.replace("__MODE__", SYNC_MODE).replace(
        "__MAPPING__", json.dumps(mapping_text).replace("<", "\\u003c")
    )
    handler = type("Front", (_Front,), {"inner": inner, "loader": loader.encode()})
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _Front(http.server.BaseHTTPRequestHandler):
    """One request to the page server, passed through to Model Explorer's (`inner`: its port)."""

    protocol_version = "HTTP/1.1"
    inner = 0
    loader = b""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        if self.path.startswith("/apistream/"):
            # The server's push channel (it asks open pages to reload when a watched file
            # changes; nothing is watched here): 204 tells the page not to reconnect.
            self._reply(204, [], b"")
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        conn = http.client.HTTPConnection("127.0.0.1", self.inner, timeout=600)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            if self.path.split("?")[0] in ("/", "/index.html") and resp.status == 200:
                data = data.replace(b"</body>", self.loader + b"</body>", 1)
            self._reply(resp.status, resp.getheaders(), data)
        except (OSError, http.client.HTTPException):
            with contextlib.suppress(OSError):
                self.send_error(502, "Model Explorer's server did not answer")
        finally:
            conn.close()

    def _reply(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in _HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
