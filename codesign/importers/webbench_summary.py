"""The Web-Bench import's summary, written by the importer and the gate themselves: ``OUT/summary.json`` (what
each step recorded) and ``OUT/summary.md`` (the table of projects × tasks imported, gated, flaky, skipped with
the reason, the oracle's pass rate over every imported criterion, and the time each step took)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codesign.importers.webbench import ImportOptions, ProjectImport

SUMMARY_JSON, SUMMARY_MD = "summary.json", "summary.md"


def read_summary(out: Path) -> dict[str, Any]:
    path = out / SUMMARY_JSON
    return json.loads(path.read_text()) if path.is_file() else {}


def _write(out: Path, summary: dict[str, Any]) -> None:
    (out / SUMMARY_JSON).write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    (out / SUMMARY_MD).write_text(render(summary))


def record_import(
    out: Path, results: list[ProjectImport], options: ImportOptions, numbers: list[int] | None, wall_s: float
) -> None:
    """The import's part of the summary (the projects imported again replace theirs; the others stay)."""
    summary = read_summary(out)
    section = summary.setdefault("import", {"projects": {}})
    section["command"] = " ".join(["python -m codesign.importers.webbench", *sys.argv[1:]])
    section["tasks"] = "all" if numbers is None else numbers
    section["options"] = {
        "classify": options.classify,
        "repeat": options.repeat,
        "include_flaky": options.include_flaky,
        "workers": options.workers,
        "reference_workers": options.reference_workers,
        "rerun_workers": options.rerun_workers,
        "test_timeout_s": options.test_timeout_s,
        "expect_timeout_s": options.expect_timeout_s,
    }
    section["wall_s"] = round(wall_s, 1)
    for r in results:
        section["projects"][r.name] = {
            "reason": r.reason,
            "requested": r.requested,
            "imported": {str(n): Path(f).name for n, f in sorted(r.imported.items())},
            "criteria": {str(n): c for n, c in sorted(r.criteria.items())},
            "left_out": {str(n): c for n, c in sorted(r.left_out.items())},
            "skipped": {str(n): why for n, why in sorted(r.skipped.items())},
            "flaky": r.flaky,
            "ungraded_on_start": r.ungraded_on_start,
            "fails_on_reference": r.fails_on_reference,
            "wall_s": r.wall_s,
            "phases_s": r.phases_s,
        }
    _write(out, summary)


def record_gate(out: Path, tasks: dict[str, dict[str, Any]], projects: dict[str, float], wall_s: float,
                options: dict[str, Any]) -> None:  # fmt: skip
    """The gate's part: per task whether it passed, its failed steps, its criteria and how many the reference
    passed; per project the gate's wall time."""
    summary = read_summary(out)
    section = summary.setdefault("gate", {"tasks": {}, "projects": {}})
    section["tasks"].update(tasks)
    section["projects"].update({p: {"wall_s": round(s, 1)} for p, s in projects.items()})
    section["wall_s"] = round(wall_s, 1)
    section["options"] = options
    _write(out, summary)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s" if seconds >= 60 else f"{seconds:.0f} s"


def render(summary: dict[str, Any]) -> str:
    """The table, one row per project, and the totals."""
    imported = summary.get("import", {}).get("projects", {})
    gate = summary.get("gate", {})
    gated = gate.get("tasks", {})
    lines = [
        "# Web-Bench import",
        "",
        "| project | tasks imported | gate pass | gate fail | flaky tests | failing on the reference | skipped "
        "| oracle pass | import | gate |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    totals = {"imported": 0, "pass": 0, "fail": 0, "flaky": 0, "skipped": 0, "criteria": 0, "oracle": 0}
    for name in sorted(imported):
        p = imported[name]
        tasks = [f"wb-{name}-task-{n}" for n in p["imported"]]
        results = [gated[t] for t in tasks if t in gated]
        passed = sum(r["ok"] for r in results)
        criteria = sum(r["criteria"] for r in results)
        oracle = sum(r["reference_pass"] for r in results)
        skipped = [f"all: {p['reason']}"] if p["reason"] else [f"task-{n}: {w}" for n, w in p["skipped"].items()]
        flaky = p["flaky"]
        totals["imported"] += len(tasks)
        totals["pass"] += passed
        totals["fail"] += len(results) - passed
        totals["flaky"] += len(flaky)
        totals["skipped"] += len(p["requested"]) - len(tasks) if not p["reason"] else 1
        totals["criteria"] += criteria
        totals["oracle"] += oracle
        cells = [
            name,
            str(len(tasks)),
            str(passed) if results else "–",
            str(len(results) - passed) if results else "–",
            ", ".join(f"{f['id']} ({f['passed']}/{f['passed'] + f['failed']} pass)" for f in flaky) or "0",
            ", ".join(sorted(p.get("fails_on_reference", {}))) or "0",
            "; ".join(s.replace("|", "/")[:160] for s in skipped) or "0",
            f"{oracle}/{criteria}" if results else "–",
            _minutes(p["wall_s"]),
            _minutes(gate.get("projects", {}).get(name, {}).get("wall_s", 0)) if results else "–",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    rate = f"{100 * totals['oracle'] / totals['criteria']:.1f} %" if totals["criteria"] else "–"
    lines += [
        "",
        f"- Tasks imported: {totals['imported']} from {sum(not p['reason'] for p in imported.values())} projects; "
        f"skipped: {totals['skipped']} (whole projects count once).",
        f"- Gate: {totals['pass']} pass, {totals['fail']} fail of {len(gated)} gated.",
        f"- Oracle pass rate over all imported criteria (each task's): {totals['oracle']}/{totals['criteria']} "
        f"= {rate}.",
        f"- Flaky tests on Web-Bench's reference: {totals['flaky']}; tests it failed in every run (left out): "
        f"{sum(len(p.get('fails_on_reference', {})) for p in imported.values())}.",
        f"- Import: {_minutes(summary.get('import', {}).get('wall_s', 0))} "
        f"(`{summary.get('import', {}).get('command', '?')}`, {summary.get('import', {}).get('options', {})}).",
    ]
    if gate:
        lines.append(
            f"- Gate: done {_minutes(gate.get('wall_s', 0))} after it started ({gate.get('options', {})}); "
            "with the importer's --gate it starts with the import and gates each project once imported, so this is "
            "the wall time of import and gate together."
        )
    notes = [
        f"- {name}: {len(p.get(key, {}))} test(s) {what}: {', '.join(sorted(p[key]))[:300]}"
        for name, p in sorted(imported.items())
        for key, what in (("ungraded_on_start", "the starting app's run could not grade (the gate fails their tasks)"),)
        if p.get(key)
    ]
    if notes:
        lines += ["", "## Tests kept that the gate will fail", "", *notes]
    failed = {t: r for t, r in gated.items() if not r["ok"]}
    if failed:
        lines += ["", "## Gate failures", ""]
        lines += [f"- {t}: {r['failed'][:400]}" for t, r in sorted(failed.items())]
    return "\n".join(lines) + "\n"
