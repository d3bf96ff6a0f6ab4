"""``python -m codesign.report`` over three offline runs — a two-cell multirun, a run of one of its cells
again, and a re-grading of the solves with an LLM judge — checked against numbers computed by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import polars as pl
import pytest
import yaml

from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest
from tests.helpers import REPO, cli
from tests.test_judge import KEY_ENV, not_refuted, verdict

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TASK = "me-recipe-servings-text"
KINDS = {
    c["id"]: c["kind"]
    for c in yaml.safe_load((REPO / "codesign/suite" / TASK / "criteria.yaml").read_text())["criteria"]
}


def lenient_judge(req: ServedRequest) -> Reply:
    """PASS on what a screenshot shows, FAIL on interactions (it never clicks): 3 of the task's 8 criteria."""
    text = json.dumps(req.messages)
    if "adversarial reviewer" in json.dumps(req.messages[0]):
        return not_refuted()
    cid = next(c for c in KINDS if f"id: {c}" in text)
    if KINDS[cid] == "interaction":
        return verdict("FAIL", ["shot:/@desktop"], "no interaction was tried")
    return verdict("PASS", ["shot:/@desktop", "dom:/@desktop"])


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory) -> tuple[Path, list[Path]]:
    root = tmp_path_factory.mktemp("report")
    common = ["tasks=all", f"tasks.include=[{TASK}]", "executor=inline", "tracker=none", f"store.root={root / 'store'}"]
    env = {**os.environ, KEY_ENV: "sk-judge-report"}
    a = cli("-m", "model=oracle,noop", "evaluator=probe", f"hydra.sweep.dir={root / 'a'}", *common, env=env, cwd=root)
    assert a.returncode == 0, a.stderr[-3000:]
    b = cli("model=oracle", "evaluator=probe", f"hydra.run.dir={root / 'b'}", *common, env=env, cwd=root)
    assert b.returncode == 0, b.stderr[-3000:]
    with ScriptedModelServer(lenient_judge) as judge:
        llm = ["evaluator=llm", "evaluator.judge.name=lenient", "evaluator.judge.model=openai/lenient",
               f"evaluator.judge.api_base={judge.openai_base}", f"evaluator.judge.api_key_env={KEY_ENV}",
               "evaluator.verifier.model=openai/verifier", f"evaluator.verifier.api_base={judge.openai_base}",
               f"evaluator.verifier.api_key_env={KEY_ENV}", "evaluator.frames=[]"]  # fmt: skip
        c = cli("model=noop", *llm, f"hydra.run.dir={root / 'c'}", *common, env=env, cwd=root)
    assert c.returncode == 0, c.stderr[-3000:]
    return root, [root / "a", root / "b", root / "c"]


def run_report(root: Path, *paths: Path, extra: tuple[str, ...] = (), folder: str = "combined"
               ) -> tuple[subprocess.CompletedProcess, Path]:  # fmt: skip
    out = root / folder / "report.html"
    proc = subprocess.run([sys.executable, "-m", "codesign.report", *map(str, paths), "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=600, cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, out


def test_the_report_combines_dedupes_and_matches_hand_computed_numbers(three_runs):
    root, runs = three_runs
    proc, out = run_report(root, *runs)
    noop_probe = pl.read_parquet(next((root / "a").glob("*model=noop*")) / "verdicts.parquet")
    # By hand: Strict = PASS share of the task's 8 criteria; one task, so task-normalized = that share.
    noop_probe_strict = (noop_probe["verdict"] == "PASS").sum() / len(KINDS)
    lenient_strict = sum(k != "interaction" for k in KINDS.values()) / len(KINDS)
    main = pl.read_parquet(out.parent / "main.parquet").filter(pl.col("track") == "ALL")
    got = {(r["model"], r["evaluator"]): r for r in main.iter_rows(named=True)}
    assert set(got) == {("oracle", "probe"), ("noop", "probe"), ("noop", "llm")}
    assert got["oracle", "probe"]["strict"] == 1.0 and got["oracle", "probe"]["full_pass"] == 1.0
    assert got["noop", "probe"]["strict"] == pytest.approx(noop_probe_strict)
    assert got["noop", "llm"]["strict"] == pytest.approx(lenient_strict) == 0.375
    assert all(r["trials"] == 1 for r in got.values())  # the oracle cell of runs a and b counted once
    assert "runs used: 3 of 4 (1 duplicate trial rows counted once)" in proc.stdout
    used = [line.strip() for line in proc.stdout.splitlines() if line.startswith("  /")]
    assert str(root / "b") in used and not any("model=oracle" in u for u in used)  # the later oracle run won
    sensitivity = pl.read_parquet(out.parent / "sensitivity.parquet").filter(pl.col("track") == "ALL")
    shift = sensitivity.filter((pl.col("factor") == "evaluator") & (pl.col("model") == "noop"))["largest_shift"]
    assert shift.to_list() == [pytest.approx(abs(noop_probe_strict - lenient_strict))]
    # Judge-vs-judge: the probe evaluator and the lenient judge graded the same noop solve.
    agreement = pl.read_parquet(out.parent / "agreement.parquet").row(0, named=True)
    llm_verdicts = pl.read_parquet(root / "c" / "verdicts.parquet")
    pairs = noop_probe.join(llm_verdicts, on="criterion_id", suffix="_llm")
    assert (agreement["reference"], agreement["rater"], agreement["kind"]) == ("deterministic", "llm", "all")
    assert agreement["items"] == len(KINDS)
    assert agreement["agreement"] == pytest.approx((pairs["verdict"] == pairs["verdict_llm"]).mean())


def test_the_html_report_renders_in_chromium_without_broken_parts(three_runs, loop, browser):
    root, runs = three_runs
    _, out = run_report(root, *runs)

    async def inspect() -> dict:
        context = await (await browser.get()).new_context()
        page = await context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(out.as_uri())
        images = await page.eval_on_selector_all("img", "els => els.map(e => [e.alt, e.complete && e.naturalWidth])")
        links = await page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        sections = await page.eval_on_selector_all("h2", "els => els.map(e => e.id)")
        tables = await page.eval_on_selector_all("table", "els => els.length")
        broken = []
        for href in links:
            response = await context.request.get(href) if href.startswith("http") else None
            if response is None and not Path(unquote(href.removeprefix("file://").split("#")[0])).exists():
                broken.append(href)
        await context.close()
        return {"errors": errors, "images": images, "links": links, "broken": broken, "sections": sections,
                "tables": tables}  # fmt: skip

    seen = loop.run(inspect())
    assert seen["errors"] == [] and seen["broken"] == []
    assert seen["images"] and all(width for _, width in seen["images"]), seen["images"]
    assert {"strict per cell and track", "evaluator × model", "agreement"} <= {alt for alt, _ in seen["images"]}
    assert {"main", "combined", "breakdowns", "sensitivity", "attribution", "agreement", "trials"} <= set(
        seen["sections"]
    )
    assert seen["tables"] >= 8
    assert any(link.endswith("/report.html") for link in seen["links"])  # each run's own report
    assert any("/evals/" in link for link in seen["links"])  # each trial's evidence


def test_the_report_goes_to_one_wandb_run_in_the_runs_group(three_runs):
    root, runs = three_runs
    proc, out = run_report(root, runs[0], extra=("--wandb",), folder="to-wandb")  # WANDB_MODE=offline (conftest)
    assert "W&B:" in proc.stdout and "job_type=report" in proc.stdout
    assert f"group={root.name}/a)" in proc.stdout  # the sweep's group: its folder's last two parts
    wandb_run = next((out.parent / "wandb").glob("offline-run-*"))
    logged = next(wandb_run.glob("run-*.wandb")).read_bytes().decode("latin-1")
    assert "report-" in logged and "report" in logged  # the artifact and the job type
    tables = {p.name.split("_")[0] for p in (wandb_run / "files" / "media" / "table").glob("*.table.json")}
    assert {"main", "breakdowns", "sensitivity", "rho", "attribution", "adjusted", "agreement"} <= tables
    assert list((wandb_run / "files" / "media" / "images").rglob("*.png"))  # the figures


@pytest.mark.parametrize("columns", [80, 120])
def test_the_terminal_tables_fit_the_terminal_and_cut_no_header(three_runs, tmp_path, columns):
    _, runs = three_runs
    command = [
        sys.executable,
        "-m",
        "codesign.report",
        *map(str, runs),
        "--no-plots",
        "--out",
        str(tmp_path / "r.html"),
    ]
    env = {**os.environ, "COLUMNS": str(columns)}
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.split("runs used:")[0].splitlines()
    assert max(len(line) for line in lines) <= columns
    assert "every row: harness native, regime agentic" in lines  # said once, not in 3 columns of every table
    scores = lines[lines.index("Scores (strict ci: 95 % bootstrap interval over tasks)") + 1 :][:7]
    header = "model evaluator track trials tasks strict strict ci graded full pass zero pass"
    assert scores[0].split() == header.split()
    assert scores[1].split() == ["noop", "llm", "ME", "1/1", "1", "0.375", "0.38–0.38", "0.375", "0.000", "0.000"]
    assert "…" not in "\n".join(scores)
    assert (tmp_path / "report.md").read_text().count("strict_lo") == 2  # every column kept: main and combined


def test_a_folder_without_runs_is_a_clear_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "codesign.report", str(tmp_path)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)  # fmt: skip
    assert proc.returncode == 2 and "no codesign run under" in proc.stderr and "multirun" in proc.stderr


def test_a_run_written_by_another_version_is_refused_by_name_not_with_a_traceback(three_runs, tmp_path):
    _, runs = three_runs
    old = tmp_path / "old-run"
    old.mkdir()
    pl.read_parquet(runs[1] / "tasks.parquet").drop("n_not_gradable").write_parquet(old / "tasks.parquet")
    command = [
        sys.executable,
        "-m",
        "codesign.report",
        str(runs[0]),
        str(old),
        "--no-plots",
        "--out",
        str(tmp_path / "r.html"),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"{old / 'tasks.parquet'} was written by another version of codesign: it lacks n_not_gradable" in proc.stderr


def test_the_store_alone_gives_the_same_numbers_and_filters_apply(three_runs):
    root, runs = three_runs
    _, out = run_report(root, extra=("--store", str(root / "store"), "--filter", "model=noop"), folder="store")
    main = pl.read_parquet(out.parent / "main.parquet").filter(pl.col("track") == "ALL")
    from_runs = pl.read_parquet(run_report(root, *runs)[1].parent / "main.parquet").filter(pl.col("track") == "ALL")
    got = {r["evaluator"]: r["strict"] for r in main.iter_rows(named=True)}
    expected = {r["evaluator"]: r["strict"] for r in from_runs.filter(pl.col("model") == "noop").iter_rows(named=True)}
    assert set(main["model"]) == {"noop"} and got == expected  # probe and the lenient judge, as from the runs
    bad = subprocess.run([sys.executable, "-m", "codesign.report", "--store", str(root / "store"), "--filter",
                          "colour=blue"], capture_output=True, text=True, timeout=120, cwd=REPO)  # fmt: skip
    assert bad.returncode == 2 and "filter 'colour=blue'" in bad.stderr and "model" in bad.stderr


def test_a_paired_comparison_in_the_terminal_the_page_and_parquet(three_runs):
    root, runs = three_runs
    proc, out = run_report(root, *runs, extra=("--compare", "model=oracle", "model=noop,evaluator=probe"),
                           folder="compared")  # fmt: skip
    noop = pl.read_parquet(next((root / "a").glob("*model=noop*")) / "verdicts.parquet")
    noop_strict = (noop["verdict"] == "PASS").sum() / len(KINDS)  # by hand, as above: one task
    summary = pl.read_parquet(out.parent / "comparison.parquet")
    row = summary.filter((pl.col("track") == "ALL") & (pl.col("metric") == "strict")).row(0, named=True)
    assert row["tasks"] == 1 and row["difference"] == pytest.approx(1.0 - noop_strict)
    assert row["sign_p"] == 1.0 and row["ci_lo"] == row["ci_hi"] == pytest.approx(1.0 - noop_strict)
    assert "Paired comparison A − B" in proc.stdout and TASK in proc.stdout
    assert '<h2 id="comparison">Paired comparison</h2>' in out.read_text()
    assert "Paired comparison A − B" in (out.parent / "report.md").read_text()
    # "model=noop" is two cells here (probe and the LLM judge): refused, naming both.
    command = [sys.executable, "-m", "codesign.report", *map(str, runs), "--out", str(root / "x.html"), "--compare",
               "model=oracle", "model=noop"]  # fmt: skip
    bad = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and "matches 2 cells" in bad.stderr and "evaluator=llm" in bad.stderr, bad.stderr


def test_a_run_names_the_store_it_used_resolved(three_runs, tmp_path, monkeypatch):
    """The runner writes the store it used; a run folder without that file (an older run) resolves the
    ``${oc.env:…}`` Hydra's saved config keeps, instead of returning it as a path."""
    from codesign.report.collect import STORE_FILE, Run

    root, (_, b, _) = three_runs
    assert (b / STORE_FILE).read_text().strip() == Run(b, 0.0).store == str(root / "store")
    older = tmp_path / "older"
    (older / ".hydra").mkdir(parents=True)
    config = yaml.safe_load((b / ".hydra" / "config.yaml").read_text())
    config["store"]["root"] = "${oc.env:CODESIGN_STORE,outputs/store}"
    (older / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    assert not (older / STORE_FILE).exists()
    monkeypatch.setenv("CODESIGN_STORE", str(tmp_path / "elsewhere"))
    assert Run(older, 0.0).store == str(tmp_path / "elsewhere")
