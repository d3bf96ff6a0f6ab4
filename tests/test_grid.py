"""Grids through ``python -m codesign … -m``: every cell in one pool on Ray, each solve paid once."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from codesign.config import CONF_DIR
from codesign.testing.model_server import Reply, ScriptedModelServer
from tests.helpers import REPO
from tests.test_judge import KEY_ENV, careful_judge, make_task


def hydra_cli(monkeypatch, *args: str) -> int:
    """``python -m codesign ARGS`` in this process (the session's Ray instance and browser are reused)."""
    from codesign.__main__ import main

    monkeypatch.setattr(sys, "argv", ["codesign", *args])
    try:
        main()
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def cell_dirs(root: Path) -> list[Path]:
    return sorted(p for p in (root / "outputs" / "multirun").glob("*/*/*") if (p / "tasks.parquet").exists())


def tasks_of(cell: Path) -> pl.DataFrame:
    return pl.read_parquet(cell / "tasks.parquet", glob=False)  # cell names hold [ ] (Hydra's override names)


@pytest.mark.browser
@pytest.mark.ray
@pytest.mark.slow
def test_minus_m_runs_a_grid_in_one_pool_on_ray(ray_instance, tmp_path, monkeypatch, suite_copy, capsys):
    """model × regime through -m with the default launcher: the 2 × 2 offline cells run in one pool of Ray
    actors, each concluded in Hydra's multirun layout with its own W&B run; the cells of a model whose key
    is missing are reported and the others run."""
    root = suite_copy("me-bakery-header-mockup")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    code = hydra_cli(monkeypatch, "-m", "model=oracle,noop,gpt-6-astra", "regime=agentic,single_shot", "tasks=all",
                     f"tasks.root={root}", "executor=ray", "executor.num_workers=2",
                     f"store.root={tmp_path / 'store'}")  # fmt: skip
    out = capsys.readouterr()
    assert code == 2, out.err  # two cells could not start: the user's to fix, told without a traceback
    assert "Traceback" not in out.err and "error: 2 of 6 cells could not start" in out.err
    assert "4 cells, 4 trials in one pool" in out.out and "[4/4 " in out.out and "[1/1 " not in out.out
    assert "2 of 6 cells could not start" in out.err and "OPENAI_API_KEY" in out.err
    cells = cell_dirs(tmp_path)
    assert [c.name for c in cells] == ["0_model=oracle,regime=agentic", "1_model=oracle,regime=single_shot",
                                       "2_model=noop,regime=agentic", "3_model=noop,regime=single_shot"]  # fmt: skip
    for c in cells:
        assert {"config.yaml", "hydra.yaml", "overrides.yaml"} <= {p.name for p in (c / ".hydra").iterdir()}
        assert len(list((c / "wandb").glob("offline-run-*/run-*.wandb"))) == 1  # one W&B run per cell
        assert tasks_of(c)["status"].to_list() == ["ok"]
    strict = [tasks_of(c)["strict"][0] for c in cells]
    assert strict[:2] == [1.0, 1.0] and max(strict[2:]) < 0.5
    assert (cells[0].parent / "rank_stability.parquet").exists()


JUDGES = ["openai/judge-a", "openai/judge-b", "openai/judge-c", "openai/judge-d"]
EDIT = '<edit path="index.html"><search>Come again soon</search><replace>Thanks for visiting</replace></edit>'


class HeldSolver:
    """A scripted solver whose calls are held until a second solve is known to want the endpoint as well: its
    call arrived here (the endpoint's limit did not hold) or it waits for a slot at the pool's slot keeper. So
    the two solves would overlap at this server unless the limit kept them apart. A call goes on at once when
    another one already ended."""

    def __init__(self) -> None:
        self.server = ScriptedModelServer(self.policy)
        self.ended = 0
        self.saw_a_solve_wait_for_its_slot = False

    def policy(self, req) -> Reply:
        import ray

        from codesign.solve.models.limits import ACTOR_PREFIX, endpoint_key

        keeper = ACTOR_PREFIX + endpoint_key("openai/scripted", self.server.openai_base)
        give_up = time.monotonic() + 120  # a bound for a failure only: the state below comes within seconds
        while not self.ended and self.server.in_flight < 2 and time.monotonic() < give_up:
            with contextlib.suppress(ValueError):  # no keeper (yet): no limit to wait at
                if ray.get(ray.get_actor(keeper).stats.remote())["waiting"] >= 1:
                    self.saw_a_solve_wait_for_its_slot = True
                    break
            time.sleep(0.05)
        self.ended += 1
        return Reply(EDIT)


def twin_counter_suite(root: Path) -> Path:
    suite = make_task(root)
    twin = suite / "counter2"
    twin.mkdir()
    for part in ("app", "solution"):
        (twin / part).mkdir()
        for f in (suite / "counter" / part).iterdir():
            (twin / part / f.name).write_bytes(f.read_bytes())
    for f in ("task.yaml", "criteria.yaml"):
        (twin / f).write_text((suite / "counter" / f).read_text().replace("id: counter\n", "id: counter2\n"))
    return suite


def judge_grid(monkeypatch, tmp_path: Path, judges: list[str], limit: int) -> tuple[int, HeldSolver, set[str]]:
    """The judges × two counter tasks as one -m grid on two Ray actors, the solver's endpoint limited to
    ``limit`` calls at once (model.max_concurrency)."""
    suite = twin_counter_suite(tmp_path / "suite")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, "sk-judge")  # the value Ray's workers got at start (conftest)
    held = HeldSolver()
    with held.server as solver, ScriptedModelServer(careful_judge) as judge:
        code = hydra_cli(
            monkeypatch, "-m", "evaluator=llm", "evaluator.judge.model=" + ",".join(judges), "regime=single_shot",
            "model=litellm", "model.name=scripted", "model.model=openai/scripted",
            f"model.api_base={solver.openai_base}", f"model.api_key_env={KEY_ENV}", f"model.max_concurrency={limit}",
            f"evaluator.judge.api_base={judge.openai_base}", f"evaluator.judge.api_key_env={KEY_ENV}",
            "evaluator.verifier.model=openai/verifier", f"evaluator.verifier.api_base={judge.openai_base}",
            f"evaluator.verifier.api_key_env={KEY_ENV}",
            "evaluator.frames=[]", "tasks=all", f"tasks.root={suite}", "executor=ray", "executor.num_workers=2",
            "tracker=none", f"store.root={tmp_path / 'store'}",
        )  # fmt: skip
        judge_models = {r.model for r in judge.requests}
    return code, held, judge_models


@pytest.mark.browser
@pytest.mark.ray
@pytest.mark.slow
def test_a_four_judge_grid_solves_once_and_every_judge_grades_the_same_patch(ray_instance, tmp_path, monkeypatch):
    """Four judge cells on an empty store, two Ray actors: one solve per (model, task, seed), counted at the
    scripted model server, and all four judges grade one byte-identical patch. The solver's endpoint allows
    one call at a time (model.max_concurrency=1), across both actors: its two tasks are solved in turn — while
    one is answered, the other is seen waiting for its slot."""
    code, held, judge_models = judge_grid(monkeypatch, tmp_path, JUDGES, limit=1)
    assert code == 0
    assert len(held.server.requests) == 2  # one solve per task, not one per cell
    assert held.server.peak_in_flight == 1  # the endpoint's limit held across the pool ...
    assert held.saw_a_solve_wait_for_its_slot  # ... while the two solves wanted the endpoint at once
    assert {f"openai/{m}" for m in judge_models} >= set(JUDGES)  # four judges really graded
    cells = cell_dirs(tmp_path)
    assert len(cells) == 4
    rows = pl.concat([tasks_of(c) for c in cells])
    assert rows["status"].unique().to_list() == ["ok"] and rows["strict"].min() == 1.0
    for _, per_task in rows.group_by("task_id"):
        assert per_task["trial_key"].n_unique() == 1 and per_task["eval_key"].n_unique() == 4
        graded = {(tmp_path / "store" / "trials" / r["trial_key"] / "evals" / r["eval_key"] / "diff.patch").read_bytes()
                  for r in per_task.iter_rows(named=True)}  # fmt: skip
        assert len(graded) == 1 and b"Thanks for visiting" in graded.pop()


@pytest.mark.browser
@pytest.mark.ray
@pytest.mark.slow
def test_with_a_limit_of_two_the_two_solves_overlap(ray_instance, tmp_path, monkeypatch):
    """The control of the test above: the same held solver sees both solves at once when the limit allows it."""
    code, held, _ = judge_grid(monkeypatch, tmp_path, JUDGES[:1], limit=2)
    assert code == 0 and len(held.server.requests) == 2
    assert held.server.peak_in_flight == 2 and not held.saw_a_solve_wait_for_its_slot


@pytest.mark.browser
@pytest.mark.slow
def test_other_launchers_still_work(tmp_path, monkeypatch, suite_copy, capsys):
    root = suite_copy("me-bakery-header-mockup")
    monkeypatch.chdir(tmp_path)
    code = hydra_cli(monkeypatch, "-m", "hydra/launcher=basic", "model=oracle,noop", "tasks=all",
                     f"tasks.root={root}", "executor=inline", "tracker=none",
                     f"store.root={tmp_path / 'store'}")  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "in one pool" not in out
    assert [tasks_of(c)["strict"][0] for c in cell_dirs(tmp_path)] == [1.0, pytest.approx(1 / 3)]


def test_the_alias_and_experiments_are_multiruns():
    assert "hydra._internal" not in "".join(p.read_text() for p in (REPO / "codesign").rglob("*.py"))
    for experiment in (CONF_DIR / "experiment").glob("*.yaml"):
        text = experiment.read_text()
        assert "mode: MULTIRUN" in text and "sweeper:" in text, experiment.name


def test_endpoint_limits_cover_solvers_judges_and_verifiers():
    from codesign.solve.models.limits import endpoint_key, endpoint_limits

    model = {"_target_": "codesign.solve.models.litellm_model.LitellmModel", "model": "openai/x", "api_base": None}
    specs = [
        {"model": {**model, "max_concurrency": 4}, "evaluator": {"judge": {**model, "max_concurrency": 2},
                                                                 "verifier": {**model, "model": "openai/v"}}},
        {"model": {**model, "max_concurrency": 3, "api_base": "http://gateway/v1"}},
    ]  # fmt: skip
    gateway = endpoint_key("openai/x", "http://gateway/v1")
    assert endpoint_limits(specs) == {endpoint_key("openai/x", None): 2, gateway: 3}


def truthful_judge(req):
    """A judge for the bakery task that passes what is truly on the page: the tagline criterion PASSes when the
    page text it is shown (quoted DOM evidence, not the request or the criterion) has the tagline; every other
    criterion FAILs on the page's DOM. So the oracle outscores noop in judge-graded cells too."""
    import re

    from tests.test_judge import criterion_of, is_verifier, not_refuted, verdict

    if is_verifier(req):
        return not_refuted()
    text = json.dumps(req.messages)
    page = "".join(re.findall(r"<<<EVIDENCE id=dom:[^>]*>>>(.*?)<<<END", text, flags=re.S))
    if criterion_of(req) == "tagline" and "Fresh bread daily" in page:
        return verdict("PASS", ["dom:/@desktop"], "the header text reads Fresh bread daily")
    return verdict("FAIL", ["dom:/@desktop"], "the page lacks the asked change")


def _grid_params(experiment: str) -> dict[str, str]:
    from omegaconf import OmegaConf

    return dict(OmegaConf.load(CONF_DIR / "experiment" / f"{experiment}.yaml").hydra.sweeper.params)


def _grid_size(experiment: str, fixed: set[str]) -> int:
    import math

    return math.prod(len(str(v).split(",")) for k, v in _grid_params(experiment).items() if k not in fixed)


@pytest.fixture(scope="module")
def experiments_store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("experiments") / "store"  # shared: the experiments reuse each other's stages


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")))
def test_every_experiment_runs_offline(experiment, experiments_store, tmp_path, monkeypatch, capsys):
    """Each paper experiment, as shipped, runs its whole grid from `experiment=NAME` alone (no -m) with the
    offline ceiling and floor as models and a scripted judge, on a task of the sample suite (one: the grids are
    what is tested; the RE path of every harness is in test_harnesses)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, "sk-judge")
    with ScriptedModelServer(truthful_judge) as judge:
        code = hydra_cli(
            monkeypatch, f"experiment={experiment}", "model=oracle,noop",
            "evaluator.judge.model=openai/judge", f"evaluator.judge.api_base={judge.openai_base}",
            f"evaluator.judge.api_key_env={KEY_ENV}", "evaluator.verifier.model=openai/verifier",
            f"evaluator.verifier.api_base={judge.openai_base}", f"evaluator.verifier.api_key_env={KEY_ENV}",
            "tasks=sample", "tasks.include=[me-bakery-header-mockup]", "executor=inline",
            "tracker=none", f"store.root={experiments_store}", "attribution.below=null",
        )  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err[-3000:]
    cells = cell_dirs(tmp_path)
    assert len(cells) == 2 * _grid_size(experiment, {"model"})
    rows = pl.concat([tasks_of(c) for c in cells], how="diagonal_relaxed")
    assert set(rows["status"]) == {"ok"}
    by_model = dict(rows.group_by("model").agg(pl.col("strict").mean()).iter_rows())
    assert by_model["oracle"] > by_model["noop"]  # graded by probes (hybrid) or by the judge, what is there counts


@pytest.mark.parametrize("multirun", [False, True])
def test_a_command_in_which_no_trial_could_run_exits_non_zero(multirun, tmp_path, monkeypatch, capsys):
    broken = tmp_path / "suite" / "broken"
    broken.mkdir(parents=True)
    (broken / "task.yaml").write_text("id: broken\ntrack: ME\n")  # no request, no app: cannot load
    monkeypatch.chdir(tmp_path)
    args = ["tasks=all", f"tasks.root={tmp_path / 'suite'}", "executor=inline", "tracker=none",
            f"store.root={tmp_path / 'store'}"]  # fmt: skip
    code = hydra_cli(monkeypatch, *(["-m", "model=oracle,noop"] if multirun else []), *args)
    err = capsys.readouterr().err
    assert code == 1 and "error: no trial could run" in err and "task_error" in err and "Traceback" not in err
    assert len(list((tmp_path / "outputs").rglob("tasks.parquet"))) == (2 if multirun else 1)  # still written
