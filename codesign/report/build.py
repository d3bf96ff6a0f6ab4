"""One report from many runs: the tables (``Report``), a self-contained HTML page and Markdown (``report.md``)."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import polars as pl
from jinja2 import Environment, select_autoescape

from codesign.redact import redact
from codesign.report import plots, tables
from codesign.report.collect import Collection
from codesign.score import paired
from codesign.score.metrics import CELL, whole_tables
from codesign.score.noise import noise_frame
from codesign.store import is_remote, local_path
from codesign.track.report import html_table

# The main table's columns, in the order shown (the rest stay in the parquet files).
MAIN_COLUMNS = [*CELL, "solver_family", "judge_family", "verifier_family", "track", "planned", "scored", "tasks",
                "strict", "strict_lo", "strict_hi", "strict_sd", "graded", "full_pass", "zero_pass", "turns_median",
                "tool_calls", "input_tokens", "output_tokens", "cost_usd", "solve_s_median", "errors",
                "grading_errors", "aborted", "capped", "skipped"]  # fmt: skip


@dataclass
class Report:
    collection: Collection
    main: pl.DataFrame
    breakdowns: pl.DataFrame
    sensitivity: pl.DataFrame
    rho: pl.DataFrame
    attribution: pl.DataFrame
    adjusted: pl.DataFrame
    agreement: pl.DataFrame  # every pair of raters, by kind, with intervals (codesign.score.agreement)
    denominators: pl.DataFrame
    alpha: pl.DataFrame  # Krippendorff's α over every rater of an item, by kind
    noise: pl.DataFrame  # judges' flip rates where criteria were judged several times (evaluator.judge_samples)
    figures: dict[str, list[tuple[str, bytes]]] = field(default_factory=dict)
    comparison: pl.DataFrame | None = None  # --compare A B (codesign.score.paired)
    differences: pl.DataFrame | None = None  # the tasks they differ most on, and those only one scored

    def frames(self) -> dict[str, pl.DataFrame]:
        compared = {}
        if self.comparison is not None and self.differences is not None:
            compared = {"comparison": self.comparison, "differences": self.differences}
        return compared | {
            "main": self.main,
            "breakdowns": self.breakdowns,
            "sensitivity": self.sensitivity,
            "rho": self.rho,
            "attribution": self.attribution,
            "adjusted": self.adjusted,
            "agreement": self.agreement,
            "alpha": self.alpha,
            "noise": self.noise,
            "denominators": self.denominators,
        }

    def agreement_view(self) -> pl.DataFrame:
        """The pairs as one reads them: each rate with its interval in one column."""
        return tables.with_intervals(self.agreement.drop("human_pair"), AGREEMENT_MEASURES)

    def alpha_view(self) -> pl.DataFrame:
        return tables.with_intervals(self.alpha, {"alpha": "α [95 % ci]"})


PAIRED_TITLE = "Paired comparison A − B over the tasks both scored (bootstrap 95 % ci; sign and permutation p)"
NOISE_TITLE = "Judge noise: criteria whose k samples disagree (flip rate, Wilson 95 % ci)"
NOISE_MEASURES = {"flip_rate": "flip rate [95 % ci]"}
AGREEMENT_TITLE = "Agreement between graders and people (pairs; rates against the reference; 95 % bootstrap ci)"
AGREEMENT_MEASURES = {"agreement": "agreement [95 % ci]", "kappa": "κ", "false_pass": "false PASS",
                      "false_fail": "false FAIL"}  # fmt: skip


def build_report(collection: Collection, draw: bool = True, compare: tuple[str, str] | None = None) -> Report:
    tasks = collection.tasks
    main = tables.main_table(tasks)
    side, rho = tables.sensitivity(main)
    breakdowns = tables.breakdowns(tasks)
    pairs, alpha = tables.agreement(collection.verdicts, collection.labels)
    report = Report(
        collection,
        main,
        breakdowns,
        side,
        rho,
        tables.attribution(tasks),
        tables.adjusted(tasks, main),
        pairs,
        tables.denominators(tasks, collection.verdicts),
        alpha,
        noise_frame(collection.verdicts),
    )
    if compare:
        a, b = (paired.parse_cell(c) for c in compare)
        report.comparison, report.differences = paired.compare(tasks, a, b)
    if draw:
        report.figures = _figures(report)
    return report


def _figures(report: Report) -> dict[str, list[tuple[str, bytes]]]:
    main = report.main
    heat = []
    if main["harness"].n_unique() > 1:
        heat.append(("harness × model", plots.heat_map(main, "harness", "model")))
    if main["evaluator"].n_unique() > 1:
        heat.append(("evaluator × model", plots.heat_map(main, "evaluator", "model")))
    figures: dict[str, list[tuple[str, bytes | None]]] = {
        "main": [("strict per cell and track", plots.score_bars(main))],
        "breakdowns": [
            ("ME by modality", plots.breakdown_bars(report.breakdowns, "modality", "ME by attachment modality")),
            ("RE by edit scope", plots.breakdown_bars(report.breakdowns, "edit_types", "RE by number of edit types")),
        ],
        "heat": heat,
        "agreement": [("agreement", plots.agreement_bars(report.agreement))],
    }
    return {k: [(name, png) for name, png in v if png] for k, v in figures.items()}


def write_html(report: Report, path: Path, title: str = "codesign report") -> Path:
    """A self-contained page: tables, figures embedded as data URIs, links to each run's own report and each
    trial's stored evidence (relative to the page, so the folder can be moved or shared as a whole)."""
    out_dir = path.parent.resolve()
    kept = report.collection.tasks
    runs = []
    for run in report.collection.runs:
        n = kept.filter(pl.col("run") == run.name).height
        href = os.path.relpath(run.report, out_dir) if run.report else None
        runs.append({"name": run.name, "kept": n, "href": href})
    by_run = {r.name: r for r in report.collection.runs}
    trials = []
    for row in kept.iter_rows(named=True):
        run = by_run[row["run"]]
        evidence_href = evidence_uri = None
        if row.get("trial_key") and row.get("eval_key") and run.store:
            where = f"trials/{row['trial_key']}/evals/{row['eval_key']}"
            if is_remote(run.store):
                evidence_uri = f"{run.store.rstrip('/')}/{where}"
            elif (folder := local_path(run.store) / where).is_dir():
                evidence_href = os.path.relpath(folder, out_dir) + "/"
        trials.append(
            {
                "cell": " · ".join(f"{c}={row[c]}" for c in CELL),
                "task_id": row["task_id"],
                "seed": row["seed"],
                "status": row["status"],
                "strict": "" if row["strict"] is None else f"{row['strict']:.3f}",
                "run": run.name,
                "report": os.path.relpath(run.report, out_dir) if run.report else None,
                "evidence_href": evidence_href,
                "evidence_uri": evidence_uri,
            }
        )
    data_uri = lambda png: "data:image/png;base64," + base64.b64encode(png).decode()  # noqa: E731
    main = report.main.select([c for c in MAIN_COLUMNS if c in report.main.columns])
    template = resources.files("codesign.report").joinpath("templates/report.html").read_text()
    html = (
        Environment(autoescape=select_autoescape(default=True))
        .from_string(template)
        .render(
            title=title,
            subtitle=f"{kept.height} trials from {len(report.collection.used)} of {len(report.collection.runs)} runs",
            runs=runs,
            duplicates=report.collection.duplicates,
            main=html_table(main),
            denominators=html_table(report.denominators),
            combined=html_table(main.filter(pl.col("track") == "ALL")),
            breakdowns=html_table(report.breakdowns),
            sensitivity=html_table(report.sensitivity) if report.sensitivity.height else "",
            rho=html_table(report.rho),
            attribution=html_table(report.attribution),
            adjusted=html_table(report.adjusted),
            agreement=html_table(report.agreement_view()) if report.agreement.height else "",
            alpha=html_table(report.alpha_view()) if report.alpha.height else "",
            labels=report.collection.labels.height,
            noise=html_table(tables.with_intervals(report.noise, NOISE_MEASURES)) if report.noise.height else "",
            comparison=html_table(report.comparison) if report.comparison is not None else "",
            differences=html_table(report.differences) if report.differences is not None else "",
            figures={k: [(n, data_uri(p)) for n, p in v] for k, v in report.figures.items()},
            trials=trials,
        )
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(redact(html))
    return path


def nonempty_buckets(counted: pl.DataFrame) -> pl.DataFrame:
    """The denominators with the buckets that are not empty, as text shows them (the page and parquet keep all)."""
    return counted.select([c for c in counted.columns if c in CELL or c in ("planned", "scored") or counted[c].sum()])


def markdown(report: Report) -> str:
    """The tables as Markdown, every column, for a paper draft (``report.md``; the terminal gets report.console)."""
    main = report.main.select([c for c in MAIN_COLUMNS if c in report.main.columns])
    shown = nonempty_buckets(report.denominators)
    parts = [
        ("Main table", main),
        ("Denominators (trials planned, scored, and the buckets that are not empty; criteria by grader)", shown),
        ("Combined (all tasks weighted equally)", main.filter(pl.col("track") == "ALL")),
        ("Breakdowns", report.breakdowns),
    ]
    if report.sensitivity.height:
        parts += [("Sensitivity", report.sensitivity), ("Rank stability (Spearman ρ)", report.rho)]
    parts += [("Failure attribution", report.attribution), ("Environment-adjusted", report.adjusted)]
    if report.agreement.height:
        parts.append((AGREEMENT_TITLE, report.agreement_view()))
    if report.alpha.height:
        parts.append(("Krippendorff's α (ordinal) over every rater of a criterion", report.alpha_view()))
    if report.noise.height:
        parts.append((NOISE_TITLE, tables.with_intervals(report.noise, NOISE_MEASURES)))
    if report.comparison is not None and report.differences is not None:
        parts += [(PAIRED_TITLE, report.comparison), ("Tasks where they differ most, and tasks only one scored",
                                                      report.differences)]  # fmt: skip
    text = []
    for title, frame in parts:
        text.append(f"### {title}\n\n{_markdown_table(frame)}")
    return "\n\n".join(text)


def _markdown_table(frame: pl.DataFrame) -> str:
    if frame.is_empty():
        return "_none_"
    shown = frame.with_columns(pl.col(pl.Float64).round(3))
    with whole_tables("MARKDOWN", width=10_000, text=60):
        return str(shown)
