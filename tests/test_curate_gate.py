"""The gate on curated drafts, inline and fanned out on Ray: an app that renders is kept, one that renders
nothing is counted out with its failing step, and both executors give the same reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codesign.curate import Settings, curate
from codesign.curate.select import SelectSettings

PAGES = {
    "good": "<h1>Shop</h1>\n<p>Open daily.</p>\n",
    "blank": "<div id='root'></div>\n",  # renders nothing: not an app a user sees
}
ASKS = {  # far apart in words: neither is a near duplicate of the other
    "good": "Add a contact link to the page footer that opens the contact form when clicked",
    "blank": "Show a dismissible cookie banner at the bottom which hides itself after pressing accept",
}


def corpus(root: Path) -> Path:
    lines = []
    for name, page in PAGES.items():
        (root / "apps" / name).mkdir(parents=True)
        (root / "apps" / name / "index.html").write_text(page)
        lines.append(json.dumps({
            "session": name, "turn": 0, "timestamp": "2026-11-30T10:00:00Z",
            "text": ASKS[name],
            "workspace": {"folder": f"apps/{name}"},
            "edits": [{"path": "index.html", "before": page, "after": page + "<footer>contact</footer>\n"}],
        }) + "\n")  # fmt: skip
    (root / "s.jsonl").write_text("".join(lines))
    return root


def outcomes(root: Path, out: Path, executor: str) -> tuple[dict[str, tuple[str, str]], list[dict]]:
    settings = Settings(inputs=[root / "s.jsonl"], validate_executor=executor,
                        select=SelectSettings(min_session_score=1, min_relative_score=0))  # fmt: skip
    result = curate(settings, out)
    rows = {r["session"]: (r["outcome"], r["outcome_detail"]) for r in result.candidates.to_dicts()}
    return rows, json.loads((out / "funnel.json").read_text())


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.ray
def test_the_gate_keeps_what_renders_inline_and_on_ray_alike(tmp_path, ray_instance):
    root = corpus(tmp_path / "in")
    inline, funnel = outcomes(root, tmp_path / "inline", "inline")
    assert inline["good"][0] == "drafted", inline
    assert inline["blank"][0] == "gate failed" and inline["blank"][1].startswith("launch_render:"), inline
    assert "renders nothing" in inline["blank"][1]
    gate = next(s for s in funnel if s["stage"] == "gate passed")
    assert gate["remaining"] == 1 and gate["reasons"] == {"gate failed: launch_render": 1}, gate
    assert [p.name.split("-")[1:3] for p in (tmp_path / "inline" / "drafts").iterdir()] == [["add", "a"]]  # good

    on_ray, _ = outcomes(root, tmp_path / "ray", "ray")
    assert {k: v[0] for k, v in on_ray.items()} == {k: v[0] for k, v in inline.items()}
    assert on_ray["blank"][1].split(" (")[0] == inline["blank"][1].split(" (")[0]


@pytest.mark.slow
@pytest.mark.browser
def test_a_vite_app_without_lockfile_or_build_script_is_repaired_recorded_and_gated(tmp_path):
    """Scripted repairs: a `vite build` script added, a lockfile resolved by npm (confined, no scripts run);
    each is recorded on the draft, and the gate builds and renders the repaired app."""
    import shutil

    from codesign.config import bundled_suite

    root = tmp_path / "in"
    app = root / "apps" / "settings"
    shutil.copytree(bundled_suite() / "re-settings-theme-persist" / "app", app,
                    ignore=shutil.ignore_patterns("node_modules", "dist", "package-lock.json"))  # fmt: skip
    manifest = json.loads((app / "package.json").read_text())
    manifest["scripts"] = {"dev": "vite"}  # only a dev server, as many sessions' apps have
    (app / "package.json").write_text(json.dumps(manifest, indent=2))
    index = (app / "index.html").read_text()
    edited = index.replace("</body>", "<footer>c</footer></body>")
    (root / "s.jsonl").write_text(json.dumps({
        "session": "v", "turn": 0, "timestamp": "2026-11-30T10:00:00Z", "text": ASKS["good"],
        "workspace": {"folder": "apps/settings"},
        "edits": [{"path": "index.html", "before": index, "after": edited}],
    }) + "\n")  # fmt: skip
    settings = Settings(inputs=[root / "s.jsonl"], select=SelectSettings(min_session_score=1, min_relative_score=0))
    result = curate(settings, tmp_path / "out")
    assert len(result.drafts) == 1, result.candidates.select("outcome", "outcome_detail").to_dicts()
    draft = result.drafts[0].folder
    repairs = json.loads((draft / "session" / "provenance.json").read_text())["repairs"]
    assert repairs[0] == 'added the build script "vite build" (the app had only a dev server)', repairs
    assert repairs[1].startswith("resolved a missing package-lock.json"), repairs
    assert (draft / "app" / "package-lock.json").is_file() and not (draft / "app" / "node_modules").exists()
    assert json.loads((draft / "app" / "package.json").read_text())["scripts"]["build"] == "vite build"
    assert "repair: resolved a missing package-lock.json" in (draft / "criteria.yaml").read_text()
