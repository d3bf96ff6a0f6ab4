"""Bad input to codesign.curate: each problem is counted in the funnel with its reason, or noted on its query,
and the rest goes on — truncated and malformed lines, binary junk, unknown record types, lines too long to hold,
missing, huge and escaping attachments, archives with entries that escape, edits outside the workspace, secrets
in the transcripts (redacted in every output). The funnel page is looked at in Chromium."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import tarfile
from pathlib import Path

import pytest

from codesign.curate import Settings, curate
from codesign.curate.select import SelectSettings

SECRET = "sk-ant-api03-" + "Zq7" * 12  # shaped like an Anthropic key: redacted wherever it appears
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def query(session: str, turn: int, text: str, **extra: object) -> str:
    record = {
        "session": session,
        "turn": turn,
        "timestamp": f"2026-11-30T10:0{turn}:00Z",
        "text": text,
        "workspace": {"folder": "apps/shop"},
        "reply": "Done.",
        "edits": [{"path": "index.html", "before": "<h1>Shop</h1>\n", "after": f"<h1>Shop {turn}</h1>\n"}],
    }
    record.update(extra)
    return json.dumps(record) + "\n"


def corpus(root: Path) -> Path:
    (root / "apps" / "shop").mkdir(parents=True)
    (root / "apps" / "shop" / "index.html").write_text("<h1>Shop</h1>\n")
    (root / "files").mkdir()
    (root / "files" / "mockup.png").write_bytes(PNG)
    huge = root / "files" / "huge.mp4"
    with open(huge, "wb") as f:  # 2 GB, sparse: its size is refused before a byte is read
        f.truncate(2 << 30)
    evil = root / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped.html")
        info.size = 5
        import io

        tar.addfile(info, io.BytesIO(b"hello"))
    lines = [
        query(
            "s1",
            0,
            "Make the header red like the mockup",
            attachments=[
                {"name": "mockup.png", "path": "files/mockup.png"},
                {"name": "gone.png", "path": "files/gone.png"},
                {"name": "huge.mp4", "path": "files/huge.mp4"},
                {"name": "passwd", "path": "../../../etc/hostname"},
                {"name": "bad.png", "base64": "@@not base64@@"},
            ],
        ),
        query("s1", 1, f"Use my key {SECRET} to add a search box that filters the products when typing"),
        query(
            "s1",
            2,
            "Add a footer with the store's opening hours in a bold font",
            edits=[{"path": "../../outside.txt", "before": "a", "after": "b"}],
        ),
        '{"session": "s2", "turn": 0, "text": "Make the\n',  # cut short mid-string
        "not json at all\n",
        "[1, 2, 3]\n",
        '{"no": "session here"}\n',
        query(
            "s3",
            0,
            "Add a cart icon to the header that opens the cart panel on click",
            workspace={"archive": "evil.tar.gz"},
        ),
        query(
            "s6",
            0,
            "Add a newsletter signup form under the footer that validates the email",
            workspace={"git": "no-such-repo"},
        ),
        '{"session": "s9", "text": "' + "x" * 5000 + '"}\n',  # longer than the limit set below
    ]
    (root / "sessions.jsonl").write_bytes("".join(lines).encode() + b"\xff\xfe\x00junk\x9c\n" + b'{"session": "s4"')
    cc = root / "claude" / "-home-dev-shop"
    cc.mkdir(parents=True)
    (cc / "s5.jsonl").write_text(
        json.dumps({"type": "strange-new-record", "sessionId": "s5"})
        + "\n"
        + json.dumps(
            {
                "type": "user",
                "sessionId": "s5",
                "timestamp": "2026-11-30T11:00:00Z",
                "cwd": str(root / "no-such-repo"),
                "message": {"role": "user", "content": f"Fix the layout of the product grid, token {SECRET}"},
            }
        )
        + "\n"
    )
    return root


def test_bad_input_is_counted_with_its_reason_and_the_rest_goes_on(tmp_path):
    root = corpus(tmp_path / "in")
    settings = Settings(
        inputs=[root / "sessions.jsonl", root / "claude", root / "missing.jsonl"],
        validate=False,
        max_line_bytes=4096,
        select=SelectSettings(min_session_score=1, min_relative_score=0),
    )
    result = curate(settings, tmp_path / "out")
    funnel = json.loads((tmp_path / "out" / "funnel.json").read_text())
    read = funnel[0]
    assert read["remaining"] == 6  # s1's three queries, s3's, s6's, and s5's from the Claude Code transcript
    assert read["reasons"] == {
        "truncated JSON": 1,  # the file's last line, cut short
        "malformed JSON": 2,  # a line cut mid-string, and one that is not JSON
        "a JSON list, not an object": 1,
        "not a query record": 1,
        "line longer than 4096 bytes (5030 bytes)": 1,
        "not UTF-8 text (binary data)": 1,
        "unknown record type 'strange-new-record'": 1,
        "input not found": 1,
    }, read
    unreadable = [json.loads(line) for line in (tmp_path / "out" / "unreadable.jsonl").read_text().splitlines()]
    assert len(unreadable) == 9 and all(u["source"] and u["reason"] for u in unreadable)

    rows = {r["query_id"]: r for r in result.candidates.to_dicts()}
    first = rows["s1:0"]["problems"]
    assert any("gone.png" in p and "missing" in p for p in first), first
    assert any("huge.mp4" in p and "2147483648 bytes" in p for p in first), first
    assert any("passwd" in p and "outside the corpus folder" in p for p in first), first
    assert any("bad.png" in p and "does not decode" in p for p in first), first
    assert rows["s3:0"]["outcome"] == "unrecoverable" and "escape" in rows["s3:0"]["outcome_detail"].lower()
    assert rows["s6:0"]["outcome"] == "unrecoverable" and "no longer exists" in rows["s6:0"]["outcome_detail"]
    assert rows["s5:0"]["filter_non_editing"] == "non-editing: the session changed no file for it"  # no tool edits
    assert any("outside the workspace" in p for p in rows["s1:2"]["problems"]), rows["s1:2"]

    drafts = {d.task_id: d.folder for d in result.drafts}
    assert len(drafts) == 1  # s1 as one interval: the others could not be recovered
    folder = next(iter(drafts.values()))
    assert sorted(p.name for p in (folder / "attachments").iterdir()) == ["turn0-mockup.png"]  # only the good one
    assert not (folder / "app" / "outside.txt").exists() and not (tmp_path / "outside.txt").exists()

    # The secret is in two transcripts; no output of the run holds it.
    outputs = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert len(outputs) > 6
    leaked = [str(p) for p in outputs if SECRET.encode() in p.read_bytes()]
    assert not leaked, leaked
    assert SECRET not in str(result.candidates.to_dicts())  # parquet may compress: its values, read back
    assert "[redacted]" in (folder / "task.yaml").read_text()


@pytest.mark.browser
def test_the_funnel_page_shows_each_stage_as_a_bar_in_chromium(tmp_path):
    from codesign.runtime.browser import Browser

    root = corpus(tmp_path / "in")
    settings = Settings(inputs=[root / "sessions.jsonl"], validate=False,
                        select=SelectSettings(min_session_score=1, min_relative_score=0))  # fmt: skip
    curate(settings, tmp_path / "out")
    stages = json.loads((tmp_path / "out" / "funnel.json").read_text())

    async def look() -> tuple[list[dict[str, float]], list[str], bytes]:
        browser = Browser(os.environ.get("CODESIGN_CHROMIUM"))
        try:
            context = await browser.context("desktop")
            page = await context.new_page()
            await page.goto((tmp_path / "out" / "funnel.html").as_uri())
            bars = await page.eval_on_selector_all(
                "svg rect",
                "rs => rs.map(r => ({w: r.getBoundingClientRect().width, h: r.getBoundingClientRect().height}))",
            )
            labels = await page.eval_on_selector_all("svg text", "ts => ts.map(t => t.textContent)")
            shot = await page.screenshot(full_page=True)
            await context.close()
            return bars, labels, shot
        finally:
            await browser.close()

    bars, labels, shot = asyncio.run(look())
    (tmp_path / "funnel.png").write_bytes(shot)
    assert len(bars) == len(stages) and all(b["h"] > 10 for b in bars)
    widest = max(s["remaining"] for s in stages)
    for bar, stage in zip(bars, stages, strict=True):  # each bar's width is its share of the widest stage
        assert bar["w"] == pytest.approx(max(2, int(bars[0]["w"] * stage["remaining"] / widest)), abs=2), (bar, stage)
    assert [s["stage"] for s in stages] == labels[0::2]
