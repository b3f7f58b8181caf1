"""Time to the first screen and to the fully expanded view in Model Explorer, this adapter beside a
peer adapter, on the same program, one run after the other.

    python -m benchmarks.bench_browser                       # the large XNNPACK program
    python -m benchmarks.bench_browser --pte examples/mv2_lrn_ethosu85.pte --repeat 3

Both adapters run in the real `model-explorer` web app in Debian's headless Chromium (as in
tests/e2e/test_browser.py). The peer is Arm's `pte-adapter-model-explorer` 0.2.0, installed into a venv
of its own under bench_out/ (never imported here: it runs as its own server).

What is timed, per adapter and run, from the moment the page is asked to load:
- convert: the app's conversion request to the server returns (the adapter's work + transfer);
- layout: Model Explorer's worker answers with the processed, laid-out graph;
- first screen: the first frame after that in which the renderer has nodes to draw and after which
  the page's main thread is idle (no animation frame longer than 50 ms for 0.5 s): the picture is
  complete;
- expanded: the same after a click on the toolbar's "expand all layers" button (and, within it,
  when the worker's layout of the expanded graph came back: the rest is drawing).
The timings include what a user waits for: conversion, transfer, layout and drawing (here in
software WebGL: the headless browser has no GPU, so drawing is what dominates).

The adapters' runs alternate (ours, the peer's, the peer's, ours, ...), each in a fresh browser: a
browser kept across runs carries its GPU process' state over, and made the peer's expand step
scatter from 8.7 s to 15.3 s between readings. Beside the times, `quads/frame` counts the WebGL
instances (node bodies and borders, label glyphs, edge segments and arrowheads) of the expanded
picture's last frame: the drawing's work, exact and repeatable where the times are not. Model
Explorer draws an edge whose three layout points are not in line as a curve of 50 segments.

Each adapter keeps one server across its runs. This adapter keeps the graphs it converted
(`explorer/cache.py`), so only its first run converts: that run is a first open, the others are
the same file opened again (the peer keeps nothing, so each of its runs converts). The first
screen of each run is printed, and the first open's beside the median.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.browser import chromium, model_explorer_server, new_page

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_OUT = ROOT / "bench_out"
PEER = "pte-adapter-model-explorer==0.2.0"
PEER_EXTENSION = "pte_adapter_model_explorer"

# Records the app's conversion request, its worker messages and every animation frame.
_PROBE = """
window.__bench = {fetches: [], worker: [], frames: []};
const NativeWorker = window.Worker;
window.Worker = function (url, opts) {
  const w = new NativeWorker(url, opts);
  const post = w.postMessage.bind(w);
  w.postMessage = (m, ...rest) => {
    window.__bench.worker.push(['send', m && m.eventType, performance.now()]);
    return post(m, ...rest);
  };
  w.addEventListener('message', e =>
    window.__bench.worker.push(['recv', e.data && e.data.eventType, performance.now()]));
  return w;
};
window.Worker.prototype = NativeWorker.prototype;
const nativeFetch = window.fetch;
window.fetch = async (...args) => {
  const t = performance.now();
  const r = await nativeFetch(...args);
  window.__bench.fetches.push([String(args[0]), t, performance.now()]);
  return r;
};
// WebGL instances drawn, and per animation frame in which anything was drawn: Model Explorer
// draws nodes, group bodies, label glyphs and edge segments as instanced quads.
window.__bench.drawn = 0;
window.__bench.drawnFrames = [];
for (const P of [window.WebGL2RenderingContext, window.WebGLRenderingContext]) {
  if (!P) continue;
  for (const name of ['drawArraysInstanced', 'drawElementsInstanced']) {
    const native = P.prototype[name];
    if (!native) continue;
    P.prototype[name] = function (...a) { window.__bench.drawn += a[a.length - 1]; return native.apply(this, a); };
  }
}
const frame = t => {
  window.__bench.frames.push(t);
  if (window.__bench.drawn) { window.__bench.drawnFrames.push([t, window.__bench.drawn]); window.__bench.drawn = 0; }
  requestAnimationFrame(frame);
};
requestAnimationFrame(frame);
"""

# The first screen is complete when the renderer has nodes and frames run freely again.
_SETTLED = """([since, quiet]) => {
  const b = window.__bench;
  const r = window.me_test && window.me_test.renderers && window.me_test.renderers[0];
  if (!r || !r.nodesToRender || r.nodesToRender.length === 0) return null;
  const f = b.frames.filter(t => t >= since);
  if (f.length < 2) return null;
  const last = f[f.length - 1];
  if (performance.now() - last > 100) return null;
  // The last long gap between frames marks the end of the drawing work.
  let end = f[0];
  for (let i = 1; i < f.length; i++) if (f[i] - f[i - 1] > 50) end = f[i];
  return performance.now() - end >= quiet ? end : null;
}"""


def _ensure_peer_venv(out: Path) -> Path:
    venv = out / "peer_venv"
    exe = venv / "bin" / "model-explorer"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", PEER], check=True)
    return exe


def _wait_settled(page: Any, since: float, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        end = page.evaluate(_SETTLED, [since, 500])
        if end is not None:
            return float(end)
        page.wait_for_timeout(100)
    raise TimeoutError("the graph was not drawn in time")


def measure(url: str, browser: Any, timeout: float) -> dict[str, float]:
    page = new_page(browser)
    page.add_init_script(_PROBE)
    page.goto(url)
    page.wait_for_function(
        "() => window.__bench.worker.some(m => m[0] === 'recv' && m[1] === 1)",
        timeout=timeout * 1000,
    )
    first = _wait_settled(page, 0, timeout)
    b = page.evaluate("window.__bench")
    convert = next((end for u, _s, end in b["fetches"] if "send_command" in u), float("nan"))
    layout = next(t for kind, ev, t in b["worker"] if kind == "recv" and ev == 1)
    nodes = page.evaluate("window.me_test.renderers[0].nodesToRender.length")
    # Expand all layers, as a user does from the toolbar.
    click = page.evaluate("performance.now()")
    page.locator("renderer-wrapper .toolbar mat-icon", has_text="unfold_more_double").first.click()
    page.wait_for_function(
        "(t) => window.__bench.worker.some(m => m[0] === 'recv' && m[1] === 3 && m[2] > t)",
        arg=click,
        timeout=timeout * 1000,
    )
    expanded = _wait_settled(page, click, timeout)
    expanded_nodes = page.evaluate("window.me_test.renderers[0].nodesToRender.length")
    worker = page.evaluate("window.__bench.worker")
    drawn = [n for t, n in page.evaluate("window.__bench.drawnFrames") if t > click]
    laid_out = next(t for kind, ev, t in worker if kind == "recv" and ev == 3 and t > click)
    page.context.close()
    return {
        "convert_s": convert / 1000,
        "layout_s": layout / 1000,
        "first_screen_s": first / 1000,
        "first_screen_nodes": nodes,
        "expand_s": (expanded - click) / 1000,
        # the worker's layout of the expanded graph; the rest of expand_s is drawing
        "expand_layout_s": (laid_out - click) / 1000,
        "expanded_nodes": expanded_nodes,
        "to_expanded_view_s": (first + expanded - click) / 1000,
        # instanced quads of the expanded picture's last frame, and of every frame since the click
        "expanded_frame_quads": drawn[-1] if drawn else 0,
        "expand_quads": sum(drawn),
    }


Adapter = tuple[str, Path | None, str]  # (name, another installation's model-explorer, extension)


def run(
    adapters: list[Adapter], pte: Path, repeat: int, timeout: float
) -> dict[str, list[dict[str, float]]]:
    """Each adapter's runs, alternating (A B, B A, A B, ...) so a drift of the machine's load
    falls on both alike; each run in a browser of its own, so no run inherits the last one's
    GPU process (its caches and memory)."""
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in adapters}
    with contextlib.ExitStack() as servers:
        urls = {
            name: servers.enter_context(model_explorer_server(pte, exe=exe, extension_name=ext))
            for name, exe, ext in adapters
        }
        for i in range(repeat):
            for name, _, _ in adapters if i % 2 == 0 else adapters[::-1]:
                with chromium() as browser:
                    results[name].append(measure(urls[name], browser, timeout))
                print(f"  {name}: {json.dumps(results[name][-1])}", flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pte", type=Path, help="the program (default: build the large one)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--only", choices=("ours", "peer"))
    args = ap.parse_args()
    if args.pte is None:
        from benchmarks.bench_large import build

        args.pte = build(args.out)
    adapters: list[Adapter] = []
    if args.only != "peer":
        adapters.append(("pte_adapter (this)", None, "pte_adapter"))
    if args.only != "ours":
        adapters.append((PEER, _ensure_peer_venv(args.out), PEER_EXTENSION))
    results = run(adapters, args.pte, args.repeat, args.timeout)
    print(f"\n{args.pte.name}: median of {args.repeat} runs (seconds from page load)")
    print(
        f"{'adapter':34} {'convert':>8} {'layout':>8} {'first screen':>13} {'expand':>8} "
        f"{'(layout)':>9} {'to expanded':>12} {'nodes first/expanded':>21} {'quads/frame':>12}"
    )
    medians: dict[str, dict[str, float]] = {}
    for name, runs in results.items():
        med = medians[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"{name:34} {med['convert_s']:8.2f} {med['layout_s']:8.2f} "
            f"{med['first_screen_s']:13.2f} {med['expand_s']:8.2f} "
            f"{med['expand_layout_s']:9.2f} {med['to_expanded_view_s']:12.2f} "
            f"{int(med['first_screen_nodes']):>10}/{int(med['expanded_nodes']):<10} "
            f"{int(med['expanded_frame_quads']):>12,}"
        )
        each = ", ".join(f"{r['expand_s']:.2f}" for r in runs)
        print(f"{'':34} expand of each run: {each}")
        firsts = ", ".join(f"{r['first_screen_s']:.2f}" for r in runs)
        print(f"{'':34} first screen of each run: {firsts} (the first: the first open)")
    if len(medians) == 2:
        ours, peer = medians.values()
        first_ours, first_peer = (runs[0]["first_screen_s"] for runs in results.values())
        print(
            f"ours / the peer's: first screen {ours['first_screen_s'] / peer['first_screen_s']:.2f}x "
            f"(first open {first_ours:.2f} / {first_peer:.2f} s, {first_ours / first_peer:.2f}x), "
            f"expand {ours['expand_s'] / peer['expand_s']:.2f}x, quads of the expanded picture "
            f"{ours['expanded_frame_quads'] / max(peer['expanded_frame_quads'], 1):.2f}x"
        )


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
