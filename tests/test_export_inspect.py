"""``python -m codesign.export inspect PATH… OUT`` over real runs — a two-cell multirun (oracle, noop) of bundled
tasks and a run of a scripted endpoint graded by a scripted LLM judge that fails on one criterion — read back
with Inspect's own reader and shown by ``inspect view`` in Chromium."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import polars as pl
import pytest
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser, ContentImage
from playwright.async_api import expect

from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest, ToolCall
from tests.helpers import REPO, cli
from tests.test_judge import KEY_ENV, criterion_of, is_verifier, not_refuted, verdict

BUNDLED = ["me-bakery-header-mockup", "me-recipe-servings-text"]  # static apps; the first has an image attachment
CELL = ["model", "harness", "regime", "evaluator"]
VALUES = {"PASS": "C", "PARTIAL": "P", "FAIL": "I"}
PAGE = '<!doctype html><html><body><h1 style="color: rgb(20, 60, 120)">{title}</h1><p class="note">{note}</p>' \
       "</body></html>\n"  # fmt: skip
SOLVER_USAGE = {"input_tokens": 1200, "output_tokens": 40, "cached_tokens": 200}  # per call

pytestmark = [pytest.mark.slow]


def make_task(root: Path, task_id: str) -> None:
    """A static one-page task with a visual and a content criterion (``<task_id>-note``)."""
    folder = root / task_id
    (folder / "app").mkdir(parents=True)
    (folder / "solution").mkdir()
    (folder / "task.yaml").write_text(
        f"id: {task_id}\ntrack: RE\ntitle: The {task_id} note\n"
        "request: 'Change the note to \"Thanks for visiting\".'\nlabels: {capability: [ui_transformation]}\n"
    )
    (folder / "criteria.yaml").write_text(
        "criteria:\n  - id: heading\n    text: The heading is dark blue.\n    kind: visual\n"
        f'  - id: {task_id}-note\n    text: The note says "Thanks for visiting".\n    kind: content\n'
    )
    (folder / "app" / "index.html").write_text(PAGE.format(title=task_id, note="Come again soon"))
    (folder / "solution" / "solution.patch").write_text(
        "diff --git a/index.html b/index.html\n--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n"
        f"-{PAGE.format(title=task_id, note='Come again soon')}"
        f"+{PAGE.format(title=task_id, note='Thanks for visiting')}"
    )


def solver(req: ServedRequest) -> Reply:
    """Edits the note with the shell, then says it is done."""
    if req.turn == 0:
        command = "sed -i 's/Come again soon/Thanks for visiting/' index.html"
        return Reply("I will change the note.", [ToolCall("shell", {"command": command})], **SOLVER_USAGE)
    return Reply("Changed the note.", **SOLVER_USAGE)


def judge(req: ServedRequest) -> Reply:
    """The heading is a PARTIAL, greeting's note a PASS; farewell's note gets truncated JSON, every time: its
    grader fails, so the criterion is ungraded and its trial a grading error."""
    if is_verifier(req):
        return not_refuted()
    criterion = criterion_of(req)
    if criterion == "farewell-note":
        return Reply('{"verdict": "PASS", "reason": ')
    if criterion == "heading":
        return verdict("PARTIAL", ["shot:/@desktop"], "dark, but more navy than blue")
    return verdict("PASS", ["dom:/@desktop"], "the note reads Thanks for visiting")


@dataclass
class Exported:
    root: Path
    runs: list[Path]
    out: Path
    stdout: str
    trials: pl.DataFrame  # every run's tasks.parquet
    verdicts: pl.DataFrame  # every run's verdicts.parquet


def export(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codesign.export", "inspect", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)  # fmt: skip


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Exported:
    root = tmp_path_factory.mktemp("inspect")
    common = ["executor=inline", "tracker=none", f"store.root={root / 'store'}", "attribution.below=null"]
    env = {**os.environ, KEY_ENV: "sk-export"}
    a = cli("-m", "model=oracle,noop", "evaluator=probe", "tasks=all", f"tasks.include=[{','.join(BUNDLED)}]",
            f"hydra.sweep.dir={root / 'a'}", *common, env=env, cwd=root)  # fmt: skip
    assert a.returncode == 0, a.stderr[-3000:]
    suite = root / "suite"
    for task_id in ("greeting", "farewell"):
        make_task(suite, task_id)
    with ScriptedModelServer(solver) as s, ScriptedModelServer(judge) as j:
        solver_cfg = ["model=litellm", "model.name=scripted", "model.model=openai/scripted",
                      f"model.api_base={s.openai_base}", f"model.api_key_env={KEY_ENV}"]  # fmt: skip
        judge_cfg = ["evaluator=llm", "evaluator.judge.model=openai/judge", f"evaluator.judge.api_base={j.openai_base}",
                     f"evaluator.judge.api_key_env={KEY_ENV}", "evaluator.verifier.model=openai/verifier",
                     f"evaluator.verifier.api_base={j.openai_base}", f"evaluator.verifier.api_key_env={KEY_ENV}",
                     "evaluator.frames=[]"]  # fmt: skip
        b = cli(*solver_cfg, *judge_cfg, "tasks=all", f"tasks.root={suite}", f"hydra.run.dir={root / 'b'}", *common,
                env=env, cwd=root)  # fmt: skip
    assert b.returncode == 0, b.stderr[-3000:]
    runs = [root / "a", root / "b"]
    out = root / "logs"
    done = export(*runs, out)
    assert done.returncode == 0, done.stderr[-3000:]
    tables = [p.parent for p in sorted(root.rglob("tasks.parquet"))]
    return Exported(
        root,
        runs,
        out,
        done.stdout,
        pl.concat([pl.read_parquet(t / "tasks.parquet") for t in tables], how="diagonal_relaxed"),
        pl.concat([pl.read_parquet(t / "verdicts.parquet") for t in tables], how="diagonal_relaxed"),
    )


def read_logs(out: Path, fmt: str = "eval") -> dict[tuple[str, ...], EvalLog]:
    logs = {}
    for path in sorted(out.glob(f"*.{fmt}")):
        log = read_eval_log(str(path), resolve_attachments=True)
        logs[tuple(log.eval.metadata["cell"][k] for k in CELL)] = log
    return logs


@pytest.mark.duration(40)  # the runs it exports (the module's fixture)
def test_one_log_per_cell_one_sample_per_trial_with_codesigns_verdicts_scores_and_tokens(exported):
    logs = read_logs(exported.out)
    trials, verdicts = exported.trials, exported.verdicts
    cells = {tuple(r[k] for k in CELL) for r in trials.iter_rows(named=True)}
    assert set(logs) == cells and len(cells) == 3  # oracle, noop, scripted
    assert len(exported.stdout.strip().splitlines()) == 3  # one line per log written
    for cell, log in logs.items():
        mine = trials.filter(pl.all_horizontal(pl.col(k) == v for k, v in zip(CELL, cell, strict=True)))
        assert log.status == "success" and log.eval.dataset.samples == mine.height
        assert sorted((s.id, s.epoch) for s in log.samples) == sorted((t, 1) for t in mine["task_id"])
        assert log.eval.model == ("openai/scripted" if cell[0] == "scripted" else f"codesign/{cell[0]}")
        for trial in mine.iter_rows(named=True):
            sample = next(s for s in log.samples if s.id == trial["task_id"])
            graded = verdicts.filter(pl.col("trial_key") == trial["trial_key"], pl.col("evaluator") == cell[3])
            assert set(sample.scores) == {"strict", "graded", "full_pass", *graded["criterion_id"]}
            for v in graded.iter_rows(named=True):
                score = sample.scores[v["criterion_id"]]
                assert score.explanation == v["reason"]
                assert (score.metadata["grader"], score.metadata["kind"]) == (v["grader"], v["kind"])
                assert score.metadata["weight"] == pytest.approx(1 / graded.height)
                if v["verdict"] == "UNGRADED":  # no verdict about the app: unscored, never an I
                    assert isinstance(score.value, float) and math.isnan(score.value), score.value
                    assert score.metadata["status"] == "ungraded"
                    assert v["criterion_id"] in sample.metadata["ungraded"]
                else:
                    assert score.value == VALUES[v["verdict"]] and score.metadata["status"] == "graded"
            for name in ("strict", "graded", "full_pass"):
                if trial["status"] == "ok":
                    assert sample.scores[name].value == trial[name]
                else:
                    assert math.isnan(sample.scores[name].value), (name, trial["status"])
            assert sample.metadata["status"] == trial["status"]
            assert sample.metadata["telemetry"]["turns"] == trial["turns"]
            roles = [type(m) for m in sample.messages]
            assert roles[:2] == [ChatMessageSystem, ChatMessageUser] and ChatMessageAssistant in roles
            assert len([m for m in sample.messages if isinstance(m, ChatMessageAssistant)]) == trial["turns"]
            assert (ChatMessageTool in roles) == bool(trial["tool_calls"])
            for i, m in enumerate(sample.messages):  # every tool result follows its call
                if isinstance(m, ChatMessageTool):
                    calls = [c.id for c in sample.messages[i - 1].tool_calls or []]
                    assert m.tool_call_id in calls and m.function == "shell"
            usage = sample.model_usage[log.eval.model]
            assert usage.input_tokens + (usage.input_tokens_cache_read or 0) == trial["input_tokens"]
            assert usage.output_tokens == trial["output_tokens"]
        usage = log.stats.model_usage[log.eval.model]
        assert usage.input_tokens + (usage.input_tokens_cache_read or 0) == mine["input_tokens"].sum()
        assert (usage.input_tokens_cache_read or 0) == mine["cached_tokens"].sum()
        assert usage.output_tokens == mine["output_tokens"].sum()
        ok = mine.filter(pl.col("status") == "ok")
        assert log.results.total_samples == mine.height and log.results.completed_samples == ok.height
        means = {s.name: s.metrics["mean"].value for s in log.results.scores}
        assert means == pytest.approx({"strict": ok["strict"].mean(), "graded": ok["graded"].mean(),
                                       "full_pass": ok["full_pass"].cast(pl.Float64).mean()})  # fmt: skip
    scripted = logs["scripted", "native", "agentic", "llm"]
    assert scripted.stats.model_usage["openai/scripted"].output_tokens == 2 * 2 * SOLVER_USAGE["output_tokens"]
    assert set(scripted.stats.role_usage) == {"judge", "verifier"}
    farewell = next(s for s in scripted.samples if s.id == "farewell")
    assert farewell.metadata["status"] == "grading_error" and farewell.metadata["ungraded"] == ["farewell-note"]
    assert "never a FAIL" in farewell.metadata["ungraded_note"]
    assert farewell.scores["heading"].value == "P"  # the criteria its grader decided keep their verdicts
    # The bundled image attachment is in the input as an image; the request is its text.
    bakery = next(s for s in logs["oracle", "native", "agentic", "probe"].samples if s.id == BUNDLED[0])
    parts = bakery.input[-1].content
    assert parts[0].text.startswith("Our designer sent a mockup")
    assert [p.image[:22] for p in parts if isinstance(p, ContentImage)] == ["data:image/png;base64,"]


def test_json_logs_and_a_filter_give_the_same_samples(exported):
    out = exported.root / "logs-json"
    done = export(*exported.runs, out, "--format", "json", "--filter", "model=oracle,scripted")
    assert done.returncode == 0, done.stderr[-3000:]
    logs, full = read_logs(out, "json"), read_logs(exported.out)
    assert set(logs) == {c for c in full if c[0] in ("oracle", "scripted")}
    for cell, log in logs.items():
        scores = [(s.id, {k: v.model_dump_json() for k, v in s.scores.items()}) for s in log.samples]  # NaN ≠ NaN
        assert scores == [(s.id, {k: v.model_dump_json() for k, v in s.scores.items()}) for s in full[cell].samples]


def test_bad_input_is_refused_naming_it_and_nothing_is_written(tmp_path):
    empty = tmp_path / "not-a-run"
    empty.mkdir()
    out = tmp_path / "logs"
    refused = export(empty, out)
    assert refused.returncode == 2
    assert f"no codesign run under {empty}" in refused.stderr and "Traceback" not in refused.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["not-a-run"]
    a_file = tmp_path / "logs.txt"
    a_file.write_text("mine")
    refused = export(empty, a_file)
    assert refused.returncode == 2 and f"OUT {a_file} is a file" in refused.stderr
    assert a_file.read_text() == "mine"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def inspect_view(log_dir: Path) -> Iterator[str]:
    """``inspect view start`` on ``log_dir`` (its own process group, killed at the end); its URL once it answers."""
    port = free_port()
    command = [str(Path(sys.executable).parent / "inspect"), "view", "start", "--log-dir", str(log_dir),
               "--port", str(port), "--host", "127.0.0.1"]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.stdout.read().decode() if server.stdout else "exited"
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert time.monotonic() < deadline, "inspect view did not answer within 60 s"
                with contextlib.suppress(subprocess.TimeoutExpired):
                    server.wait(0.2)  # not a fixed sleep: returns at once if it exits
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


@pytest.mark.browser
def test_inspect_view_lists_every_trial_and_shows_a_samples_scores(exported, loop, browser):
    headers = [(p.name, read_eval_log(str(p), header_only=True)) for p in sorted(exported.out.glob("*.eval"))]
    files = {tuple(log.eval.metadata["cell"][k] for k in CELL): name for name, log in headers}
    # Every trial of codesign's tables, as the viewer links its sample: the cell's log, the task, epoch 1 (seed 0).
    expected = [f"#/samples/{quote(files[tuple(t[k] for k in CELL)])}/sample/{t['task_id']}/1/"
                for t in exported.trials.iter_rows(named=True)]  # fmt: skip
    scripted_log = files["scripted", "native", "agentic", "llm"]

    greeting = exported.trials.filter(pl.col("task_id") == "greeting").row(0, named=True)
    chips = {"strict": greeting["strict"], "graded": greeting["graded"], "full_pass": "F", "heading": "P",
             "greeting-note": "C"}  # fmt: skip
    assert (chips["strict"], chips["graded"]) == (0.5, 0.75)  # the judge's PARTIAL and PASS

    async def look(url: str) -> None:
        context = await (await browser.get()).new_context(viewport={"width": 1600, "height": 1000})
        try:
            page = await context.new_page()
            await page.goto(url + "#/samples/")
            rows = page.locator('a[role="row"]')
            await expect(rows).to_have_count(len(expected), timeout=60_000)
            hrefs = [await rows.nth(i).get_attribute("href") for i in range(len(expected))]
            assert sorted(h.split("/", 3)[3] for h in hrefs) == sorted(expected)
            # A scored trial: its scores in the sample's header.
            await rows.filter(has_text=scripted_log.removesuffix(".eval")).filter(has_text="greeting").click()
            await expect(page.get_by_text("Sample greeting (Epoch 1)")).to_be_visible(timeout=30_000)
            for name, value in chips.items():  # the header's chips: the value, then the score's name
                await expect(page.locator(f'span[title="{name}"]').first).to_have_text(f"{value}{name}")
            # A grading error: every score with its explanation, the ungraded criterion unscored by its grader.
            await page.goto(url + "#/samples/")
            await rows.filter(has_text=scripted_log.removesuffix(".eval")).filter(has_text="farewell").click()
            await expect(page.get_by_text("Sample farewell (Epoch 1)")).to_be_visible(timeout=30_000)
            await page.get_by_role("tab", name="Scoring").click()
            for text in ("strict", "graded", "full_pass", "heading", "farewell-note", "grader_failed", "ungraded"):
                await expect(page.get_by_text(text, exact=True).first).to_be_visible()
            await expect(page.get_by_text("dark, but more navy than blue").first).to_be_visible()
            await expect(page.get_by_text("not scored (grading_error)", exact=False).first).to_be_visible()
        finally:
            await context.close()

    with inspect_view(exported.out) as url:
        loop.run(look(url))
