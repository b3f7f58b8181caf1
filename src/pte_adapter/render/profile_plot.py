"""The run-to-run picture as an image: latency per run (left) and its distribution (right), one
series per method. Runs are numbered from 0, as in `--json`. The runs-over-time analysis is drawn
on the left: the warm-up runs shaded and left out, the typical latency at the start and at the end
(the medians `first_ms` and `last_ms`, over the runs they are taken from), and the onset of a drift
as a vertical line with its run. Needs matplotlib, the optional `plot` extra; the format follows the
file suffix (`.png`, `.svg`, `.pdf`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pte_adapter.analysis.profile.report_types import DriftJSON, ProfileSummary
from pte_adapter.errors import PteFormatError
from pte_adapter.wording import time_figure

LEVEL = "#ef6c00"  # the typical latency at the start and at the end


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
    methods = [m for m in summary["methods"] if m["latency_runs"]]
    if not methods:
        raise PteFormatError("the profile holds no method runs to plot", part=summary["etdump"])
    fig, (runs_ax, hist_ax) = plt.subplots(1, 2, figsize=(10, 3.6), width_ratios=(2, 1))
    for m in methods:
        lat = m["latency_runs"]
        runs_ax.plot(range(len(lat)), lat, marker="o", ms=3, label=m["name"])
        hist_ax.hist(lat, bins=min(20, max(5, len(lat) // 2)), alpha=0.6, label=m["name"])
        drift = m["drift"]
        if drift["onset_run"] is None:  # one regime: its median means something
            median = m["latency"]["median"]
            if median is not None:
                runs_ax.axhline(median, ls="--", lw=0.8, color="grey")
        who = f"{m['name']}: " if len(methods) > 1 else ""
        _mark_drift(runs_ax, drift, len(lat), who)
    runs_ax.set_xlabel("run (from 0)")
    runs_ax.set_ylabel(f"latency ({summary['unit']})")
    runs_ax.set_title(f"{summary['file']}: latency per run")
    if len(methods) == 1:
        fig.text(
            0.01, 0.01, methods[0]["drift"]["text"], fontsize="x-small", color="#333", wrap=True
        )
    hist_ax.set_xlabel(f"latency ({summary['unit']})")
    hist_ax.set_ylabel("runs")
    hist_ax.set_title("distribution")
    if len(methods) > 1:
        runs_ax.legend(fontsize="small")
    fig.tight_layout(rect=(0, 0.06 if len(methods) == 1 else 0, 1, 1))
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


def _mark_drift(ax: Any, drift: DriftJSON, runs: int, who: str = "") -> None:
    """The warm-up (shaded), the first and last typical latency over their runs, the onset."""
    warm = drift["warmup_runs"]
    if warm:
        ax.axvspan(-0.5, warm - 0.5, color="#bbbbbb", alpha=0.35, lw=0)
        ax.annotate(
            f"{who}warm-up ({warm})",
            (warm / 2 - 0.5, 1),
            xycoords=("data", "axes fraction"),
            ha="center",
            va="top",
            fontsize="x-small",
            color="#555",
        )
    first, last, window = drift["first_ms"], drift["last_ms"], drift["window"]
    if first is not None and last is not None and drift["state"] != "identical":
        for level, start, what in (
            (first, warm - 0.5, "first"),
            (last, runs - window - 0.5, "last"),
        ):
            ax.hlines(level, start, start + window, colors=LEVEL, lw=3, alpha=0.7)
            ax.annotate(
                f"{who}{what} {time_figure(level, drift['unit'])}",
                (start, level),
                xytext=(0, 4),
                textcoords="offset points",
                fontsize="x-small",
                color=LEVEL,
            )
    onset = drift["onset_run"]
    if onset is not None:
        ax.axvline(onset - 0.5, color="#c62828", ls="--", lw=1.2)
        ax.annotate(
            f"{who}onset: run {onset} ({drift['change_pct']:+.0f} %)",
            (onset - 0.5, 0.97),
            xycoords=("data", "axes fraction"),
            xytext=(4, 0),
            textcoords="offset points",
            ha="left",
            va="top",
            fontsize="small",
            color="#c62828",
        )
