"""``python -m codesign.report PATH…``: the paper's tables and figures from any set of runs (see __main__)."""

from codesign.report.build import Report, build_report, markdown, write_html
from codesign.report.collect import Collection, Run, collect, find_runs

__all__ = ["Collection", "Report", "Run", "build_report", "collect", "find_runs", "markdown", "write_html"]
