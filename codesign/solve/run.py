"""Solve one task: fresh workspace, the regime drives the harness and model, the final state is a patch."""

from __future__ import annotations

import atexit
import dataclasses
import shutil
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.utils import get_method

from codesign._protocols import Harness, Model
from codesign._types import ExitStatus, Telemetry
from codesign.construct import build_sandbox, construct
from codesign.sandbox import scratch as scratch_dirs
from codesign.sandbox.dependencies import NODE_INSTALL, cached_node_modules, hydrate_node_modules
from codesign.solve.ended import Ended
from codesign.solve.preview import Preview
from codesign.solve.recorder import SolveRecorder
from codesign.tasks.loader import Task
from codesign.workspace import Baseline, Baselines, copy_tree, state_hash

ATTACHMENTS_DIR = "_attachments"  # inside the workspace, excluded from the diff


@dataclass
class SolveResult:
    patch: str
    telemetry: Telemetry


def build_model(cfg: dict[str, Any], task: Task, seed: int = 0) -> Model:
    # A model with a sampling seed gets the trial's: repeats (seeds=[0,1,2]) are different samples.
    cls = get_method(cfg["_target_"])
    if dataclasses.is_dataclass(cls) and "seed" in {f.name for f in dataclasses.fields(cls)}:
        cfg = {**cfg, "seed": (cfg.get("seed") or 0) + seed}
    # Only a model that declares it (the oracle) is handed the reference solution. It is passed after
    # instantiation so OmegaConf never tries to resolve ``${...}`` inside the patch text.
    handed = handed_patch(cfg, task)
    if handed is not None:
        return construct(cfg, reference_patch=handed)
    return construct(cfg)


def handed_patch(cfg: dict[str, Any], task: Task) -> str | None:
    """The solution a model that declares ``uses_reference`` is handed: the task's reference, or with
    ``near_miss: n`` its n-th near miss. Part of the solve's key (editing the patch solves again)."""
    if not cfg.get("uses_reference"):
        return None
    number = int(cfg.get("near_miss") or 0)
    return task.near_miss(number).patch if number else task.reference_patch()


def build_harness(cfg: dict[str, Any]) -> Harness:
    return construct(cfg)


def build_regime(cfg: dict[str, Any]) -> Any:
    return construct(cfg)


def prepare_workspace(task: Task, scratch: Path, node_cache: Path) -> tuple[Path, Baseline]:
    """A fresh copy of the app (plus attachments and installed dependencies) and its baseline snapshot."""
    workspace = scratch / "workspace"
    copy_tree(task.app_dir, workspace)
    env = task.manifest.environment
    if env.kind == "node":
        modules = cached_node_modules(workspace, node_cache, env.install or NODE_INSTALL)
        hydrate_node_modules(workspace, modules, hardlink=False)
    if task.manifest.attachments:
        (workspace / ATTACHMENTS_DIR).mkdir()
        for a in task.manifest.attachments:
            shutil.copy2(task.dir / a.path, workspace / ATTACHMENTS_DIR / Path(a.path).name)
    baseline = Baseline(scratch / "baseline.git", workspace, list(env.ignore))
    baseline.snapshot(_baselines(scratch.parent), state_hash(task.app_dir))  # tasks of one app share it
    return workspace, baseline


_BASELINES: dict[Path, Baselines] = {}
_BASELINES_LOCK = threading.Lock()


def _baselines(scratch_root: Path) -> Baselines:
    """This process's shared baseline snapshots under ``scratch_root``, removed when it exits (a killed
    process's are swept by the next run, like its other scratch folders)."""
    with _BASELINES_LOCK:
        if scratch_root not in _BASELINES:
            root = scratch_dirs.make("baselines", scratch_root)
            atexit.register(shutil.rmtree, root, True)
            _BASELINES[scratch_root] = Baselines(root)
        return _BASELINES[scratch_root]


def solve_task(
    task: Task,
    configs: dict[str, dict[str, Any]],
    out_dir: Path,
    node_cache: Path,
    scratch_root: str | None = None,
    keep_workspace: bool = False,
    preview: Preview | None = None,
    seed: int = 0,
) -> SolveResult:
    """Run one solve; whatever happens, return the final workspace as a patch plus telemetry."""
    out_dir.mkdir(parents=True, exist_ok=True)
    scratch = scratch_dirs.make(f"solve-{task.id}", scratch_root)
    trajectory = out_dir / "trajectory.jsonl"
    trajectory.unlink(missing_ok=True)
    try:
        workspace, baseline = prepare_workspace(task, scratch, node_cache)
        regime = build_regime(configs["regime"])
        recorder = SolveRecorder(trajectory, regime.limits())
        # A confined sandbox shows only system files, the workspace and its HOME; the suite (criteria,
        # reference solutions) and the store are also named, for sandboxes that would otherwise show them.
        hide = [str(task.dir.parent), str(out_dir.parent.parent)]
        sandbox = build_sandbox(configs["sandbox"], workspace, scratch / "home", hide)
        status, message = ExitStatus.SUBMITTED, ""
        try:
            model = build_model(configs["model"], task, seed)
            harness = build_harness(configs["harness"]) if configs["harness"] else None  # single-shot: none
            regime.solve(model, harness, sandbox, task.view(), recorder, preview)
        except Ended as e:
            status, message = e.status, e.message
        except Exception as e:  # a crash in the harness/model client/sandbox is infrastructure, recorded
            status, message = ExitStatus.INFRA_ERROR, f"{type(e).__name__}: {e}"
            recorder.log("crash", traceback=traceback.format_exc())
        finally:
            sandbox.close()
        patch = baseline.diff()
        cap_kb = getattr(regime, "max_patch_kb", None)
        if cap_kb is not None and len(patch.encode()) > cap_kb * 1024:  # e.g. a 30 MB file left behind
            status = ExitStatus.AGENT_ERROR
            message = (
                f"the final workspace differs from the app by {len(patch.encode()) / 1e6:.1f} MB, over the "
                f"regime's cap of {cap_kb} KB (regime.max_patch_kb); nothing is graded"
            )
            patch = ""
        recorder.log("end", exit_status=status.value, message=message)
        telemetry = recorder.close()
        telemetry.exit_status, telemetry.message = status.value, message[:2000]
        return SolveResult(patch, telemetry)
    finally:
        if not keep_workspace:
            shutil.rmtree(scratch, ignore_errors=True)
