"""Curation from real Claude Code transcripts: the CLI itself runs a multi-turn session (an image with the first
query, the others through ``--resume``) against the scripted model server, editing a git-tracked app, so the
transcript on disk is the CLI's own. codesign.curate turns it into draft tasks, and a draft becomes a task the
gate accepts once an expert adds a criterion."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import polars as pl
import pytest
import yaml
from PIL import Image

from codesign.curate import Settings, curate
from codesign.errors import TaskError
from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest, ToolCall

PAGE = "<h1>page</h1>\n<p>Plain page.</p>\n"
BUTTON = (
    '<button id="go" onclick="document.getElementById(\'note\').hidden=false">go</button>\n<p id="note" hidden>hi</p>'
)
# Each query of the session and the edit the scripted model makes for it (old → new text of index.html).
QUERIES = [
    ("Make the heading say hello, like in this mockup.", "<h1>page</h1>", "<h1>hello</h1>"),
    ("Add a go button under the paragraph that shows a note saying hi when clicked.", "<p>Plain page.</p>",
     "<p>Plain page.</p>\n" + BUTTON),
    ("Make the note text bold.", "<p id=\"note\" hidden>hi</p>", "<p id=\"note\" hidden><b>hi</b></p>"),
    ("thanks", None, None),
]  # fmt: skip


def _last_user_text(req: ServedRequest) -> str:
    for m in reversed(req.messages):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        texts = (
            [content] if isinstance(content, str) else [b.get("text", "") for b in content if b.get("type") == "text"]
        )
        if any(t.strip() for t in texts):
            return " ".join(texts)
    return ""


def editor(app: Path):
    """A scripted model that, for each query, reads index.html, makes that query's edit, and says it is done."""

    def policy(req: ServedRequest) -> Reply:
        if "Read" not in req.tool_names:  # the CLI's housekeeping calls
            return Reply("ok")
        asked = _last_user_text(req)
        old, new = next(((o, n) for text, o, n in QUERIES if text in asked), (None, None))
        last = req.messages[-1].get("content")
        results = [b for b in last if b.get("type") == "tool_result"] if isinstance(last, list) else []
        if old is None:
            return Reply("You're welcome.")
        if not results:
            return Reply("Reading the page.", [ToolCall("Read", {"file_path": str(app / "index.html")})])
        if "has been updated" in json.dumps(results):
            return Reply("Done.")
        return Reply("Editing.", [ToolCall("Edit", {"file_path": str(app / "index.html"), "old_string": old,
                                                     "new_string": new})])  # fmt: skip

    return policy


def _png() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (64, 32), (200, 40, 40)).save(buf, "PNG")
    import base64

    return base64.b64encode(buf.getvalue()).decode()


def run_session(tmp_path: Path) -> tuple[Path, Path]:
    """The app's git repository and the CLI's projects folder after a four-query session."""
    from codesign.solve.harnesses.claude_code import ClaudeCodeHarness

    app = tmp_path / "app"
    app.mkdir()
    (app / "index.html").write_text(PAGE)
    git = ["git", "-C", str(app), "-c", "user.email=dev@example.com", "-c", "user.name=dev"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "the app"], check=True)
    config = tmp_path / "claude"
    exe = ClaudeCodeHarness().executable()
    with ScriptedModelServer(editor(app)) as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.anthropic_base, "ANTHROPIC_API_KEY": "sk-scripted-curate",
               "CLAUDE_CONFIG_DIR": str(config), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1"}  # fmt: skip
        base = [str(exe), "--print", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions",
                "--model", "scripted"]  # fmt: skip
        first = {"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": QUERIES[0][0]},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _png()}}]}}  # fmt: skip
        done = subprocess.run([*base, "--input-format", "stream-json"], input=json.dumps(first) + "\n", cwd=app,
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        session = next(json.loads(line)["session_id"] for line in done.stdout.splitlines() if '"session_id"' in line)
        for text, *_ in QUERIES[1:]:
            done = subprocess.run([*base, "--resume", session, text], cwd=app, env=env, capture_output=True,
                                  text=True, timeout=300)  # fmt: skip
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (app / "index.html").read_text() == PAGE.replace("page</h1>", "hello</h1>").replace(
        "<p>Plain page.</p>", "<p>Plain page.</p>\n" + BUTTON.replace(">hi<", "><b>hi</b><")
    )
    return app, config / "projects"


@pytest.mark.slow
@pytest.mark.browser
def test_a_real_claude_code_session_becomes_a_draft_the_gate_accepts_once_a_criterion_is_added(tmp_path):
    from codesign.evaluate.gate import validate_task
    from codesign.runtime.browser import Browser
    from codesign.tasks.loader import load_task

    _, projects = run_session(tmp_path)
    transcripts = list(projects.rglob("*.jsonl"))
    assert len(transcripts) == 1  # the CLI's own file, resumed three times

    # The paper's settings: the session's scores add up past 10; the interactive request stands out (r > 1).
    result = curate(Settings(inputs=[projects]), tmp_path / "out")
    table = result.candidates.sort("turn")
    assert table["text"].to_list() == [q[0] for q in QUERIES]
    assert table["filter_non_actionable"].to_list()[3].startswith("non-actionable: an acknowledgement")
    assert table["attachments"].to_list() == [1, 0, 0, 0]
    assert table["edited_files"].to_list() == [1, 1, 1, 0]
    assert table["selection"].to_list()[:3] == ["r(q) ≤ 1: 0.82", "selected", "r(q) ≤ 1: 0.82"], table.to_dicts()
    assert len(result.drafts) == 1
    draft = result.drafts[0].folder
    manifest = yaml.safe_load((draft / "task.yaml").read_text())
    assert manifest["request"] == QUERIES[1][0] and manifest["environment"] == {"kind": "static"}
    # The app as it was when the request was asked: the commit, plus the session's uncommitted first edit.
    assert (draft / "app" / "index.html").read_text() == PAGE.replace("page</h1>", "hello</h1>")
    patch = (draft / "solution" / "solution.patch").read_text()
    assert '+<button id="go"' in patch and "<b>hi</b>" not in patch  # the request's own change, not the next
    assert "criteria: []" in (draft / "criteria.yaml").read_text()
    with pytest.raises(TaskError, match="no criteria yet: the task is a draft"):
        load_task(draft)  # not a task until an expert writes its criteria
    funnel = json.loads((tmp_path / "out" / "funnel.json").read_text())
    assert [(s["stage"], s["remaining"]) for s in funnel] == [
        ("read", 4),
        ("exact duplicates out", 4),
        ("near duplicates out", 4),
        ("filters passed", 3),
        ("selected", 1),
        ("session intervals", 1),
        ("recovered", 1),
        ("gate passed", 1),
        ("draft tasks", 1),
    ]

    # An expert adds a criterion: the draft is a task the whole gate accepts (the session's change solves it).
    (draft / "criteria.yaml").write_text(
        "criteria:\n  - id: note\n    text: Clicking go shows the note.\n    kind: interaction\n"
        "    probe:\n      steps:\n        - click: '#go'\n      expect:\n        - visible: '#note'\n"
    )
    task = load_task(draft)

    async def gate():
        browser = Browser(os.environ.get("CODESIGN_CHROMIUM"))
        try:
            return await validate_task(task, browser, Path("~/.cache/codesign/node_modules").expanduser(),
                                       tmp_path / "gate", near_misses=False)  # fmt: skip
        finally:
            await browser.close()

    import asyncio

    report = asyncio.run(gate())
    assert report.ok, report.steps

    # The whole session as one interval: the earlier queries become history, their image packaged with them.
    loose = Settings(inputs=[projects], validate=False)
    loose.select = type(loose.select)(min_session_score=1, min_relative_score=0, max_gap=3)
    again = curate(loose, tmp_path / "all")
    assert len(again.drafts) == 1
    manifest = yaml.safe_load((again.drafts[0].folder / "task.yaml").read_text())
    assert manifest["request"] == QUERIES[2][0]
    assert [t["content"] for t in manifest["history"] if t["role"] == "user"] == [
        QUERIES[0][0] + "\n[attached: attachments/turn0-image-1.png]",
        QUERIES[1][0],
    ]
    assert manifest["attachments"] == [{"path": "attachments/turn0-image-1.png", "modality": "image"}]
    assert pl.read_parquet(tmp_path / "all" / "candidates.parquet").height == 4
