"""``python -m codesign.export inspect PATH… OUT [--format eval|json] [--filter KEY=VALUE]``

Writes one Inspect AI eval log per cell (model, harness, regime, evaluator) of the runs at PATH — run folders and
multirun/sweep folders, as ``python -m codesign.report`` takes them — with Inspect's own log API, so that
``inspect view --log-dir OUT`` shows them. One sample per trial: the task's request (attachments as Inspect
content), the trajectory as Inspect chat messages, one score per criterion (C / P / I with the grader's reason;
an ungraded criterion is Inspect's unscored NaN, never an I) plus ``strict``, ``graded`` and ``full_pass``, and
the task's labels, the telemetry and the cell as metadata. docs/export.md ("Inspect AI logs") has the details.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import mimetypes
import os
import re
import shutil
import sys
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

import polars as pl
import yaml

from codesign._types import TOOL_KINDS, TrialStatus, Ungraded, Verdict
from codesign.errors import CodesignError, ConfigError, EnvironmentSetupError, TaskError
from codesign.report.collect import Collection, Run, collect, find_runs, keep_only
from codesign.score.metrics import CELL, EVAL_TELEMETRY
from codesign.store import Store, is_remote
from codesign.tasks.loader import Task, load_task

try:  # the optional ``inspect`` extra (pyproject.toml): main() says how to install it
    from inspect_ai._util.error import EvalError  # the type of EvalSample.error; inspect_ai.log lacks the name
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalPlan,
        EvalPlanStep,
        EvalResults,
        EvalSample,
        EvalSampleLimit,
        EvalScore,
        EvalSpec,
        EvalStats,
        write_eval_log,
    )
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageUser,
        Content,
        ContentAudio,
        ContentDocument,
        ContentImage,
        ContentText,
        ContentVideo,
        ModelOutput,
        ModelUsage,
        messages_from_openai,
    )
    from inspect_ai.scorer import CORRECT, INCORRECT, PARTIAL, Score

    _MISSING: ImportError | None = None
except ImportError as e:
    _MISSING = e

Format = Literal["eval", "json"]
SCORER = "codesign"
TRIAL_SCORES = ("strict", "graded", "full_pass")
VERDICT_KEY = [*CELL, "seed", "task_id", "run"]  # a kept trial's verdicts (codesign.report.collect)
MAX_INLINE_BYTES = 20 * 1024 * 1024  # a larger attachment is named by its path (Inspect takes paths too)
TELEMETRY = (
    "exit_status",
    "exit_message",
    "turns",
    "tool_calls",
    *(f"tools_{k}" for k in TOOL_KINDS),
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost_usd",
    "cost_source",
    "solve_s",
    "eval_s",
    "eval_attempts",
    "n_grading_failed",
    *EVAL_TELEMETRY,
)
TRIAL_FIELDS = (
    "status",
    "bucket",
    "stage",
    "message",
    "trial_key",
    "eval_key",
    "run",
    "node",
    "retries",
    "infra_events",
    "older_code",
    "attribution",
    "attribution_reason",
    "n_criteria",
    "n_pass",
    "n_partial",
    "n_not_gradable",
)
# How a solve that hit a regime cap shows in Inspect: the limit's type and the regime setting that holds its value.
CAPS: dict[str, tuple[Literal["turn", "time", "cost"], str]] = {
    "turn_cap": ("turn", "max_turns"),
    "time_cap": ("time", "max_wall_s"),
    "cost_cap": ("cost", "max_cost_usd"),
}
VIDEO_FORMATS: dict[str, Literal["mp4", "mpeg", "mov"]] = {"mp4": "mp4", "mpeg": "mpeg", "mov": "mov"}
UNGRADED_NOTE = (
    "an ungraded criterion (its grader failed) has no value (Inspect's unscored NaN), never a FAIL; its trial is a "
    "grading_error, left out of the cell's strict, graded and full_pass as in codesign's own tables"
)


def main(argv: list[str]) -> int:
    description = "One Inspect AI eval log per cell of the runs at PATH (inspect view --log-dir OUT shows them)."
    parser = argparse.ArgumentParser(prog="python -m codesign.export inspect", description=description)
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="run folders and multirun/sweep folders")
    parser.add_argument("out", type=Path, metavar="OUT", help="folder for the logs (created; same-named logs replaced)")
    parser.add_argument("--format", choices=["eval", "json"], default="eval", help="Inspect's log format")
    keep = "keep trials whose column KEY is VALUE (or one of a,b), e.g. model=kimi-k3, track=RE"
    parser.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE", help=keep)
    args = parser.parse_args(argv)
    try:
        written = export(args.paths, args.out, args.format, args.filter)
    except CodesignError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for path, log in written:
        cell = " · ".join(str((log.eval.metadata or {})["cell"][k]) for k in CELL)
        results = log.results or EvalResults()
        print(f"{path}: {cell}: {results.total_samples} samples, {results.completed_samples} scored")
    return 0


def export(
    paths: list[Path], out: Path, fmt: Format = "eval", filters: list[str] | None = None
) -> list[tuple[Path, EvalLog]]:
    """Write the logs into ``out``; all or nothing: they are written aside and moved in once every one is."""
    if _MISSING is not None:
        hint = "install the inspect extra: pip install -e '.[inspect]'"
        raise EnvironmentSetupError(f"Inspect AI cannot be imported: {_MISSING}", hint)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"OUT {out} is a file", "give a folder for the logs (it is created when missing)")
    collection = keep_only(collect(find_runs(paths)), filters or [])
    if collection.tasks.height == 0:
        where = ", ".join(map(str, paths))
        hint = "check the filters' values (python -m codesign.report PATH… prints every cell)"
        raise ConfigError(f"no trials under {where} match --filter {' --filter '.join(filters or [])}", hint)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.export-{uuid.uuid4().hex[:12]}"  # not mkdtemp's: OUT is not private
    staging.mkdir()
    try:
        logs = []
        for cell_trials in collection.tasks.partition_by(CELL, maintain_order=True):
            log = _Exporter(collection, cell_trials).log()
            name = _file_name(log, fmt)
            write_eval_log(log, staging / name, format=fmt)
            logs.append((name, log))
        if not out.exists():
            os.replace(staging, out)  # the folder appears whole, or not at all
        else:
            for name, _ in logs:
                os.replace(staging / name, out / name)
        return [(out / name, log) for name, log in logs]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _file_name(log: EvalLog, fmt: Format) -> str:
    """Inspect's own pattern, ``<created>_<task>_<model>_<id>``: ``inspect view`` lists a JSON log only by it.
    The cell stands in the model's place; the id is the cell's and its runs', so exporting again replaces it."""
    created = datetime.fromisoformat(log.eval.created).strftime("%Y-%m-%dT%H-%M-%S%z")
    cell = (log.eval.metadata or {})["cell"]
    created = f"{created[:-2]}-{created[-2:]}"  # +0000 → +00-00, as Inspect writes it
    return f"{created}_{_slug(log.eval.task)}_{_slug('-'.join(cell[k] for k in CELL))}_{log.eval.eval_id}.{fmt}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-") or "x"  # no "_": it separates the name's parts


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:22]


@dataclass
class _Stored:
    """What the store holds of one trial (each part None when it is not there)."""

    solve: dict[str, Any] | None = None
    trajectory: list[dict[str, Any]] | None = None
    evaluation: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class _Exporter:
    """One cell's trials as one eval log."""

    collection: Collection
    trials: pl.DataFrame
    _stores: dict[str, Store | None] = field(default_factory=dict)  # by run
    _tasks: dict[str, Task | None] = field(default_factory=dict)
    _verdicts: dict[tuple[Any, ...], list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        verdicts = self.collection.verdicts
        if verdicts.height:  # each trial's verdicts, found by its key (one pass over the table, not one per trial)
            mine = verdicts.join(self.trials.select(VERDICT_KEY), on=VERDICT_KEY, how="semi")
            for row in mine.iter_rows(named=True):
                self._verdicts.setdefault(tuple(row[k] for k in VERDICT_KEY), []).append(row)

    def log(self) -> EvalLog:
        rows = list(self.trials.iter_rows(named=True))
        cell = {k: str(rows[0][k]) for k in CELL}
        runs = [self._run(name) for name in dict.fromkeys(r["run"] for r in rows)]
        stored = [self._stored(row) for row in rows]
        specs = [s.solve["spec"] for s in stored if s.solve and isinstance(s.solve.get("spec"), dict)]
        spec: dict[str, Any] = specs[0] if specs else {}  # the cell's configs, as its solves stored them
        model = _model_name(cell["model"], spec.get("model") or {})
        seeds = sorted({str(r["seed"]) for r in rows}, key=_seed_order)
        samples = [self._sample(row, s, model, seeds) for row, s in zip(rows, stored, strict=True)]
        started = min(_started(r) for r in runs)
        finished = max((r.finished for r in runs), default=started)
        return EvalLog(
            status="success",
            eval=self._spec(cell, model, seeds, specs, runs, started, len(samples)),
            plan=EvalPlan(
                name="codesign",
                steps=[
                    EvalPlanStep(solver=f"harness: {cell['harness']}", params=_scalars(spec.get("harness") or {})),
                    EvalPlanStep(solver=f"regime: {cell['regime']}", params=_scalars(spec.get("regime") or {})),
                ],
            ),
            results=self._results(samples),
            stats=EvalStats(
                started_at=_iso(started),
                completed_at=_iso(max(finished, started)),
                model_usage={model: _usage(rows)},
                role_usage=_judge_usage(rows),
            ),
            samples=samples,
        )

    def _spec(
        self,
        cell: dict[str, str],
        model: str,
        seeds: list[str],
        specs: list[dict[str, Any]],
        runs: list[Run],
        started: float,
        n_samples: int,
    ) -> EvalSpec:
        spec = specs[0] if specs else {}
        task_dirs = [Path(s["task_dir"]) for s in specs if s.get("task_dir")]
        parents = [d.parent for d in task_dirs]
        suite_root = max(set(parents), key=parents.count, default=None)  # where most of its tasks live
        suite = _suite_name(suite_root)
        tracks = "+".join(sorted({str(t) for t in self.trials["track"] if t in ("ME", "RE")})) or "?"
        regime = spec.get("regime") or {}
        eval_id = _digest(cell, sorted(r.name for r in runs))  # the same cell of the same runs: the same log
        return EvalSpec(
            eval_id=eval_id,
            run_id=_digest(sorted(r.name for r in self.collection.used)),
            created=_iso(started),
            task=f"{suite}/{tracks}",
            task_id=eval_id,
            task_display_name=" · ".join([f"{suite} {tracks}", *(cell[k] for k in CELL[1:])]),
            task_attribs={"tracks": tracks.split("+")},
            solver=cell["harness"],
            solver_args=_scalars(spec.get("harness") or {}),
            tags=[cell[k] for k in CELL],
            dataset=EvalDataset(
                name=suite,
                location=str(suite_root) if suite_root else None,
                samples=n_samples,
                sample_ids=sorted({str(t) for t in self.trials["task_id"]}),
            ),
            model=model,
            model_base_url=(spec.get("model") or {}).get("api_base"),
            model_args=_scalars(spec.get("model") or {}),
            config=EvalConfig(
                epochs=len(seeds),
                turn_limit=regime.get("max_turns"),
                time_limit=int(regime["max_wall_s"]) if regime.get("max_wall_s") else None,
                cost_limit=regime.get("max_cost_usd"),
            ),
            packages=_packages(),
            metadata={
                "cell": cell,
                "seeds": seeds,
                "runs": [r.name for r in runs],
                "stores": sorted({u for r in runs if (u := _store_uri(r))}),
                "exported_by": "python -m codesign.export inspect",
            },
        )

    def _results(self, samples: list[EvalSample]) -> EvalResults:
        scored = [s for s in samples if s.metadata.get("scored")]
        scores = []
        for name in TRIAL_SCORES:
            values = [float((s.scores or {})[name].as_float()) for s in scored]
            metrics = {"mean": EvalMetric(name="mean", value=sum(values) / len(values))} if values else {}
            unscored = len(samples) - len(scored)
            scores.append(
                EvalScore(
                    name=name, scorer=SCORER, scored_samples=len(scored), unscored_samples=unscored, metrics=metrics
                )
            )
        statuses = self.trials["status"].value_counts(sort=True)
        return EvalResults(
            total_samples=len(samples),
            completed_samples=len(scored),
            scores=scores,
            metadata={
                "statuses": {str(r["status"]): int(r["count"]) for r in statuses.iter_rows(named=True)},
                "note": "means over the scored trials (status ok), as in codesign's tables; " + UNGRADED_NOTE,
            },
        )

    def _sample(self, row: dict[str, Any], stored: _Stored, model: str, seeds: list[str]) -> EvalSample:
        task = self._task(stored)
        verdicts = self._verdicts.get(tuple(row[k] for k in VERDICT_KEY), [])
        messages, notes = _messages(stored.trajectory, model), list(stored.notes)
        if stored.trajectory is not None and not messages:
            notes.append("the trajectory could not be read as chat messages")
        scores = _trial_scores(row) | _criterion_scores(verdicts)
        ungraded = [v["criterion_id"] for v in verdicts if v["verdict"] == Verdict.UNGRADED]
        labels = ((stored.solve or {}).get("task") or {}).get("labels") or {}
        solve_s, eval_s = row.get("solve_s"), row.get("eval_s")
        regime = ((stored.solve or {}).get("spec") or {}).get("regime") or {}
        metadata: dict[str, Any] = {
            "task_id": row["task_id"],
            "track": row["track"],
            "seed": row["seed"],
            "status": row["status"],
            "scored": row["status"] == TrialStatus.OK and row.get("strict") is not None,
            "ungraded": ungraded,
            "not_gradable": [v["criterion_id"] for v in verdicts if v.get("ungraded") == Ungraded.NOT_GRADABLE],
            "cell": {k: row[k] for k in CELL},
            "labels": labels or {k: row.get(k) for k in ("modality", "n_edit_types", "capability")},
            "telemetry": {k: row.get(k) for k in TELEMETRY if row.get(k) is not None},
            "trial": {k: row.get(k) for k in TRIAL_FIELDS if row.get(k) is not None},
        }
        if ungraded:
            metadata["ungraded_note"] = UNGRADED_NOTE
        if notes:
            metadata["notes"] = notes
        assistant = [m for m in messages if isinstance(m, ChatMessageAssistant)]
        return EvalSample(
            id=str(row["task_id"]),
            epoch=seeds.index(str(row["seed"])) + 1,  # Inspect's repeats are epochs; codesign's are seeds
            input=_input(task, messages, str(row["task_id"])),
            target=[f"{c.id}: {c.text}" for c in task.criteria] if task else [v["criterion_id"] for v in verdicts],
            description=str(labels.get("title") or (task.manifest.title if task else row["task_id"])),
            messages=messages,
            output=ModelOutput.from_message(assistant[-1]) if assistant else ModelOutput(model=model),
            scores=scores,
            metadata=metadata,
            model_usage={model: _usage([row])},
            total_time=(solve_s or 0.0) + (eval_s or 0.0) if solve_s is not None or eval_s is not None else None,
            working_time=solve_s,
            completed_at=_iso(float(stored.evaluation["graded_at"]))
            if stored.evaluation and stored.evaluation.get("graded_at")
            else None,
            uuid=_digest(row["run"], [row[k] for k in CELL], row["seed"], row["task_id"]),
            error=EvalError(message=str(row.get("message") or row["status"]), traceback="", traceback_ansi="")
            if row["status"] in (TrialStatus.TASK_ERROR, TrialStatus.INFRA_ERROR)
            else None,
            limit=_limit(row, regime),
        )

    def _run(self, name: str) -> Run:
        return next(r for r in self.collection.runs if r.name == name)

    def _store(self, run: Run) -> Store | None:
        if run.name not in self._stores:
            uri = _store_uri(run)
            try:
                self._stores[run.name] = Store(uri) if uri else None
            except (OSError, ValueError, ImportError):  # object storage this machine cannot open
                self._stores[run.name] = None
        return self._stores[run.name]

    def _stored(self, row: dict[str, Any]) -> _Stored:
        key = row.get("trial_key")
        if not key:  # a task that did not load, a trial never started: nothing was stored
            return _Stored()
        run = self._run(row["run"])
        store = self._store(run)
        if store is None:
            return _Stored(notes=[f"the run's store ({run.store}) cannot be opened: no trajectory"])
        stored = _Stored(solve=_json(store.read_bytes(f"trials/{key}/solve.json")))
        if row.get("eval_key"):
            stored.evaluation = _json(store.read_bytes(f"trials/{key}/evals/{row['eval_key']}/evaluation.json"))
        raw = store.read_bytes(f"trials/{key}/trajectory.jsonl")
        if raw is None:
            stored.notes.append(f"no trajectory in the store ({store.uri}/trials/{key}/trajectory.jsonl)")
        else:
            lines = raw.decode(errors="replace").splitlines()
            stored.trajectory = [e for e in map(_json_line, lines) if e is not None]
        return stored

    def _task(self, stored: _Stored) -> Task | None:
        task_dir = ((stored.solve or {}).get("spec") or {}).get("task_dir")
        if not task_dir:
            return None
        if task_dir not in self._tasks:
            try:
                self._tasks[task_dir] = load_task(Path(task_dir))
            except (TaskError, OSError):  # moved or changed since the run: the trajectory's prompt stands in
                self._tasks[task_dir] = None
        return self._tasks[task_dir]


def _json(raw: bytes | None) -> dict[str, Any] | None:
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _json_line(line: str) -> dict[str, Any] | None:
    return _json(line.encode()) if line.strip() else None


def _seed_order(seed: str) -> tuple[bool, int, str]:
    return (not seed.isdigit(), int(seed) if seed.isdigit() else 0, seed)


def _started(run: Run) -> float:
    """When a run started: Hydra writes its config first (a store's pseudo-run has no start: its tables' time)."""
    config = run.path / ".hydra" / "config.yaml"
    return config.stat().st_mtime if config.is_file() else run.finished


def _store_uri(run: Run) -> str | None:
    """The run's store; Hydra saves the default, ``${oc.env:CODESIGN_STORE,outputs/store}``, unresolved, and a
    relative folder is relative to where the run was launched (Hydra's runtime.cwd)."""
    uri = run.store
    if uri is None:
        return None
    if "${" in uri:
        from omegaconf import OmegaConf

        try:
            uri = str(OmegaConf.select(OmegaConf.load(run.path / ".hydra" / "config.yaml"), "store.root"))
        except Exception:  # a resolver this process lacks: the path as written
            return uri
    if is_remote(uri) or Path(uri).expanduser().is_absolute():
        return uri
    try:
        hydra = yaml.safe_load((run.path / ".hydra" / "hydra.yaml").read_text())
        return str(Path(hydra["hydra"]["runtime"]["cwd"]) / uri)
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return uri


def _suite_name(root: Path | None) -> str:
    if root is None:
        return "codesign"
    from codesign.config import bundled_suite

    return "codesign" if root.resolve() == bundled_suite().resolve() else root.name


def _model_name(name: str, config: dict[str, Any]) -> str:
    """Inspect names models ``provider/model``: the cell's model under its litellm provider (``codesign`` for
    the offline ones)."""
    if "/" in name:
        return name
    litellm = config.get("model")
    provider = litellm.split("/")[0] if isinstance(litellm, str) and "/" in litellm else "codesign"
    return f"{provider}/{name}"


def _scalars(config: dict[str, Any]) -> dict[str, Any]:
    """A component's settings as shown in the log: plain values, not its prompt texts or its class."""

    def plain(v: Any) -> bool:
        return v is None or isinstance(v, bool | int | float) or (isinstance(v, str) and len(v) <= 200)

    return {k: v for k, v in config.items() if k != "_target_" and plain(v)}


def _packages() -> dict[str, str]:
    found = {}
    for name in ("codesign", "inspect_ai"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _usage(trials: list[dict[str, Any]]) -> ModelUsage:
    """The solver's tokens. codesign's input tokens include the cached ones; Inspect's exclude them."""
    total = {k: sum(int(t.get(k) or 0) for t in trials) for k in ("input_tokens", "output_tokens", "cached_tokens")}
    costs = [float(t["cost_usd"]) for t in trials if t.get("cost_usd") is not None]
    return ModelUsage(
        input_tokens=max(0, total["input_tokens"] - total["cached_tokens"]),
        output_tokens=total["output_tokens"],
        total_tokens=total["input_tokens"] + total["output_tokens"],
        input_tokens_cache_read=total["cached_tokens"] or None,
        total_cost=sum(costs) if costs else None,
    )


def _judge_usage(trials: list[dict[str, Any]]) -> dict[str, ModelUsage]:
    """An LLM evaluator's tokens, by role (judge, verifier)."""
    usage = {}
    for role in ("judge", "verifier"):
        if not sum(int(t.get(f"{role}_calls") or 0) for t in trials):
            continue
        tokens = {k: sum(int(t.get(f"{role}_{k}") or 0) for t in trials) for k in ("input_tokens", "output_tokens")}
        costs = [float(t[f"{role}_cost_usd"]) for t in trials if t.get(f"{role}_cost_usd") is not None]
        usage[role] = ModelUsage(**tokens, total_tokens=sum(tokens.values()), total_cost=sum(costs) if costs else None)
    return usage


def _limit(row: dict[str, Any], regime: dict[str, Any]) -> EvalSampleLimit | None:
    cap = CAPS.get(str(row.get("exit_status")))
    if cap is None or regime.get(cap[1]) is None:
        return None
    kind, setting = cap
    return EvalSampleLimit(type=kind, limit=float(regime[setting]), reason=row.get("exit_message") or None)


def _trial_scores(row: dict[str, Any]) -> dict[str, Score]:
    """strict, graded, full_pass as codesign computed them; unscored (NaN) for a trial left out of the scores."""
    if row["status"] != TrialStatus.OK or row.get("strict") is None:
        why = f"not scored ({row['status']})" + (f": {row['message']}" if row.get("message") else "")
        return {name: Score.unscored(reason=str(row["status"]), explanation=why) for name in TRIAL_SCORES}
    n, n_pass, n_partial = row["n_criteria"], row["n_pass"], row["n_partial"]
    return {
        "strict": Score(value=float(row["strict"]), explanation=f"{n_pass} of {n} criteria PASS"),
        "graded": Score(value=float(row["graded"]), explanation=f"({n_pass} PASS + ½ × {n_partial} PARTIAL) / {n}"),
        "full_pass": Score(value=bool(row["full_pass"]), explanation=f"every criterion PASS: {bool(row['full_pass'])}"),
    }


def _criterion_scores(verdicts: list[dict[str, Any]]) -> dict[str, Score]:
    """One score per criterion: C, P, I (Inspect's values for 1, 0.5, 0, as codesign scores them); an ungraded
    criterion is unscored, with the grader's failure as its reason. Every criterion weighs the same in a trial."""
    values = {Verdict.PASS: CORRECT, Verdict.PARTIAL: PARTIAL, Verdict.FAIL: INCORRECT}
    scores = {}
    for v in verdicts:
        metadata = {
            "criterion_id": v["criterion_id"],
            "kind": v["kind"],
            "grader": v["grader"],
            "weight": 1 / len(verdicts),
            "preserve": v["preserve"],
            "verdict": v["verdict"],
            "status": "ungraded" if v["verdict"] == Verdict.UNGRADED else "graded",
            **{k: v[k] for k in ("ungraded", "failure_category", "original_verdict") if v.get(k)},
            "evidence_ids": list(v.get("evidence_ids") or []),
        }
        key = v["criterion_id"] if v["criterion_id"] not in TRIAL_SCORES else f"criterion:{v['criterion_id']}"
        if v["verdict"] == Verdict.UNGRADED:
            reason = "grader_failed" if v.get("ungraded") == Ungraded.GRADER_ERROR else "scoring_failed"
            scores[key] = Score.unscored(reason=reason, explanation=v["reason"], metadata=metadata)
        else:
            scores[key] = Score(value=values[Verdict(v["verdict"])], explanation=v["reason"], metadata=metadata)
    return scores


def _input(task: Task | None, messages: list[ChatMessage], task_id: str) -> str | list[ChatMessage]:
    """The task's request, after its earlier turns, with its attachments; without the task folder, the
    trajectory's first user message."""
    if task is None:
        first = next((m for m in messages if isinstance(m, ChatMessageUser)), None)
        return [first] if first is not None else f"(task {task_id}: its folder and trajectory are not available)"
    m = task.manifest
    history: list[ChatMessage] = [
        ChatMessageUser(content=t.content) if t.role == "user" else ChatMessageAssistant(content=t.content)
        for t in m.history
    ]
    if not history and not m.attachments:
        return m.request
    content: list[Content] = [ContentText(text=m.request)]
    for a in m.attachments:
        content += _attachment(task.dir / a.path, a.modality, a.description)
    return [*history, ChatMessageUser(content=content)]


def _attachment(path: Path, modality: str, description: str | None) -> list[Content]:
    """An attachment as Inspect content: images as the solver saw them (downscaled), audio, video and PDF
    documents as data URIs (by path when large), text documents as text."""
    header = ContentText(text=f"Attachment `{path.name}` ({modality})" + (f": {description}" if description else ""))
    if not path.is_file():
        return [header, ContentText(text=f"(missing: {path})")]
    suffix = path.suffix.lower().lstrip(".")
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if modality == "image":
        from codesign.solve.attachments import downscale

        try:
            data, mime = downscale(path.read_bytes())
        except (OSError, ValueError):  # a format Pillow cannot read: the file as it is
            data = path.read_bytes()
        return [header, ContentImage(image=_data_uri(mime, data))]
    source = str(path) if path.stat().st_size > MAX_INLINE_BYTES else _data_uri(mime, path.read_bytes())
    if modality == "audio" and suffix in ("wav", "mp3"):
        return [header, ContentAudio(audio=source, format="wav" if suffix == "wav" else "mp3")]
    if modality == "video" and suffix in VIDEO_FORMATS:
        return [header, ContentVideo(video=source, format=VIDEO_FORMATS[suffix])]
    if modality == "document" and suffix == "pdf":
        return [header, ContentDocument(document=source, filename=path.name, mime_type=mime)]
    if mime.startswith("text/"):
        return [header, ContentText(text=path.read_text(errors="replace"))]
    return [header, ContentText(text=f"(a .{suffix} file, which Inspect has no content type for: {path})")]


def _data_uri(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def _messages(trajectory: list[dict[str, Any]] | None, model: str) -> list[ChatMessage]:
    """The trajectory as Inspect chat messages, by Inspect's own converter of the OpenAI format (what codesign
    logs); an unreadable trajectory gives none."""
    if not trajectory:
        return []
    try:
        return asyncio.run(messages_from_openai(_openai_messages(trajectory), model=model))  # type: ignore[arg-type]
    except (ValueError, KeyError, TypeError):
        return []


def _openai_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation a trajectory records, in the OpenAI format: the prompt, each model reply, each tool
    result after its call (codesign's harnesses log results in call order; Claude Code's come in its output)."""
    cli_results = _cli_tool_results(events)
    messages: list[dict[str, Any]] = []
    pending: list[str] = []  # the last reply's tool calls still without a result

    def settle() -> None:
        answered = [c for c in pending if c in cli_results]
        messages.extend({"role": "tool", "tool_call_id": c, "content": cli_results[c]} for c in answered)
        pending.clear()

    for i, event in enumerate(events):
        kind = event.get("event")
        if kind == "prompt":
            messages += [_prompt_message(m) for m in event.get("messages") or [] if isinstance(m, dict)]
        elif kind == "assistant" and isinstance(event.get("message"), dict):
            settle()
            reply = _assistant_message(event["message"], i)
            messages.append(reply)
            pending.extend(c["id"] for c in reply.get("tool_calls", []))
        elif kind == "tool":
            call = pending.pop(0) if pending else f"codesign-tool-{i}"  # a result without a logged call: kept
            messages.append({"role": "tool", "tool_call_id": call, "content": str(event.get("output", ""))})
    settle()
    return messages


def _cli_tool_results(events: list[dict[str, Any]]) -> dict[str, str]:
    """Tool results by call id from Claude Code's stream-json output (``cli`` events)."""
    results = {}
    for event in events:
        data = event.get("data") if event.get("event") == "cli" else None
        content = ((data or {}).get("message") or {}).get("content") if isinstance(data, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id"):
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "\n".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))
                results[str(block["tool_use_id"])] = str(inner or "")
    return results


def _prompt_message(message: dict[str, Any]) -> dict[str, Any]:
    role = message.get("role") if message.get("role") in ("system", "user", "assistant") else "user"
    return {"role": role, "content": _content(message.get("content"))}


def _assistant_message(message: dict[str, Any], index: int) -> dict[str, Any]:
    # "" rather than None: Inspect's converter folds a content-less tool-calling reply into the next reply.
    reply: dict[str, Any] = {"role": "assistant", "content": _content(message.get("content")) or ""}
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str) and message[key]:
            reply[key] = message[key]
    calls = []
    for j, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        calls.append(
            {
                "id": str(call.get("id") or f"codesign-call-{index}-{j}"),
                "type": "function",
                "function": {
                    "name": str(function.get("name") or ""),
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {}),
                },
            }
        )
    if calls:
        reply["tool_calls"] = calls
    return reply


def _content(content: Any) -> str | list[dict[str, Any]]:
    """Message content Inspect's converter reads: text, images, wav/mp3 audio; anything else as its JSON."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        return json.dumps(content, default=str)
    parts: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        audio = part.get("input_audio") if isinstance(part, dict) else None
        image = kind == "image_url" and isinstance(part.get("image_url"), dict)
        sound = kind == "input_audio" and isinstance(audio, dict) and audio.get("format") in ("wav", "mp3")
        if kind == "text" or image or sound:
            parts.append(part)
        else:
            parts.append({"type": "text", "text": json.dumps(part, default=str)[:20_000]})
    return parts
