"""Probe grading against a real page in real headless Chromium: every assertion passes and fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from codesign.evaluate import assertions, probes
from codesign.evaluate.evidence import EvidenceSession
from codesign.runtime.serve import static_server
from codesign.tasks.schema import Criterion

pytestmark = pytest.mark.browser

PAGE = """<!doctype html><html><head><title>Probe lab</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { margin: 0; font-family: sans-serif; }
  h1 { color: #336699; font-size: 32px; margin: 0; }
  .row { display: flex; gap: 10px; }
  .box { width: 100px; height: 40px; background: #eee; }
  .hidden { display: none; }
  @media (max-width: 600px) { .row { flex-direction: column; } }
  @media (prefers-color-scheme: dark) { body { background: rgb(0, 0, 0); } }
</style></head><body>
<h1 id="title">Hello   probe
  lab</h1>
<div class="row"><div class="box" id="left">L</div><div class="box" id="right">R</div></div>
<p class="hidden" id="secret">secret</p>
<input id="qty" value="3">
<button id="inc" aria-label="Increase quantity" onclick="
  const q = document.getElementById('qty'); q.value = String(Number(q.value) + 1);
  localStorage.setItem('qty', q.value); document.getElementById('done').style.display = 'block';">+</button>
<p id="done" style="display:none">Updated</p>
<a href="/missing" data-kind="nav">Missing</a>
<select id="size"><option>S</option><option>M</option></select>
</body></html>"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    (root / "index.html").write_text(PAGE)
    (root / "app.js").write_text("export const answer = 42;\n")
    (root / "noisy.html").write_text("<script>console.error('boom')</script><p>noisy</p>")
    (root / "covered.html").write_text(  # a button that is there, visible and enabled, but under an overlay
        '<button id="under">press</button>'
        '<div id="veil" style="position:fixed;inset:0;background:rgba(0,0,0,.1)"></div>'
    )
    (root / "hash.html").write_text(  # a hash-routed page whose count lives in memory until the page reloads
        '<p id="n">0</p><button id="b" onclick="n.textContent = Number(n.textContent) + 1">+</button>'
    )
    (root / "wide.html").write_text(
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<div style="width: 700px; height: 20px; background: red">too wide</div>'
    )
    with static_server(root, spa_fallback=False) as url:
        yield root, url


@pytest.fixture(scope="module")
def session(lab, loop, browser, tmp_path_factory):
    """Evidence is collected once; graders only read the shared pages (steps get fresh contexts)."""
    root, url = lab
    s = EvidenceSession(browser, url, tmp_path_factory.mktemp("evidence"), root)
    loop.run(s.collect(["/", "/noisy.html"], ["desktop", "mobile"], "", ""))
    yield s
    loop.run(s.close())


def grade(loop, session, probe: dict, *, preserve: bool = False, kind: str = "content"):
    c = Criterion.model_validate({"id": "c1", "text": "t", "kind": kind, "preserve": preserve, "probe": probe})
    return loop.run(probes.grade(c, session))


PASSING = [
    {"text": {"selector": "h1", "equals": "Hello probe lab"}},
    {"text": {"selector": "h1", "contains": "probe"}},
    {"text": {"selector": "h1", "matches": "^Hello\\s+probe"}},
    {"text": {"selector": "h1", "absent": "goodbye"}},
    {"text": {"selector": "h1", "equals": "HELLO PROBE LAB", "ignore_case": True}},
    {"value": {"selector": "#qty", "number": 3}},
    {"visible": "#left"},
    {"hidden": "#secret"},
    {"hidden": "#does-not-exist"},
    {"count": {"selector": ".box", "equals": 2}},
    {"count": {"selector": ".box", "min": 1, "max": 2}},
    {"style": {"selector": "h1", "property": "color", "equals": "#336699"}},
    {"style": {"selector": "h1", "property": "font-size", "equals": "30px", "tolerance": 0.1}},
    {"style": {"selector": "h1", "property": "color", "not_equals": "rgb(0, 0, 0)"}},
    {"attribute": {"selector": "a", "name": "data-kind", "equals": "nav"}},
    {"attribute": {"selector": "a", "name": "target", "exists": False}},
    {"storage": {"key": "qty", "exists": False}},
    {"route_status": {"route": "/", "status": 200}},
    {"route_status": {"route": "/missing", "status": 404}},
    {"console_clean": {}},
    {"position": {"selector": "#left", "left_of": "#right", "within_viewport": True}},
    {"position": {"selector": "#title", "above": "#left"}},
    {"role": {"role": "button", "name": "Increase quantity", "exact": True, "count": 1}},
    {"no_horizontal_overflow": {}},
    {"source": {"glob": "*.js", "contains": "answer = 42"}},
    {"source": {"glob": "app.js", "absent": "TODO"}},
    {"title": {"equals": "Probe lab"}},
    {"text": {"selector": ".box", "matches": "^[LR]$", "match": "every"}},
    {"text": {"selector": ".box", "equals": "R", "match": "any"}},
    {"style": {"selector": ".box", "property": "width", "equals": "100px", "match": "every"}},
    {"box": {"selector": "#left", "inside": ".row", "same_width_as": "#right", "min_width": 100, "max_height": 40}},
    {"box": {"selector": "#left", "outside": "#right"}},
    {"url": {"equals": "/"}},
]

FAILING = [
    ({"text": {"selector": "h1", "equals": "Goodbye"}}, "wrong"),
    ({"text": {"selector": "h2", "contains": "x"}}, "missing"),
    ({"value": {"selector": "#qty", "equals": "4"}}, "wrong"),
    ({"visible": "#secret"}, "wrong"),
    ({"count": {"selector": ".box", "equals": 3}}, "wrong"),
    ({"style": {"selector": "h1", "property": "font-size", "equals": "20px", "tolerance": 0.1}}, "wrong"),
    ({"attribute": {"selector": "a", "name": "href", "contains": "/home"}}, "wrong"),
    ({"route_status": {"route": "/missing", "status": 200}}, "wrong"),
    ({"position": {"selector": "#right", "left_of": "#left"}}, "wrong"),
    ({"role": {"role": "button", "name": "Delete"}}, "missing"),
    ({"source": {"glob": "*.css", "contains": "x"}}, "missing"),
    ({"title": {"contains": "Other"}}, "wrong"),
    ({"text": {"selector": ".box", "equals": "L", "match": "every"}}, "wrong"),
    ({"visible": {"selector": "p", "match": "every"}}, "wrong"),
    ({"box": {"selector": "#left", "inside": "#right"}}, "wrong"),
    ({"box": {"selector": "#left", "max_width": 50}}, "wrong"),
    ({"url": {"contains": "/cart"}}, "wrong"),
]


@pytest.mark.parametrize("assertion", PASSING, ids=lambda a: next(iter(a)))
def test_assertion_passes(loop, session, assertion):
    v = grade(loop, session, {"expect": [assertion]})
    assert v.verdict == "PASS", v.reason
    assert v.evidence_ids and v.failure_category is None


@pytest.mark.parametrize(("assertion", "category"), FAILING, ids=lambda a: next(iter(a)) if isinstance(a, dict) else a)
def test_assertion_fails(loop, session, assertion, category):
    v = grade(loop, session, {"expect": [assertion]})
    assert v.verdict == "FAIL", v.reason
    assert v.failure_category == category
    name = next(iter(assertion))
    assert f"expected {name}" in v.reason  # what was asked for, next to what was found
    if isinstance(assertion[name], dict):
        asked = {k: v for k, v in assertion[name].items() if k != "selector"}
        assert all(repr(value) in v.reason for value in asked.values()), v.reason


def test_goto_reloads_a_hash_routed_page(loop, session):
    """goto is a real load, also when only the #fragment changes (no navigation for the browser)."""
    probe = {"route": "/hash.html#/a", "steps": [{"click": "#b"}, {"goto": {"route": "/hash.html#/b"}}],
             "expect": [{"text": {"selector": "#n", "equals": "0"}}]}  # fmt: skip
    v = grade(loop, session, probe, kind="interaction")
    assert v.verdict == "PASS", v.reason


def test_console_errors_fail_console_clean(loop, session):
    v = grade(loop, session, {"route": "/noisy.html", "expect": [{"console_clean": {}}]})
    assert v.verdict == "FAIL" and "boom" in v.reason


def test_mobile_viewport_changes_layout(loop, session):
    v = grade(loop, session, {"viewport": "mobile", "expect": [{"position": {"selector": "#right", "below": "#left"}}]})
    assert v.verdict == "PASS", v.reason


def test_steps_are_performed_and_recorded(loop, session):
    v = grade(
        loop,
        session,
        {
            "steps": [{"click": "#inc"}, {"click": "#inc"}, {"select": {"selector": "#size", "value": "M"}}],
            "expect": [
                {"value": {"selector": "#qty", "number": 5}},
                {"visible": "#done"},
                {"storage": {"key": "qty", "equals": "5"}},
                {"value": {"selector": "#size", "equals": "M"}},
            ],
        },
        kind="interaction",
    )
    assert v.verdict == "PASS", v.reason
    actions = [session.items[i] for i in v.evidence_ids if i.startswith("action:")]
    assert [a.data["step"] for a in actions] == ["click", "click", "select"]
    assert actions[0].data["state_changed"] and actions[0].data["ok"]
    assert "shot:c1" in v.evidence_ids and (session.out_dir / "probe_c1.png").stat().st_size > 1000
    # Steps ran in a fresh context: the shared evidence page was not touched.
    shared = grade(loop, session, {"expect": [{"value": {"selector": "#qty", "number": 3}}]})
    assert shared.verdict == "PASS"


def test_unreachable_element_is_its_own_outcome(loop, session):
    v = grade(loop, session, {"steps": [{"click": "#nope"}], "expect": [{"visible": "#done"}]}, kind="interaction")
    assert v.verdict == "FAIL" and v.failure_category == "element_never_reached" and "step 1" in v.reason


def test_partial_credit_only_when_allowed(loop, session):
    probe = {"expect": [{"visible": "#left"}, {"visible": "#secret"}]}
    assert grade(loop, session, probe).verdict == "FAIL"
    assert grade(loop, session, {**probe, "partial": True}).verdict == "PARTIAL"


def test_failed_preservation_is_a_regression(loop, session):
    v = grade(
        loop, session, {"expect": [{"count": {"selector": ".box", "equals": 5}}]}, preserve=True, kind="preservation"
    )
    assert v.verdict == "FAIL" and v.failure_category == "regressed"


@pytest.mark.parametrize(
    ("actual", "expected", "tol", "ok"),
    [
        ("rgb(51, 102, 153)", "#336699", 0, True),
        ("rgb(51, 102, 153)", "#336698", 0, False),
        ("rgb(51, 102, 153)", "rgb(50, 100, 150)", 0.03, True),
        ("16px", "16px", 0, True),
        ("16px", "17px", 0.05, False),
        ("16px", "17px", 0.1, True),
        ("16px solid", "16px dashed", 0.5, False),
    ],
)
def test_style_tolerance(actual, expected, tol, ok):
    assert assertions.style_matches(actual, expected, tol) is ok


def test_evidence_files_exist(session):
    for vp, width in (("desktop", 1280), ("mobile", 390)):
        shot = session.items[f"shot:/@{vp}"]
        png = (session.out_dir / shot.path).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert int.from_bytes(png[16:20], "big") == width
        assert "Probe lab" in (session.out_dir / session.items[f"dom:/@{vp}"].path).read_text()
    assert session.items["route:/"].data == {"status": 200}
    assert session.items["console:/noisy.html@desktop"].data["messages"][0]["text"] == "boom"
    assert any(r["url"].endswith("/noisy.html") for r in session.items["network:/noisy.html@desktop"].data)
    assert Path(session.out_dir / "diff.patch").is_file()


def test_static_server_answers_byte_ranges(lab):
    """Media must be seekable in the browser: the evaluation server honours Range requests."""
    import urllib.request

    root, url = lab
    req = urllib.request.Request(url + "/app.js", headers={"Range": "bytes=7-12"})
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 206 and resp.headers["Content-Range"] == f"bytes 7-12/{(root / 'app.js').stat().st_size}"
        assert resp.read() == (root / "app.js").read_bytes()[7:13]
    with urllib.request.urlopen(urllib.request.Request(url + "/app.js", headers={"Range": "bytes=-3"})) as resp:
        assert resp.read() == (root / "app.js").read_bytes()[-3:]


def test_overflow_is_caught_on_mobile(loop, session):
    """Mobile emulation widens innerWidth to fit overflowing content; the check must still see it."""
    wide = {"route": "/wide.html", "viewport": "mobile", "steps": [{"wait": {"ms": 10}}],
            "expect": [{"no_horizontal_overflow": {}}]}  # fmt: skip
    v = grade(loop, session, wide)
    assert v.verdict == "FAIL" and "overflow 318px" in v.reason  # 700px + 8px body margin - 390px
    assert grade(loop, session, {**wide, "viewport": "desktop"}).verdict == "PASS"


# "At once" without a clock: the bound on an existing target is made longer than the test's own guard
# (``loop.run``'s 180 s), so a lookup that waited it out instead of failing at once would fail the test.
FOREVER_S = 10_000.0


def test_a_missing_target_fails_at_once_once_the_page_has_settled(loop, session, monkeypatch):
    from codesign.runtime import waiting

    monkeypatch.setattr(waiting, "ACTION_BOUND_S", FOREVER_S)
    v = grade(loop, session, {"steps": [{"click": "#nope"}], "expect": [{"visible": "#done"}]}, kind="interaction")
    assert "no element matches '#nope' once the page has settled" in v.reason


def test_a_target_that_never_becomes_actionable_says_what_covers_it(loop, session, monkeypatch):
    from codesign.runtime import waiting

    # What covers the target is read after the click gave up, so a bound of 1 s names it however loaded the
    # machine is (Playwright's own call log had not always reached "intercepts pointer events" in 5 s).
    monkeypatch.setattr(waiting, "ACTION_BOUND_S", 1.0)
    for step in ("click", "hover"):
        covered = {"route": "/covered.html", "steps": [{step: "#under"}], "expect": [{"visible": "#x"}]}
        v = grade(loop, session, covered, kind="interaction")
        assert v.failure_category == "element_never_reached"
        assert "waited for:" in v.reason and v.reason.endswith("the target is covered by div#veil"), v.reason


def test_a_hidden_target_fails_at_once(loop, session, monkeypatch):
    from codesign.runtime import waiting

    monkeypatch.setattr(waiting, "ACTION_BOUND_S", FOREVER_S)
    probe = {"steps": [{"click": "#secret"}], "expect": [{"visible": "#done"}]}
    hidden = grade(loop, session, probe, kind="interaction")
    assert "'#secret' is not visible once the page has settled" in hidden.reason


def test_colour_scheme_and_any_viewport_are_emulated(loop, session):
    dark = {"color_scheme": "dark", "expect": [{"style": {"selector": "body", "property": "background-color",
                                                           "equals": "rgb(0, 0, 0)"}}]}  # fmt: skip
    assert grade(loop, session, dark).verdict == "PASS"
    assert grade(loop, session, {**dark, "color_scheme": "light"}).verdict == "FAIL"
    narrow = {
        "viewport": {"width": 500, "height": 700},
        "expect": [{"position": {"selector": "#left", "above": "#right"}}],
    }
    assert grade(loop, session, narrow).verdict == "PASS"  # below the 600 px breakpoint: stacked
    assert grade(loop, session, {**narrow, "viewport": {"width": 700, "height": 700}}).verdict == "FAIL"


def test_assertions_between_steps(loop, session):
    steps = [{"click": "#inc"}, {"expect": [{"value": {"selector": "#qty", "number": 4}}]}, {"click": "#inc"}]
    v = grade(loop, session, {"steps": steps, "expect": [{"value": {"selector": "#qty", "number": 5}}]},
              kind="interaction")  # fmt: skip
    assert v.verdict == "PASS", v.reason
    steps[1] = {"expect": [{"value": {"selector": "#qty", "number": 9}}]}
    v = grade(loop, session, {"steps": steps, "expect": [{"value": {"selector": "#qty", "number": 5}}]},
              kind="interaction")  # fmt: skip
    assert v.verdict == "FAIL" and v.failure_category == "wrong"
    assert "step 2 (expect)" in v.reason and "'4'" in v.reason and "9" in v.reason  # found 4, expected 9
