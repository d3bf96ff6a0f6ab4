"""Near misses: every bundled task's wrong or partial solutions, their expected verdicts checked by the gate,
handed to solvers like the reference (their patch part of the solve's key), and graded by calibration."""

from __future__ import annotations

import json
import re
import shutil

import polars as pl
import pytest

from codesign import calibrate, validate
from codesign.errors import TaskError
from codesign.evaluate.gate import integrity
from codesign.runner import trial_specs
from codesign.tasks.loader import load_suite, load_task
from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest
from tests.conftest import SUITE
from tests.helpers import compose_config
from tests.test_judge import KEY_ENV, is_verifier, not_refuted, verdict

GOOD = "me-bakery-header-mockup"


def test_every_bundled_task_has_two_near_misses_that_are_near_and_distinct():
    for task in load_suite(SUITE).tasks:
        near = task.near_misses()
        assert len(near) >= 2, task.id
        changes = {c.id for c in task.criteria if not c.preserve}
        untouched = {c.id: ("PASS" if c.preserve else "FAIL") for c in task.criteria}
        for n in near:
            assert n.why.strip() and "\n" not in n.why.strip(), (task.id, n.name)
            assert set(n.verdicts.values()) != {"PASS"}, (task.id, n.name)  # not the reference
            assert n.verdicts != untouched, (task.id, n.name)  # not the untouched app
            assert any(n.verdicts[c] == "PASS" for c in changes), (task.id, n.name)  # part of the change is done
            assert n.patch.strip() and n.patch != task.reference_patch(), (task.id, n.name)
        assert len({json.dumps(n.verdicts, sort_keys=True) for n in near}) == len(near), task.id


def test_a_near_miss_that_does_not_apply_or_names_the_wrong_criteria_is_refused_by_name(suite_copy):
    root = suite_copy(GOOD)
    folder = root / GOOD / "solution" / "near-misses"
    first = sorted(folder.glob("*.yaml"))[0]
    task = load_task(root / GOOD)
    assert integrity(task) is None
    original = first.read_text()
    first.write_text(original.replace("tagline:", "tagline-typo:"))
    with pytest.raises(TaskError, match=rf"{first.stem}.yaml: verdicts must name every criterion .* missing: tagline;"):
        task.near_misses()
    assert f"{first.stem}.yaml" in (integrity(task) or "")
    first.write_text(re.sub(r"header-colour: \w+", "header-colour: MAYBE", original))
    assert "verdicts.header-colour: Input should be 'PASS', 'PARTIAL' or 'FAIL'" in (integrity(task) or "")
    first.write_text(original)
    patch = first.with_suffix(".patch")
    lines = patch.read_text().splitlines(keepends=True)
    context = next(i for i, line in enumerate(lines) if line.startswith(" ") and line.strip())
    lines[context] = " a line the app does not have\n"  # the hunk fits nowhere
    patch.write_text("".join(lines))
    assert f"near-misses/{first.stem}.patch does not apply" in (integrity(task) or "")
    patch.unlink()
    assert f"{first.stem}.patch is missing" in (integrity(task) or "")


def test_the_near_miss_a_solver_is_handed_decides_its_solve_key(suite_copy):
    root = suite_copy(GOOD)
    cfg = compose_config("tasks=all", f"tasks.root={root}", "model=near_miss_1")
    spec = trial_specs(cfg, [(GOOD, root / GOOD)])[0]
    task = load_task(root / GOOD)
    before = spec.trial_key(task)
    second = trial_specs(compose_config("tasks=all", f"tasks.root={root}", "model=near_miss_2"), [(GOOD, root / GOOD)])
    assert second[0].trial_key(task) != before  # another near miss, another solve
    patch = sorted((root / GOOD / "solution" / "near-misses").glob("*.patch"))[0]
    patch.write_text(patch.read_text() + "\n")
    assert spec.trial_key(load_task(root / GOOD)) != before  # an edited near miss is solved again


@pytest.mark.browser
@pytest.mark.slow
def test_the_gate_fails_a_near_miss_whose_expected_verdict_is_wrong(suite_copy, tmp_path, monkeypatch, capsys):
    root = suite_copy(GOOD)
    first = sorted((root / GOOD / "solution" / "near-misses").glob("*.yaml"))[0]
    expected = load_task(root / GOOD).near_misses()[0].verdicts
    flipped = next(c for c, v in expected.items() if v == "PASS")
    first.write_text(first.read_text().replace(f"{flipped}: PASS", f"{flipped}: FAIL"))
    monkeypatch.chdir(tmp_path)
    code = validate.main(["tasks=all", f"tasks.root={root}"])
    report = pl.read_parquet(next(tmp_path.glob("outputs/validate/*/validation.parquet"))).row(0, named=True)
    assert code == 1 and report["discrimination"] == "ok" and report["solvability"] == "ok"
    assert (
        report["near_misses"].startswith("FAIL")
        and f"{first.stem}: {flipped} is PASS, expected FAIL" in (report["near_misses"])
    )
    capsys.readouterr()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.duration(40)
def test_calibration_grades_every_near_miss_and_compares_the_judge_with_the_probes(tmp_path, monkeypatch, capsys):
    """A judge that passes exactly the preserved criteria, over the oracle, the noop and both near misses."""

    def preserver(req: ServedRequest) -> Reply:
        if is_verifier(req):
            return not_refuted()
        keep = "must keep working" in json.dumps(req.messages)
        return verdict("PASS" if keep else "FAIL", ["shot:/@desktop", "dom:/@desktop"])

    monkeypatch.chdir(tmp_path)
    root = tmp_path / "suite"
    shutil.copytree(SUITE / GOOD, root / GOOD)
    task = load_task(root / GOOD)
    with ScriptedModelServer(preserver) as s:
        monkeypatch.setenv(KEY_ENV, "sk-judge")
        code = calibrate.main([
            "evaluator=llm", "tasks=all", f"tasks.root={root}", "executor=inline", f"store.root={tmp_path / 'store'}",
            "evaluator.frames=[]", *(f"evaluator.{r}.{k}={v}" for r in ("judge", "verifier") for k, v in (
                ("name", f"scripted-{r}"), ("model", "openai/scripted"), ("api_base", s.openai_base),
                ("api_key_env", KEY_ENV))),
        ])  # fmt: skip
    assert code == 0
    out = next(tmp_path.glob("outputs/calibrate/*"))
    overall = pl.read_parquet(out / "agreement.parquet").filter(pl.col("kind") == "all").row(0, named=True)
    # By hand from the task's files: the judge says PASS on the preserved criteria and FAIL on the rest; the
    # probes give the oracle all PASS, the noop the untouched verdicts, each near miss its .yaml's verdicts.
    judged = {c.id: "PASS" if c.preserve else "FAIL" for c in task.criteria}
    truths = [dict.fromkeys(judged, "PASS"), {c.id: "PASS" if c.preserve else "FAIL" for c in task.criteria}]
    truths += [n.verdicts for n in task.near_misses()]
    same = sum(truth[c] == judged[c] for truth in truths for c in judged)
    assert overall["items"] == len(judged) * len(truths) == 24
    assert overall["agreement"] == pytest.approx(same / 24)
    negatives = [(truth[c], judged[c]) for truth in truths for c in judged if truth[c] != "PASS"]
    assert overall["false_pass"] == pytest.approx(sum(j == "PASS" for _, j in negatives) / len(negatives))
    solvers = {p.name.rsplit("_", 1)[0] for p in out.iterdir() if p.is_dir()}
    assert solvers == {"oracle", "noop", "near_miss_1", "near_miss_2"}
    assert "llm vs probes on 24 criteria (oracle, noop, near_misses)" in capsys.readouterr().out
