"""Hydra composition: groups, defaults, printing and unknown options."""

from __future__ import annotations

import os

import pytest
from hydra.utils import get_class

from codesign.errors import ConfigError
from tests.helpers import cli, compose_config


def test_default_composes_every_group():
    cfg = compose_config()
    for group in ("model", "harness", "regime", "evaluator", "tasks", "sandbox", "tracker", "executor"):
        assert group in cfg, group
    assert cfg.model.name == "oracle" and cfg.evaluator.name == "probe" and cfg.regime.max_turns == 120
    assert cfg.tasks.root.endswith("codesign/suite")
    # Every _target_ points at a class that exists.
    for group in ("model", "harness", "regime", "evaluator", "sandbox", "tracker", "executor"):
        assert get_class(cfg[group]._target_)


def test_overrides_select_other_options():
    cfg = compose_config("model=noop", "tracker=none", "executor=inline", "regime.max_turns=5")
    assert cfg.model.name == "noop"
    assert cfg.tracker._target_.endswith("NullTracker")
    assert cfg.executor._target_.endswith("InlineExecutor")
    assert cfg.regime.max_turns == 5


def test_cfg_job_prints_composed_config():
    proc = cli("--cfg", "job", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "model:" in proc.stdout and "_target_: codesign.solve.models.OracleModel" in proc.stdout
    assert "evaluator:" in proc.stdout


def test_unknown_option_lists_valid_choices():
    proc = cli("model=nope", timeout=60)
    assert proc.returncode != 0
    assert "Could not find 'model/nope'" in proc.stderr
    assert "oracle" in proc.stderr and "noop" in proc.stderr  # Hydra's list of available options


def test_experiments_compose_and_declare_their_grids():
    from codesign.config import CONF_DIR

    names = sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))
    assert {"main_results", "harness_sensitivity", "regime_ablation", "evaluator_sensitivity"} <= set(names)
    for name in names:
        proc = cli(f"experiment={name}", "--cfg", "hydra", timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "params:" in proc.stdout
    proc = cli("experiment=harness_sensitivity", "--cfg", "hydra", timeout=60)
    assert "harness: native,mini_swe_agent,claude_code" in proc.stdout
    assert compose_config("experiment=harness_sensitivity").tasks.include is None  # every task


def test_incompatible_harness_and_sandbox_fail_before_any_trial():
    proc = cli("harness=claude_code", "sandbox=docker", "tracker=none", timeout=60)
    assert proc.returncode != 0
    assert "cannot run in sandbox DockerSandbox" in proc.stderr and "sandbox=local" in proc.stderr


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (
            ["+harness.max_format_eror=1"],
            ["harness.max_format_eror is not a setting", "did you mean harness.max_format_errors"],
        ),
        (["+harness.foo=1"], ["harness.foo is not a setting", "allowed: max_format_errors"]),
        (["regime.max_turns=abc"], ["regime.max_turns='abc' is not allowed", "expected int ≥ 1"]),
        (["regime.max_turns=0"], ["greater than or equal to 1", "expected int ≥ 1"]),
        (["executor.max_concurrency=0"], ["executor.max_concurrency=0 is not allowed"]),
        (["sandbox=docker", "sandbox.cpus=-2"], ["sandbox.cpus=-2 is not allowed", "expected float > 0"]),
        (["seeds=[]"], ["seeds=[] is not allowed", "at least 1 item"]),
        (["attribution.below=2"], ["attribution.below=2 is not allowed", "≤ 1"]),
        (["evaluator=llm", "+evaluator.judge.tempreature=1"], ["did you mean evaluator.judge.temperature"]),
        (["model=litellm", "model.model=x", "model.timeout_s=-1"], ["model.timeout_s=-1 is not allowed"]),
    ],
)
def test_config_mistakes_are_refused_before_any_trial_naming_key_and_what_is_allowed(overrides, says):
    from codesign.build import preflight
    from codesign.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        preflight(compose_config(*overrides))
    for text in says:
        assert text in str(err.value), str(err.value)


def test_a_config_mistake_stops_the_cli_with_the_message_and_runs_nothing(tmp_path):
    proc = cli("regime.max_turns=0", "tracker=none", f"store.root={tmp_path}", timeout=120)
    assert proc.returncode == 2 and "error: regime.max_turns=0 is not allowed" in proc.stderr
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr  # a user error, not a crash
    assert not (tmp_path / "trials").exists()

    # Asked for, the traceback is still there (debugging codesign itself).
    debug = {**os.environ, "HYDRA_FULL_ERROR": "1"}
    proc = cli("regime.max_turns=0", "tracker=none", f"store.root={tmp_path}", timeout=120, env=debug)
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "ConfigError" in proc.stderr


def test_a_root_of_your_own_with_the_sample_list_says_to_use_tasks_all(tmp_path):
    from codesign.runner import prepare

    (tmp_path / "suite" / "my-task").mkdir(parents=True)
    cfg = compose_config(f"tasks.root={tmp_path / 'suite'}", "tracker=none")  # tasks=sample's include list
    with pytest.raises(ConfigError) as err:
        prepare(cfg, tmp_path / "out")
    assert "none of the 5 tasks in tasks.include" in str(err.value) and "tasks=all tasks.root=DIR" in str(err.value)
