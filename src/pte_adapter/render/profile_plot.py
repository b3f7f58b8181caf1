"""The run-to-run picture as an image: latency per run (left) and its distribution (right), one
series per method. Needs matplotlib, the optional `plot` extra; the format follows the file suffix
(`.png`, `.svg`, `.pdf`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pte_adapter.analysis.profile.report_types import ProfileSummary
from pte_adapter.errors import PteFormatError


class PlotUnavailableError(RuntimeError):
    """matplotlib is not installed (pip install "pte-adapter[plot]")."""


def plot_latency(summary: ProfileSummary, out: Path) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display; never opens a window
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise PlotUnavailableError(
            'drawing the plot needs matplotlib: pip install "pte-adapter[plot]"'
        ) from e
    methods = [m for m in summary["methods"] if m["latency_ms"]]
    if not methods:
        raise PteFormatError("the profile holds no method runs to plot", part=summary["etdump"])
    fig, (runs_ax, hist_ax) = plt.subplots(1, 2, figsize=(10, 3.6), width_ratios=(2, 1))
    for m in methods:
        lat = m["latency_ms"]
        runs_ax.plot(range(1, len(lat) + 1), lat, marker="o", ms=3, label=m["name"])
        hist_ax.hist(lat, bins=min(20, max(5, len(lat) // 2)), alpha=0.6, label=m["name"])
        median = m["latency"]["median"]
        if median is not None:
            runs_ax.axhline(median, ls="--", lw=0.8, color="grey")
    runs_ax.set_xlabel("run")
    runs_ax.set_ylabel("latency (ms)")
    runs_ax.set_title(f"{summary['file']}: latency per run")
    hist_ax.set_xlabel("latency (ms)")
    hist_ax.set_ylabel("runs")
    hist_ax.set_title("distribution")
    if len(methods) > 1:
        runs_ax.legend(fontsize="small")
    fig.tight_layout()
    # Fixed metadata: the same profile gives the same bytes (no creation date, no tool version).
    metadata: dict[str, Any] = {}
    suffix = out.suffix.lower()
    if suffix == ".svg":
        metadata = {"Date": None, "Creator": None}
    elif suffix == ".png":
        metadata = {"Software": None}
    # A fixed salt for the ids of SVG elements (random otherwise).
    with matplotlib.rc_context({"svg.hashsalt": "pte-adapter"}):
        fig.savefig(out, metadata=metadata)
    plt.close(fig)
    return out
