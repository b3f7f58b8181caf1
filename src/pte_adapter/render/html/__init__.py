"""The HTML report: one self-contained file (no server, no network) to attach to a pull request or
keep as a CI artifact, and the same pictures inline in a notebook. Reads only the analysis."""

from pte_adapter.render.html.compare import compare_fragment, compare_html
from pte_adapter.render.html.page import report_fragment, report_html

__all__ = ["compare_fragment", "compare_html", "report_fragment", "report_html"]
