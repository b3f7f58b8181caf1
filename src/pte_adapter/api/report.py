"""The report and summary objects of the Python API, which show themselves in a notebook.

    report = pte_adapter.report("model.pte")             # or report(before, after)
    report.save("report.html")                           # what `pte-adapter report` writes
    report                                               # in Jupyter: the report inline
    pte_adapter.summarize(program)                       # in Jupyter: the strip and the numbers

Model Explorer does not run inside Jupyter; these do (`_repr_html_`), from the same analysis and
the same renderer as the HTML file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pte_adapter.analysis.program_analysis import ProgramAnalysis

# The HTML renderer and the diff are imported where they are used: `import pte_adapter` (and so
# Model Explorer's start with this adapter) does not pay for them (issue 25).


class Report:
    """One program's report (`before` only) or the comparison of two."""

    def __init__(self, before: ProgramAnalysis, after: ProgramAnalysis | None = None) -> None:
        self.analysis = before
        self.after = after

    @property
    def html(self) -> str:
        """The self-contained HTML file's text."""
        from pte_adapter.analysis.diff import diff_programs
        from pte_adapter.render.html import compare_html, report_html

        if self.after is None:
            return report_html(self.analysis)
        return compare_html(self.analysis, self.after, diff_programs(self.analysis, self.after))

    def save(self, path: str | Path) -> Path:
        out = Path(path)
        out.write_text(self.html, encoding="utf-8")
        return out

    def _repr_html_(self) -> str:
        from pte_adapter.analysis.diff import diff_programs
        from pte_adapter.render.html import compare_fragment, report_fragment

        if self.after is None:
            return report_fragment(self.analysis)
        return compare_fragment(self.analysis, self.after, diff_programs(self.analysis, self.after))

    def __repr__(self) -> str:
        name = self.analysis.program.path.name if self.analysis.program.path else "program"
        if self.after is not None and self.after.program.path is not None:
            name += f" -> {self.after.program.path.name}"
        return f"<pte_adapter.Report {name}>"


class Summary(dict[str, Any]):
    """`summarize()`'s numbers: a plain dict (the JSON of `summary --json`) that, in a notebook,
    shows the partition strip and the numbers of each method."""

    def __init__(self, data: dict[str, Any], analysis: ProgramAnalysis) -> None:
        super().__init__(data)
        self._analysis = analysis

    def _repr_html_(self) -> str:
        from pte_adapter.render.html import report_fragment

        return report_fragment(self._analysis, full=False)
