"""Human review in real Chromium: list, filter, label by keyboard, labels in the store across restarts, labels
exported and imported, the agreement of a person with the graders, and a hostile app's text kept as text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from codesign.report.collect import from_store
from codesign.review import Review, items_of, serve, stratified_sample
from codesign.review.transfer import export_labels, import_labels
from codesign.runner import run
from codesign.score import labels as stored
from codesign.store import Store
from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest
from tests.helpers import REPO, compose_config
from tests.test_judge import KEY_ENV, careful_judge, criterion_of, is_verifier, make_task

pytestmark = [pytest.mark.browser, pytest.mark.slow]
# What a hostile candidate writes into its app, and a judge quotes back: it must stay text in the review page.
HOSTILE = "<img src=x onerror=\"window.__pwned='img'\"><script>window.__pwned='script'</script>"
# test_judge's counter task, each criterion with a probe (the deterministic grader a person is compared with).
CRITERIA = """criteria:
  - id: heading-colour
    text: The heading is dark blue.
    kind: visual
    probe:
      expect:
        - style: {selector: h1, property: color, equals: "rgb(20, 60, 120)"}
  - id: counter-works
    text: Clicking the "Add one" button increases the count by one.
    kind: interaction
    preserve: true
    probe:
      steps:
        - click: "#plus"
      expect:
        - text: {selector: "#count", equals: "1"}
  - id: note-text
    text: The note under the counter says "Thanks for visiting".
    kind: content
    probe:
      expect:
        - text: {selector: ".note", equals: "Thanks for visiting"}
"""


def hostile_judge(req: ServedRequest) -> Reply:
    """FAILs the note, quoting the app's text in its reason; test_judge's careful judge for the rest."""
    if is_verifier(req) or criterion_of(req) != "note-text":
        return careful_judge(req)
    reply = {"verdict": "FAIL", "reason": f"the note reads {HOSTILE}", "failure_category": "wrong",
             "evidence_ids": ["shot:/@desktop", "dom:/@desktop"]}  # fmt: skip
    return Reply(json.dumps(reply))


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """A store holding the noop's counter graded by the probes and by the hostile-quoting judge."""
    root = tmp_path_factory.mktemp("review")
    suite = make_task(root / "suite", note=HOSTILE, criteria=CRITERIA)
    store = root / "store"
    with ScriptedModelServer(hostile_judge) as judge, pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_ENV, "sk-judge")
        for evaluator in ("probe", "llm"):
            llm = [f"evaluator.{r}.{k}={v}" for r in ("judge", "verifier") for k, v in (
                ("name", f"scripted-{r}"), ("model", "openai/scripted"), ("api_base", judge.openai_base),
                ("api_key_env", KEY_ENV))] + ["evaluator.frames=[]"]  # fmt: skip
            out = root / f"run-{evaluator}"
            out.mkdir()
            run(compose_config(f"evaluator={evaluator}", "tasks=all", f"tasks.root={suite}", "model=noop",
                               "executor=inline", "tracker=none", f"store.root={store}",
                               *(llm if evaluator == "llm" else [])), out)  # fmt: skip
    return store


def review_of(store: Path, reviewer: str = "ann") -> Review:
    return Review(items_of(from_store(str(store))), reviewer)


def test_a_reviewer_filters_labels_five_criteria_by_keyboard_and_the_labels_outlive_the_server(graded, loop, browser):
    review = review_of(graded)
    assert review.items.height == 6  # 3 criteria × (probe, llm)
    server = serve(review)

    async def label_five() -> dict:
        context = await (await browser.get()).new_context()
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        await page.goto(server.url + "/")
        listed = await page.locator("#items tbody tr[data-href]").count()
        await page.select_option("#filter-evaluator", "llm")
        await page.click("#apply")
        await page.wait_for_url("**evaluator=llm**")
        filtered = await page.locator("#items tbody tr[data-href]").count()
        await page.goto(server.url + "/")
        await page.keyboard.press("Enter")  # the first item
        await page.wait_for_url("**/item/0")
        typed = []
        for key in ("p", "f", "a", "c", "p"):
            here = page.url
            if key == "c":  # a note, typed in the field (keys there are text, not shortcuts), then Escape
                await page.keyboard.press("n")
                await page.keyboard.type("the header <b>overlaps</b> pfac")
                await page.keyboard.press("Escape")
            await page.keyboard.press(key)
            await page.wait_for_function("u => location.href !== u", arg=here)
            typed.append(here.split("/item/")[1].split("?")[0])
        await page.goto(server.url + "/")
        shown = await page.locator("#items tbody td.label").all_inner_texts()
        progress = await page.inner_text("#progress")
        await context.close()
        return {"listed": listed, "filtered": filtered, "typed": typed, "shown": shown, "progress": progress,
                "errors": errors}  # fmt: skip

    try:
        seen = loop.run(label_five())
    finally:
        server.stop()
    assert seen["errors"] == []
    assert seen["listed"] == 6 and seen["filtered"] == 3
    assert seen["typed"] == ["0", "1", "2", "3", "4"]  # saving moves on to the next item
    assert seen["shown"] == ["PASS", "FAIL", "PARTIAL", "CANT_TELL", "PASS", ""]
    assert seen["progress"].startswith("5 of 6 shown reviewed")
    # In the store, one file per label; a new server (a restart) reads them back, the note as typed.
    files = Store(str(graded)).glob("labels/*/*/*/*.json")
    assert len(files) == 5 and all(f.endswith("/ann.json") for f in files)
    again = review_of(graded)
    assert {i: label.verdict for i, label in again.mine.items()} == {0: "PASS", 1: "FAIL", 2: "PARTIAL",
                                                                     3: "CANT_TELL", 4: "PASS"}  # fmt: skip
    assert again.mine[3].note == "the header <b>overlaps</b> pfac"
    # Another reviewer sees their own progress, and ann's labels as others'.
    bob = review_of(graded, "bob")
    assert bob.mine == {} and [label.reviewer for label in bob.others[0]] == ["ann"]


def test_a_hostile_apps_text_and_a_reviewers_note_stay_text_in_the_review_page(graded, loop, browser):
    review = review_of(graded)
    note_item = review.items.filter((pl.col("evaluator") == "llm") & (pl.col("criterion_id") == "note-text"))
    item = note_item["item"].item()
    review.save(item, "FAIL", HOSTILE)
    server = serve(review)

    async def look() -> dict:
        context = await (await browser.get()).new_context()
        page = await context.new_page()
        response = await page.goto(f"{server.url}/item/{item}")
        await page.click("#uncited summary")
        body = await page.inner_text("body")
        result = {
            "pwned": await page.evaluate("window.__pwned === undefined ? null : window.__pwned"),
            "reason": await page.inner_text("#reason"),
            "note": await page.input_value("#note"),
            "body": body,
            "csp": response.headers.get("content-security-policy", ""),
            "images": await page.eval_on_selector_all("img.shot", "els => els.map(e => e.complete && e.naturalWidth)"),
            "scripts": await page.eval_on_selector_all("script", "els => els.length"),
        }
        first = await page.get_attribute("img.shot", "src")
        image = await context.request.get(server.url + first)
        result["image_type"] = image.headers["content-type"]
        other = await context.request.get(
            server.url + first.replace(first.split("/")[-1], "646f6d3a2f406465736b746f70")
        )
        result["dom_as_file"] = other.status  # dom:/@desktop, an HTML file: never served, only shown as text
        foreign = await context.request.get(server.url + "/", headers={"Host": "attacker.example"})
        result["foreign_host"] = foreign.status
        forged = await context.request.post(server.url + "/label", form={"item": str(item), "verdict": "PASS"})
        result["forged"] = forged.status
        await context.close()
        return result

    try:
        seen = loop.run(look())
    finally:
        server.stop()
    assert seen["pwned"] is None  # neither the img's onerror nor the script ran
    assert HOSTILE in seen["reason"] and seen["note"] == HOSTILE  # shown as the characters they are
    assert "<script>window.__pwned='script'</script>" in seen["body"]  # the app's DOM (cited), as text
    assert "script-src 'nonce-" in seen["csp"] and "default-src 'none'" in seen["csp"]
    assert seen["images"] and all(seen["images"]) and seen["image_type"] == "image/png"
    assert seen["scripts"] == 1  # the page's own
    assert seen["dom_as_file"] == 404 and seen["foreign_host"] == 403 and seen["forged"] == 403
    assert review_of(graded).mine[item].verdict == "FAIL"  # the forged post changed nothing


def test_labels_export_and_import_and_a_bad_row_is_named(graded, tmp_path):
    review = review_of(graded)
    first = review.items.row(0, named=True)
    review.save(0, "PASS", "first, ann")
    exported = tmp_path / "labels.csv"
    assert "exported" in export_labels(review, exported)
    frame = pl.read_csv(exported, infer_schema=False)
    mine = frame.filter((pl.col("reviewer") == "ann") & (pl.col("criterion_id") == first["criterion_id"]))
    assert mine.filter(pl.col("eval_key") == first["eval_key"])["note"].to_list() == ["first, ann"]
    # Labels made elsewhere: a new reviewer's row for item 0, and one for a criterion not under review.
    keys = {k: first[k] for k in ("trial_key", "eval_key", "task_id", "criterion_id")}
    rows = pl.DataFrame([{**keys, "reviewer": "carol", "verdict": "FAIL", "note": "", "at": ""},
                         {**keys, "criterion_id": "no-such-criterion", "reviewer": "carol", "verdict": "PASS",
                          "note": "", "at": ""}])  # fmt: skip
    elsewhere = tmp_path / "carol.parquet"
    rows.write_parquet(elsewhere)
    saved, refused = import_labels(review, elsewhere)
    assert saved == 1 and len(refused) == 1 and "no-such-criterion by carol" in refused[0]
    assert review_of(graded, "carol").mine[0].verdict == "FAIL"
    bad = tmp_path / "bad.csv"
    rows.with_columns(reviewer=pl.lit("erin"), verdict=pl.Series(["PASS", "YES"])).write_csv(bad)
    with pytest.raises(Exception, match=r"bad\.csv row 3: verdict 'YES' is not one of PASS, PARTIAL"):
        stored.read_file(bad)
    # The command line says the same and stores nothing of a file with a bad row.
    before = len(Store(str(graded)).glob("labels/*/*/*/*.json"))
    proc = subprocess.run([sys.executable, "-m", "codesign.review", "--store", str(graded), "--import", str(bad)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)  # fmt: skip
    assert proc.returncode == 2 and "row 3: verdict 'YES'" in proc.stderr and "Traceback" not in proc.stderr
    assert len(Store(str(graded)).glob("labels/*/*/*/*.json")) == before


def test_the_report_compares_a_person_with_the_graders(graded, tmp_path):
    review = review_of(graded, "dan")
    # dan agrees with the probes on every criterion: his verdicts are the probe's.
    for row in review.items.filter(pl.col("evaluator") == "probe").iter_rows(named=True):
        review.save(row["item"], row["verdict"], "")
    out = tmp_path / "report" / "report.html"
    proc = subprocess.run([sys.executable, "-m", "codesign.report", "--store", str(graded), "--out", str(out),
                           "--no-plots"], capture_output=True, text=True, cwd=REPO, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = pl.read_parquet(out.parent / "agreement.parquet").filter(pl.col("kind") == "all")
    dan = {r["rater"]: r for r in table.filter(pl.col("reference") == "human:dan").iter_rows(named=True)}
    assert dan["deterministic"]["items"] == 3 and dan["deterministic"]["agreement"] == 1.0
    llm = review.items.filter(pl.col("evaluator") == "llm").sort("criterion_id")
    probe = review.items.filter(pl.col("evaluator") == "probe").sort("criterion_id")
    expected = (llm["verdict"] == probe["verdict"]).mean()
    assert dan["llm"]["agreement"] == pytest.approx(expected)
    assert "human:dan" in (out.parent / "report.md").read_text()


def test_a_stratified_sample_covers_every_stratum_in_proportion_and_is_seeded():
    kinds = ["visual"] * 60 + ["content"] * 30 + ["interaction"] * 8 + ["responsive"] * 2
    items = pl.DataFrame({"kind": kinds, "verdict": ["PASS"] * 100}).with_row_index("item")
    sample = stratified_sample(items, 20, seed=1)
    counts = dict(sample.group_by("kind").len().iter_rows())
    # One from each stratum, then the other 16 by largest remainder (9.6, 4.8, 1.28, 0.32 → 10, 5, 1, 0).
    assert sample.height == 20 and counts == {"visual": 11, "content": 6, "interaction": 2, "responsive": 1}
    assert stratified_sample(items, 20, seed=1).equals(sample)
    assert not stratified_sample(items, 20, seed=2).equals(sample)
    assert stratified_sample(items, 500, seed=1).height == 100
