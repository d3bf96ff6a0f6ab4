"""The validation gate: it passes the bundled suite and catches unsound tasks."""

from __future__ import annotations

import polars as pl
import pytest

from codesign import stats, validate
from codesign.tasks.loader import load_suite
from tests.conftest import SUITE, gate_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]
GOOD = "me-bakery-header-mockup"


@pytest.mark.duration(348)
def test_gate_passes_on_the_whole_bundled_suite(tmp_path):
    code, out, folder = gate_in(tmp_path)
    assert code == 0, out  # the report names the task and the check that failed
    n = len(load_suite(SUITE).tasks)
    assert f"{n}/{n} tasks pass the gate" in out
    report = pl.read_parquet(folder / "validation.parquet")
    assert report.height == n and report["ok"].all()
    assert set(report.columns) >= {"integrity", "install_build", "launch_render", "solvability", "discrimination"}


def _gate(root, tmp_path, monkeypatch, capsys) -> tuple[int, pl.DataFrame, str]:
    monkeypatch.chdir(tmp_path)
    code = validate.main(["tasks=all", f"tasks.root={root}"])
    report = pl.read_parquet(next(tmp_path.glob("outputs/validate/*/validation.parquet")))
    return code, report, capsys.readouterr().out


def test_a_change_the_baseline_already_satisfies_fails_discrimination(suite_copy, tmp_path, monkeypatch, capsys):
    root = suite_copy(GOOD)
    crit = root / GOOD / "criteria.yaml"
    # "keep-menu" holds on the baseline; declared as a change, the gate must object.
    crit.write_text(
        crit.read_text().replace(
            "kind: preservation\n    preserve: true\n    probe:\n      expect:\n"
            '        - count: {selector: ".menu-item"',
            'kind: preservation\n    probe:\n      expect:\n        - count: {selector: ".menu-item"',
        )
    )
    code, report, out = _gate(root, tmp_path, monkeypatch, capsys)
    row = report.row(0, named=True)
    assert code == 1 and row["ok"] is False and row["solvability"] == "ok"
    assert row["discrimination"].startswith("FAIL") and "keep-menu (change) already PASS" in row["discrimination"]
    assert "FAIL" in out


def test_a_wrong_reference_fails_solvability(suite_copy, tmp_path, monkeypatch, capsys):
    root = suite_copy(GOOD)
    patch = root / GOOD / "solution" / "solution.patch"
    patch.write_text(
        patch.read_text().replace(
            "+    .site-header { background: #2f5d50;", "+    .site-header { background: #123456;"
        )
    )
    code, report, _ = _gate(root, tmp_path, monkeypatch, capsys)
    row = report.row(0, named=True)
    assert code == 1 and row["solvability"].startswith("FAIL: header-colour")


def test_unreadable_attachment_and_bad_patch_fail_integrity(suite_copy, tmp_path, monkeypatch, capsys):
    root = suite_copy(GOOD, "me-expense-receipt-pdf")
    (root / GOOD / "attachments" / "header-mockup.png").write_bytes(b"not a png at all")
    (root / "me-expense-receipt-pdf" / "solution" / "solution.patch").write_text(
        "diff --git a/nope.js b/nope.js\n--- a/nope.js\n+++ b/nope.js\n@@ -1 +1 @@\n-a\n+b\n"
    )
    code, report, _ = _gate(root, tmp_path, monkeypatch, capsys)
    rows = {r["task_id"]: r for r in report.iter_rows(named=True)}
    assert code == 1
    assert "header-mockup.png: unreadable" in rows[GOOD]["integrity"] and rows[GOOD]["solvability"] == "skipped"
    assert "does not apply" in rows["me-expense-receipt-pdf"]["integrity"]


def test_stats_report_counts_the_suite(capsys):
    assert stats.main(["tasks=all"]) == 0
    out = capsys.readouterr().out
    assert "Per track" in out and "probe_coverage" in out and "RE by edit-type count" in out
