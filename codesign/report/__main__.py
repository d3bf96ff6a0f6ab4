"""``python -m codesign.report [PATH…] [--store URI] [--filter KEY=VALUE] [--out report.html] [--wandb]``

Takes any mix of run folders and multirun/sweep folders (every folder with a ``tasks.parquet`` at or below
each PATH), keeps each trial once (runs that overlap are de-duplicated), and prints the paper's tables as
Markdown; writes a self-contained HTML page with the tables and figures, linking each run's own report and
each trial's evidence, and the tables as parquet next to it. ``--wandb`` logs the same tables and figures
to one W&B run (``job_type=report``) in the runs' group.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codesign.errors import CodesignError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codesign.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="run folders and multirun/sweep folders")
    parser.add_argument("--store", action="append", default=[], help="also every trial stored here (a folder or URI)")
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keep trials whose column KEY is VALUE (or one of a,b), e.g. model=kimi-k3, track=RE",
    )
    parser.add_argument("--out", type=Path, default=Path("outputs/report/report.html"), help="the HTML page")
    parser.add_argument("--title", default="codesign report")
    parser.add_argument("--no-plots", action="store_true", help="tables only (faster)")
    compare_help = ("paired comparison over the tasks both cells scored, each cell as KEY=VALUE[,KEY=VALUE] over "
                    "model, harness, regime, evaluator (e.g. --compare model=kimi-k3 model=glm-5)")  # fmt: skip
    parser.add_argument("--compare", nargs=2, metavar=("CELL_A", "CELL_B"), default=None, help=compare_help)
    parser.add_argument("--wandb", action="store_true", help="also log the tables and figures to one W&B run")
    parser.add_argument("--project", default="codesign", help="W&B project (with --wandb)")
    parser.add_argument("--entity", default=None, help="W&B team or user (with --wandb)")
    parser.add_argument("--group", default=None, help="W&B group (default: the runs' group, when they share one)")
    args = parser.parse_args(argv)
    from rich.console import Console

    from codesign.report import build_report, collect, find_runs, markdown, write_html
    from codesign.report.collect import from_store, keep_only, merge
    from codesign.report.console import print_report

    if not args.paths and not args.store:
        parser.error("give run folders, multirun/sweep folders, or --store")
    try:
        parts = ([collect(find_runs(args.paths))] if args.paths else []) + [from_store(uri) for uri in args.store]
        collection = merge(parts)
        report = build_report(keep_only(collection, args.filter), draw=not args.no_plots, compare=args.compare)
    except CodesignError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print_report(report, Console())  # the terminal's own width (80 when not a terminal and COLUMNS is unset)
    if report.comparison is not None and report.differences is not None:
        from codesign.report.build import PAIRED_TITLE, _markdown_table

        print(f"\n{PAIRED_TITLE}\n{_markdown_table(report.comparison)}\n{_markdown_table(report.differences)}")
    c = report.collection
    print(f"runs used: {len(c.used)} of {len(c.runs)} ({c.duplicates} duplicate trial rows counted once)")
    for run in c.used:
        print(f"  {run.name}")
    page = write_html(report, args.out, args.title)
    for name, frame in report.frames().items():
        frame.write_parquet(page.parent / f"{name}.parquet")
    (page.parent / "report.md").write_text(markdown(report) + "\n")  # every column, for a paper draft
    print(f"report: {page} (tables: {', '.join(f'{n}.parquet' for n in report.frames())}, report.md)")
    if args.wandb:
        from codesign.track.wandb import group_of, log_report

        groups = {group_of(run.path) for run in c.used}
        group = args.group or (groups.pop() if len(groups) == 1 else None)
        where = log_report(report, page, args.project, args.entity, group)
        print(f"W&B: {where} (job_type=report, group={group})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
