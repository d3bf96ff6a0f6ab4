"""Weights & Biases: one run per Hydra job (cell), grouped by sweep; online whenever W&B would be.

``mode: auto`` goes online when W&B itself would (``WANDB_MODE``, ``WANDB_API_KEY``, or the credentials
``wandb login`` keeps in ~/.netrc), else offline: offline runs land under ``<run dir>/wandb`` and can be
uploaded later with ``wandb sync``. Each run carries its tables, its report and — as artifacts — the
patches and trajectories of its trials, read from the store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from codesign._types import TrialRecord


def _table(frame: Any) -> Any:
    import wandb

    # W&B tables take scalars: lists (evidence ids) become comma-separated text.
    rows = [[", ".join(v) if isinstance(v, list) else v for v in row] for row in frame.rows()]
    return wandb.Table(columns=frame.columns, data=rows)


@dataclass
class WandbTracker:
    project: str = "codesign"
    entity: str | None = None
    mode: str = "auto"  # auto: online when W&B has credentials (or WANDB_MODE says so), else offline
    job_type: str = "auto"  # auto: "evaluate" for a run that grades, "solve" for a solve-only run
    tags: list[str] = field(default_factory=list)
    _run: Any = None
    _out: Path | None = None
    _done: int = 0
    _store: str | None = None
    _trials: set[str] = field(default_factory=set)

    def start(self, run_name: str, group: str | None, config: dict[str, Any], out_dir: Path) -> None:
        import wandb

        mode = resolve_mode(self.mode)
        job_type = self.job_type
        if job_type == "auto":
            job_type = "evaluate" if (config.get("stages") or {}).get("evaluate", True) else "solve"
        self._store = (config.get("store") or {}).get("root")
        wandb_dir = self._out = Path(out_dir).resolve()  # the W&B service process has its own cwd
        os.environ.setdefault("WANDB_CACHE_DIR", str(wandb_dir / "wandb" / ".cache"))
        os.environ.setdefault("WANDB_SILENT", "true")
        self._run = wandb.init(
            project=self.project,
            entity=self.entity,
            name=run_name,
            group=group,
            job_type=job_type,
            config=config,
            dir=str(wandb_dir),
            mode=mode,
            tags=self.tags,
            settings=wandb.Settings(console="off", x_disable_stats=True),
            reinit="create_new",  # a pooled sweep keeps one run per cell open at once
        )

    def log_trial(self, record: TrialRecord) -> None:
        self._done += 1
        if record.trial_key:
            self._trials.add(record.trial_key)
        t = record.telemetry
        row: dict[str, Any] = {"trials/done": self._done}
        if t is not None:
            row |= {
                "trial/turns": t.turns,
                "trial/tool_calls": sum(t.tool_calls.values()),
                "trial/input_tokens": t.input_tokens,
                "trial/output_tokens": t.output_tokens,
                "trial/cost_usd": t.cost_usd,
                "trial/solve_s": t.wall_s,
            }
        if record.evaluation is not None:  # judge and verifier effort, like the solver's
            row |= {f"eval/{k}": v for k, v in record.evaluation.telemetry.items() if isinstance(v, int | float)}
        self._run.log(row)

    def finish(self, tables: dict[str, Any] | None, error: BaseException | None = None) -> None:
        if self._run is None:
            return
        try:
            if tables is not None:
                for row in tables["summary"].iter_rows(named=True):
                    prefix = f"{row['track']}"
                    for metric in ("strict", "graded", "full_pass", "zero_pass"):
                        if row[metric] is not None:
                            self._run.summary[f"{prefix}/{metric}"] = row[metric]
                    for count in ("planned", "scored", "tasks", "errors", "grading_errors", "aborted", "skipped"):
                        self._run.summary[f"{prefix}/{count}"] = row[count]
                for row in tables["denominators"].iter_rows(named=True):  # one row: this cell's
                    for k, v in row.items():
                        if isinstance(v, int) and not isinstance(v, bool):
                            self._run.summary[f"denominators/{k}"] = v
                self._run.log(
                    {
                        "tasks": _table(tables["tasks"]),
                        "verdicts": _table(tables["verdicts"]),
                        "summary": _table(tables["summary"]),
                        "breakdowns": _table(tables["breakdowns"]),
                        "adjusted": _table(tables["adjusted"]),
                        "denominators": _table(tables["denominators"]),
                        "ledger": _table(tables["ledger"]),
                    }
                )
                self._log_results()
                self._log_trials()
        finally:
            self._run.finish(exit_code=1 if error is not None else 0)
            self._run = None

    def _log_results(self) -> None:
        """The run's parquet tables as one artifact, so a W&B run carries everything needed to re-score."""
        import wandb

        names = (
            "verdicts.parquet",
            "tasks.parquet",
            "summary.parquet",
            "breakdowns.parquet",
            "adjusted.parquet",
            "ledger.parquet",
            "denominators.parquet",
            "report.html",
        )
        files = [self._out / name for name in names] if self._out else []
        files = [f for f in files if f.is_file()]
        if files:
            artifact = wandb.Artifact(f"results-{self._run.id}", type="results")
            for f in files:
                artifact.add_file(str(f))
            self._run.log_artifact(artifact)

    def _log_trials(self) -> None:
        """Every trial's patch and trajectory, from the store (local or object storage), as one artifact."""
        import wandb

        from codesign.store import Store, store_uri

        if not self._trials or not self._store:
            return
        store = Store(store_uri(self._store))
        artifact = wandb.Artifact(f"trials-{self._run.id}", type="trials")
        added = 0
        for key in sorted(self._trials):
            for name in ("patch.diff", "trajectory.jsonl"):
                data = store.read_bytes(f"trials/{key}/{name}")
                if data is not None:
                    with artifact.new_file(f"{key}/{name}", mode="wb") as f:
                        f.write(data)
                    added += 1
        if added:
            self._run.log_artifact(artifact)


def has_credentials() -> bool:
    """Whether W&B would find an API key: ``WANDB_API_KEY``, or a ~/.netrc entry for its host (``wandb login``)."""
    import netrc
    from urllib.parse import urlparse

    if os.environ.get("WANDB_API_KEY"):
        return True
    base = os.environ.get("WANDB_BASE_URL")
    if not base:
        import wandb

        base = wandb.Settings().base_url
    try:
        found = netrc.netrc(os.environ.get("NETRC")).authenticators(urlparse(base).hostname or "")
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False
    return bool(found and found[2])


WandbMode = Literal["online", "offline", "disabled", "shared"]


def resolve_mode(mode: str) -> WandbMode:
    """``auto``: what W&B would do by itself — ``WANDB_MODE`` if set, online with credentials, else offline."""
    if mode == "auto":
        mode = os.environ.get("WANDB_MODE") or ("online" if has_credentials() else "offline")
    return cast(WandbMode, mode)  # W&B refuses a mode it does not know, naming the ones it has


def sweep_group(mode: str, sweep_dir: str | None, experiment: str | None) -> str | None:
    """The W&B group of a run: its experiment's name, else its sweep folder's date and time (``2026-12-01/
    16-12-25``: unique, and the folder it is in); a single run has none."""
    if mode != "MULTIRUN" or not sweep_dir:
        return None
    return experiment or "/".join(Path(sweep_dir).parts[-2:])


def log_report(
    report: Any,
    page: Path,
    project: str = "codesign",
    entity: str | None = None,
    group: str | None = None,
    mode: str = "auto",
) -> str:
    """A cross-run report (``python -m codesign.report --wandb``) as one W&B run, ``job_type=report``, in the
    runs' group: every table, every figure, and the HTML page with the tables as an artifact. Returns the
    run's folder (offline) or URL (online)."""
    import io

    import wandb
    from PIL import Image

    out = page.parent.resolve()
    os.environ.setdefault("WANDB_SILENT", "true")
    run = wandb.init(
        project=project,
        entity=entity,
        name="report",
        group=group,
        job_type="report",
        dir=str(out),
        mode=resolve_mode(mode),
        config={"runs": [r.name for r in report.collection.used]},
        settings=wandb.Settings(console="off", x_disable_stats=True),
        reinit="create_new",
    )
    try:
        run.log({name: _table(frame) for name, frame in report.frames().items()})
        images = {}
        for section, figures in report.figures.items():
            for name, png in figures:
                images[f"{section}/{name}"] = wandb.Image(Image.open(io.BytesIO(png)), caption=name)
        if images:
            run.log(images)
        artifact = wandb.Artifact(f"report-{run.id}", type="report")
        for f in [page, *(out / f"{name}.parquet" for name in report.frames())]:
            if f.is_file():
                artifact.add_file(str(f))
        run.log_artifact(artifact)
        where = run.url or str(out / "wandb")
    finally:
        run.finish()
    return where


def group_of(run_dir: Path) -> str | None:
    """The W&B group a finished run was logged in, recomputed from its Hydra record."""
    import yaml

    try:
        hydra = yaml.safe_load((run_dir / ".hydra" / "hydra.yaml").read_text())["hydra"]
        return sweep_group(hydra["mode"], hydra["sweep"]["dir"], (hydra["runtime"]["choices"] or {}).get("experiment"))
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return None
