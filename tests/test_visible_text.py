"""The judge sees what a user sees: page text comes from the rendered page, hidden text apart or not at all.

One rule (codesign.runtime.visible) serves page-text evidence, the judge's ``read_dom`` tool and the gate's
blank-page check. A screen-reader-only span (1 px, clipped) counts as hidden: a sighted user sees nothing
of it (the ARIA snapshot still carries it).
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import polars as pl
import pytest

from codesign.evaluate.evidence import EvidenceSession, page_text
from codesign.runtime.serve import static_server
from codesign.runtime.visible import rendered_text
from codesign.testing.model_server import Reply, ServedRequest, ToolCall
from tests.conftest import gate_in
from tests.test_judge import KEY_ENV, criterion_of, evaluate, make_task, verdict

pytestmark = pytest.mark.browser
NO_VERIFIER = ["evaluator.verifier=null", "evaluator.audit=false"]
SR_ONLY = "position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap"

# A wrong total hidden in every common way next to the right one, in the counter app's note (inline markup).
HIDING = {
    "display-none": 'style="display:none"',
    "hidden-attribute": "hidden",
    "visibility-hidden": 'style="visibility:hidden"',
    "opacity-zero": 'style="opacity:0"',
    "off-screen-left": 'style="position:absolute;left:-9999px"',
    "off-screen-top": 'style="position:absolute;top:-9999px"',
    "screen-reader-only": f'style="{SR_ONLY}"',
    "zero-size": 'style="display:inline-block;width:0;height:0;overflow:hidden"',
}
NOTE = "".join(f"<span {how}>Total: $0 by {name}</span>" for name, how in HIDING.items()) + "<b>Total: $42</b>"


def fenced(part: str) -> str:
    """The quoted data inside a part's evidence fence."""
    found = re.search(r"<<<EVIDENCE id=\S+ boundary=(\w+)>>>\n(.*)\n<<<END \1>>>", part, re.S)
    assert found, part
    return found.group(2)


def parts_of(req: ServedRequest) -> list[str]:
    return [p["text"] for p in req.messages[1]["content"] if p.get("type") == "text"]


# --- the rule, on a live page ------------------------------------------------------------------------------

LAB = f"""<!doctype html><html><head><title>Visible lab</title><style>
  .scroller {{ height: 40px; overflow: auto; }}
  .cut {{ width: 80px; overflow: hidden; white-space: nowrap; }}
</style></head><body>
<h1>Cart</h1>
<p>Total: <b>$42</b></p>
<p style="display:none">h-display</p>
<p hidden>h-attribute</p>
<p hidden style="display:block">v-hidden-attribute-overridden</p>
<p style="visibility:hidden">h-visibility <span style="visibility:visible">v-visible-child</span></p>
<div style="opacity:0"><p>h-opacity-ancestor</p></div>
<p style="position:absolute;left:-9999px">h-off-left</p>
<p style="position:absolute;top:-9999px">h-off-top</p>
<p style="text-indent:-9999px">h-indent</p>
<span style="{SR_ONLY}">h-sr-only</span>
<p style="clip-path:inset(50%)">h-clip-path</p>
<p style="font-size:0">h-font-zero</p>
<div style="transform:scale(0)">h-scaled-away</div>
<div style="position:fixed;bottom:-200px">h-fixed-below</div>
<details><summary>v-summary</summary>h-folded</details>
<div class="scroller"><p>a</p><p>b</p><p>c</p><p>v-scrolled-away</p></div>
<div class="cut">v-partly-cut-off-at-the-edge</div>
<p style="position:absolute;left:2000px">v-off-right-scrollable</p>
<label>Name <input value="Alice"></label> <input type="password" value="abc">
<input type="checkbox" checked> <select><option>Monthly</option><option selected>Annual</option></select>
<input type="hidden" value="h-never-rendered">
<p><span>in</span><span>line</span></p>
<p style="margin-top:3000px">v-below-the-fold</p>
</body></html>"""


@pytest.fixture(scope="module")
def lab_session(loop, browser, tmp_path_factory):
    root = tmp_path_factory.mktemp("visible-lab")
    (root / "index.html").write_text(LAB)
    (root / "hidden.html").write_text('<h1 hidden>Nothing</h1><p style="position:absolute;left:-500px">here</p>')
    (root / "picture.html").write_text('<img alt="" width="40" height="40" src="data:image/gif;base64,'
                                       'R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=">')  # fmt: skip
    (root / "sabotage.html").write_text(  # an app whose scripts break what the reader uses
        "<script>window.getComputedStyle = () => { throw new Error('sabotaged'); }</script><p>still here</p>"
    )
    with static_server(root, spa_fallback=False) as url:
        session = EvidenceSession(browser, url, tmp_path_factory.mktemp("evidence"), root)
        loop.run(session.collect(["/", "/hidden.html", "/picture.html", "/sabotage.html"], ["desktop"], "", ""))
        yield session
        loop.run(session.close())


def test_evidence_keeps_the_rendered_text_next_to_the_dom(lab_session):
    item = lab_session.items["dom:/@desktop"]
    assert item.path == "root@desktop.html" and item.data == {"text": "root@desktop.text.json"}
    stored = json.loads((lab_session.out_dir / item.data["text"]).read_text())
    assert "Total: $42" in stored["visible"] and stored["from_html"] is False


def test_only_what_a_user_can_see_is_visible_text(lab_session):
    text = page_text(lab_session.out_dir, lab_session.items["dom:/@desktop"])
    visible_words = set(re.findall(r"[vh]-[a-z-]+", text.visible))
    assert visible_words == {
        "v-hidden-attribute-overridden", "v-visible-child", "v-summary", "v-scrolled-away",
        "v-partly-cut-off-at-the-edge", "v-off-right-scrollable", "v-below-the-fold",
    }  # fmt: skip
    why = {h["text"]: h["why"] for h in text.hidden}
    assert why == {
        "h-display": "display:none", "h-attribute": "hidden attribute", "h-visibility": "visibility:hidden",
        "h-opacity-ancestor": "opacity:0", "h-off-left": "off the page", "h-off-top": "off the page",
        "h-indent": "off the page", "h-sr-only": "clipped", "h-clip-path": "clipped", "h-font-zero": "zero size",
        "h-scaled-away": "zero size", "h-fixed-below": "clipped", "h-folded": "in a closed <details>",
    }  # fmt: skip
    assert "h-never-rendered" not in json.dumps(text.hidden) + text.visible
    lines = text.visible.splitlines()
    assert lines[:2] == ["Cart", "Total: $42"]  # one block per line, inline markup joined as it reads
    assert "Name [Alice] [•••] [x] [Annual]" in lines and "inline" in lines


def test_the_rule_scopes_to_an_element(loop, lab_session):
    page = lab_session.pages[("/", "desktop")].page
    text = loop.run(rendered_text(page, "reading the scroller", page.locator(".scroller")))
    assert text.visible.splitlines() == ["a", "b", "c", "v-scrolled-away"] and not text.hidden
    folded = loop.run(rendered_text(page, "reading the details", page.locator("details")))
    assert folded.visible == "v-summary" and folded.hidden == [{"text": "h-folded", "why": "in a closed <details>"}]


def test_a_page_of_hidden_text_is_blank_and_a_picture_is_not(lab_session):
    hidden = page_text(lab_session.out_dir, lab_session.items["dom:/hidden.html@desktop"])
    assert hidden.blank and [h["text"] for h in hidden.hidden] == ["Nothing", "here"]
    picture = page_text(lab_session.out_dir, lab_session.items["dom:/picture.html@desktop"])
    assert not picture.blank and picture.media == 1 and picture.visible == ""


def test_evidence_without_rendered_text_falls_back_to_the_html_and_says_so(lab_session, tmp_path):
    from dataclasses import replace

    from codesign.evaluate.quoting import quote

    older = replace(lab_session.items["dom:/@desktop"], data=None)  # as stored before rendered text existed
    text = page_text(lab_session.out_dir, older)
    assert text.from_html and "h-display" in text.visible and "Total: $42" in text.visible
    [part] = quote(older, lab_session, "b0undary")
    assert "from the stored HTML: may include text hidden from the user" in part["text"]


def test_a_page_that_breaks_the_reader_keeps_its_evidence_and_falls_back_to_its_html(lab_session):
    item = lab_session.items["dom:/sabotage.html@desktop"]
    assert "sabotaged" in item.data["text_error"]  # and collect() went on: the fixture got its session
    text = page_text(lab_session.out_dir, item)
    assert text.from_html and text.visible == "still here"


# --- through the real pipeline: the judge's evidence and its read_dom tool ----------------------------------


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-judge")


@pytest.mark.slow
def test_the_judge_is_shown_the_visible_total_and_the_hidden_one_only_as_hidden(tmp_path, key):
    def judge(req: ServedRequest) -> Reply:
        if criterion_of(req) == "note-text" and req.turn == 0:
            return Reply("Reading the note.", [ToolCall("read_dom", {"selector": ".note"})])
        return verdict("FAIL", ["dom:/@desktop"], "the note shows a total, not the thanks")

    root = make_task(tmp_path / "suite", note=NOTE)
    tables = evaluate(tmp_path, judge, None, "noop", root, *NO_VERIFIER)
    first, followup = (r for r in tables["judge_requests"] if criterion_of(r) == "note-text")

    parts = parts_of(first)
    [page] = [p for p in parts if p.startswith("page text of / at desktop")]
    assert "Total: $42" in fenced(page) and "Total: $0" not in fenced(page)
    assert "as a user sees it" in page.split("\n")[0]
    [hidden] = [p for p in parts if p.startswith("HIDDEN text of / at desktop")]
    assert "NOT visible to a user" in hidden.split("\n")[0]
    assert all(f"Total: $0 by {name}" in fenced(hidden) for name in HIDING)
    assert "Total: $0" not in "\n".join(p for p in parts if p is not hidden)  # nowhere but under that heading

    [tool] = [m["content"] for m in followup.messages if m.get("role") == "tool"]
    assert "Total: $42" in fenced(tool) and "Total: $0" not in tool
    assert f"({len(HIDING)} piece(s) of text not visible to a user left out)" in fenced(tool)


# --- the gate: a page whose only content is hidden renders nothing --------------------------------------------

HIDE_ALL = (
    "h1 { visibility: hidden; } #count { opacity: 0; } button { position: absolute; left: -9999px; }"
    " .note { display: none; }"
)


def gate_task(root: Path, css: str) -> Path:
    """The counter task with ``css`` in its page and a reference patch that applies (the gate checks it)."""
    make_task(root)
    app = root / "counter" / "app" / "index.html"
    before = app.read_text().replace("h1 { color: rgb(20, 60, 120); }", css)
    app.write_text(before)
    after = before.replace("Come again soon", "Thanks for visiting")
    diff = difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/index.html", "b/index.html")
    (root / "counter" / "solution" / "solution.patch").write_text("".join(diff))
    return root


@pytest.mark.slow
def test_the_gate_calls_a_page_of_hidden_text_blank(tmp_path):
    code, out, folder = gate_in(tmp_path / "run-hidden", f"tasks.root={gate_task(tmp_path / 'hidden', HIDE_ALL)}")
    row = pl.read_parquet(folder / "validation.parquet").row(0, named=True)
    assert code == 1 and row["integrity"] == "ok" and row["install_build"] == "ok"
    assert row["launch_render"] == "FAIL: dom:/@desktop renders nothing; dom:/@mobile renders nothing"
    assert "renders nothing" in out

    # The control: the same task with its text shown passes that step.
    code, _, folder = gate_in(tmp_path / "run-shown", f"tasks.root={gate_task(tmp_path / 'shown', '')}")
    assert code == 0 and pl.read_parquet(folder / "validation.parquet").row(0, named=True)["launch_render"] == "ok"


def starting_empty(root: Path, script: str = "") -> Path:
    """The hidden-text task, declared to start empty (as Web-Bench imports are), its page running ``script``."""
    gate_task(root, HIDE_ALL)
    manifest = root / "counter" / "task.yaml"
    manifest.write_text(manifest.read_text() + "environment: {starts_blank: true}\n")
    if script:
        app = root / "counter" / "app" / "index.html"
        app.write_text(app.read_text().replace("</body>", f"<script>{script}</script></body>"))
        patch = root / "counter" / "solution" / "solution.patch"
        before = app.read_text()
        after = before.replace("Come again soon", "Thanks for visiting")
        diff = difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/index.html", "b/index.html")
        patch.write_text("".join(diff))
    return root


@pytest.mark.slow
def test_a_task_that_starts_empty_is_warned_about_unless_its_page_threw(tmp_path):
    code, out, folder = gate_in(tmp_path / "run-empty", f"tasks.root={starting_empty(tmp_path / 'empty')}")
    row = pl.read_parquet(folder / "validation.parquet").row(0, named=True)
    assert row["launch_render"] == "ok" and "dom:/@desktop shows nothing a user can see" in out

    # A blank page that threw is a crashed app, whatever the task says about starting empty.
    crash = starting_empty(tmp_path / "crash", "throw new Error('root not found')")
    code, out, folder = gate_in(tmp_path / "run-crash", f"tasks.root={crash}")
    row = pl.read_parquet(folder / "validation.parquet").row(0, named=True)
    assert code == 1 and row["launch_render"].startswith("FAIL: dom:/@desktop renders nothing (")
    assert "root not found" in row["launch_render"]
