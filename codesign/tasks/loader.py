"""Load task folders into validated :class:`Task` objects; a broken task never stops the others."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from codesign._types import TaskView
from codesign.errors import TaskError
from codesign.tasks.schema import CriteriaFile, Criterion, NearMissFile, SpecRunner, TaskManifest

MANIFEST, CRITERIA, APP_DIR, SOLUTION = "task.yaml", "criteria.yaml", "app", "solution/solution.patch"
# Never part of a task's identity or of a solver's workspace diff.
GENERATED_DIRS = ("node_modules", "dist", ".vite", "__pycache__", ".git")


NEAR_MISSES = "solution/near-misses"


@dataclass(frozen=True)
class NearMiss:
    """A wrong or partial solution of a task, as a solver would get it wrong, with the verdict every
    criterion must get (``solution/near-misses/<name>.patch`` and ``<name>.yaml``)."""

    name: str
    patch: str
    why: str
    verdicts: dict[str, str]


@dataclass(frozen=True)
class Task:
    manifest: TaskManifest
    criteria: list[Criterion]
    dir: Path
    content_hash: str  # the whole folder: what the task gate depends on
    spec_runner: SpecRunner | None = None  # how spec criteria run (criteria.yaml)

    @property
    def solver_hash(self) -> str:
        """What a solver can see or what changes its work: the app, the manifest but its labels, the
        attachments' bytes. Not the criteria, the probes or the reference patch (editing those never
        invalidates a paid solve)."""
        import json

        manifest = self.manifest.model_dump(exclude={"labels"})
        attachments = [hashlib.sha256((self.dir / a.path).read_bytes()).hexdigest() for a in self.manifest.attachments]
        return hashlib.sha256(
            json.dumps([tree_hash(self.app_dir), manifest, attachments], sort_keys=True, default=str).encode()
        ).hexdigest()

    @property
    def criteria_hash(self) -> str:
        """The criteria and their probes as parsed (YAML comments and layout do not count), and every file of
        their scripts' folders (a script may import helpers from its folder)."""
        import json

        scripts: dict[str, Any] = {
            c.script.file: (self.dir / c.script.file).read_text() for c in self.criteria if c.script
        }
        folders = sorted({str(Path(c.script.file).parent) for c in self.criteria if c.script})
        if folders:  # the helpers next to the scripts (the task folder's own app and attachments are not theirs)
            scripts["script_folders"] = {
                f: tree_hash(self.dir / f, (*GENERATED_DIRS, *SCRIPT_FOLDER_SKIP)) for f in folders
            }
        files = sorted({c.command.files for c in self.criteria if c.command and c.command.files})
        if files:  # the folders command criteria copy in at grading (a test script and its fixtures)
            scripts["command_files"] = {f: tree_hash(self.dir / f, GENERATED_DIRS) for f in files}
        if self.spec_runner is not None:  # the spec folder (specs, config, lockfile) and how it runs
            scripts["spec_runner"] = [self.spec_runner.model_dump(), tree_hash(self.dir / self.spec_runner.dir)]
        parsed = [c.model_dump() for c in self.criteria]
        payload = [parsed, scripts] if scripts else parsed  # tasks without scripts keep their keys
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def track(self) -> str:
        return self.manifest.track

    @property
    def app_dir(self) -> Path:
        return self.dir / APP_DIR

    @property
    def solution_path(self) -> Path:
        return self.dir / SOLUTION

    def reference_patch(self) -> str:
        return self.solution_path.read_text()

    def near_misses(self) -> list[NearMiss]:
        """The task's near misses in name order, each checked: a patch and its verdicts for exactly the
        task's criteria (a TaskError naming the file otherwise)."""
        folder = self.dir / NEAR_MISSES
        found = sorted({p.stem for p in folder.glob("*.patch")} | {p.stem for p in folder.glob("*.yaml")})
        ids = [c.id for c in self.criteria]
        out = []
        for name in found:
            patch, expected = folder / f"{name}.patch", folder / f"{name}.yaml"
            where = f"{NEAR_MISSES}/{name}"
            if not patch.is_file() or not expected.is_file():
                missing = patch.name if not patch.is_file() else expected.name
                raise TaskError(self.id, where, f"{missing} is missing", "a near miss is a .patch and a .yaml")
            try:
                parsed = NearMissFile.model_validate(_read_yaml(self.id, expected))
            except ValidationError as e:
                raise TaskError(self.id, f"{where}.yaml", _validation_problem(e), "see docs/tasks.md") from None
            if list(parsed.verdicts) != ids:
                extra, lacking = set(parsed.verdicts) - set(ids), [i for i in ids if i not in parsed.verdicts]
                problem = (
                    f"verdicts must name every criterion of criteria.yaml in its order; missing: "
                    f"{', '.join(lacking) or 'none'}; unknown: {', '.join(sorted(extra)) or 'none'}"
                )
                raise TaskError(self.id, f"{where}.yaml", problem)
            out.append(NearMiss(name, patch.read_text(), parsed.why, dict(parsed.verdicts)))
        return out

    def near_miss(self, number: int) -> NearMiss:
        """The ``number``-th near miss (from 1, in name order)."""
        found = self.near_misses()
        if not 1 <= number <= len(found):
            raise TaskError(
                self.id,
                NEAR_MISSES,
                f"there is no near miss {number} (the task has {len(found)})",
                f"add solution/near-misses/<name>.patch and .yaml, or use near misses 1–{len(found)}",
            )
        return found[number - 1]

    def view(self) -> TaskView:
        m = self.manifest
        return TaskView(
            id=m.id,
            track=m.track,
            title=m.title,
            request=m.request,
            history=[t.model_dump() for t in m.history],
            attachments=[
                {
                    "path": str(self.dir / a.path),
                    "name": Path(a.path).name,
                    "modality": a.modality,
                    "description": a.description,
                }
                for a in m.attachments
            ],
            routes=list(m.environment.routes),
        )


@dataclass
class Suite:
    root: Path
    tasks: list[Task] = field(default_factory=list)
    errors: list[TaskError] = field(default_factory=list)


# libyaml's parser where PyYAML was built with it: 10× less CPU than the pure-Python one, and every trial loads
# its task (a task's two files took ~5 ms of a trivial trial's CPU).
_SafeLoader: Any = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


class _UniqueKeyLoader(_SafeLoader):
    """YAML that refuses a key given twice in one mapping (YAML itself would keep the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[object, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first on line {seen[key].start_mark.line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _read_yaml(task_id: str, path: Path) -> object:
    if not path.is_file():
        raise TaskError(task_id, path.name, "file is missing", f"create {path}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise TaskError(
            task_id, path.name, f"not UTF-8 text (byte {e.start}: {e.reason})", "save the file as UTF-8"
        ) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise TaskError(task_id, path.name, f"malformed YAML{where}: {getattr(e, 'problem', e)}") from e


def _inside(root: Path, path: Path) -> bool:
    resolved = path.resolve()
    return resolved == root or root in resolved.parents


def _check_containment(task_id: str, task_dir: Path) -> None:
    """Nothing a task ships may reach outside its folder: attachment paths and symlinks in app/ and
    attachments/ (a solver copies and a server serves them)."""
    root = task_dir.resolve()
    for folder in (task_dir / APP_DIR, task_dir / "attachments"):
        for link in (p for p in folder.rglob("*") if p.is_symlink()) if folder.is_dir() else ():
            if not _inside(root, link):
                raise TaskError(
                    task_id,
                    str(link.relative_to(task_dir)),
                    f"symlink points outside the task folder (to {link.resolve()})",
                    "copy the file into the task instead",
                )


def _validation_problem(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"] if not str(p).startswith("function-"))
        msg = e["msg"].removeprefix("Value error, ")
        parts.append(f"{loc or '<root>'}: {msg}")
    return "; ".join(parts)


# Never part of a script's folder, when that folder is the task folder itself: what the solver and the
# reference decide (their own keys cover them), and caches.
SCRIPT_FOLDER_SKIP = ("app", "attachments", "solution")


def tree_hash(root: Path, skip: tuple[str, ...] = GENERATED_DIRS) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part in skip for part in rel.parts) or not p.is_file():
            continue
        h.update(str(rel).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def load_task(task_dir: Path) -> Task:
    task_dir = Path(task_dir)
    task_id = task_dir.name
    raw = _read_yaml(task_id, task_dir / MANIFEST)
    try:
        manifest = TaskManifest.model_validate(raw)
    except ValidationError as e:
        raise TaskError(task_id, MANIFEST, _validation_problem(e)) from None
    if manifest.id != task_id:
        raise TaskError(
            task_id,
            MANIFEST,
            f"id {manifest.id!r} differs from the folder name",
            "rename the folder or the id so they match",
        )
    raw_criteria = _read_yaml(task_id, task_dir / CRITERIA)
    if isinstance(raw_criteria, dict) and raw_criteria.get("criteria") == []:
        raise TaskError(task_id, CRITERIA, "no criteria yet: the task is a draft",
                        "write its hidden acceptance criteria (docs/tasks.md); a curated draft's checklist is in "
                        "criteria.yaml's comments")  # fmt: skip
    try:
        criteria_file = CriteriaFile.model_validate(raw_criteria)
        criteria = criteria_file.criteria
    except ValidationError as e:
        raise TaskError(task_id, CRITERIA, _validation_problem(e)) from None
    if not (task_dir / APP_DIR).is_dir():
        raise TaskError(task_id, APP_DIR + "/", "app folder is missing", "put the pre-edit app in app/")
    app = task_dir / APP_DIR
    if not (app / "index.html").is_file() and not any(
        "node_modules" not in p.parts for p in app.rglob("*.html")
    ):  # a Vite app may keep its pages under src/, a multi-page app may have no index.html
        raise TaskError(task_id, "app/index.html", "file is missing", "an app is entered via an HTML page")
    _check_containment(task_id, task_dir)
    for i, att in enumerate(manifest.attachments):
        path = task_dir / att.path
        if Path(att.path).is_absolute() or not _inside(task_dir.resolve(), path):
            raise TaskError(
                task_id,
                MANIFEST,
                f"attachments.{i}.path: {att.path} is outside the task folder",
                "attachments live in the task folder, e.g. attachments/mockup.png",
            )
        if not path.is_file() or path.stat().st_size == 0:
            raise TaskError(task_id, MANIFEST, f"attachments.{i}.path: {att.path} is missing or empty")
    if not (task_dir / SOLUTION).is_file():
        raise TaskError(task_id, SOLUTION, "file is missing", "every task ships a reference minimal patch")
    for c in criteria:
        if c.script is None:
            continue
        hint = "keep checks with the hidden material, e.g. checks/"
        script = _hidden(task_id, task_dir, c.script.file, f"{c.id}: script {c.script.file}", hint)
        if not script.is_file():
            raise TaskError(task_id, CRITERIA, f"{c.id}: script {c.script.file} is missing")
    for c in criteria:
        if c.command is None or c.command.files is None:
            continue
        hint = "keep test files with the hidden material, e.g. tests/"
        files = _hidden(task_id, task_dir, c.command.files, f"{c.id}: command files {c.command.files}", hint)
        if not files.is_dir():
            raise TaskError(task_id, CRITERIA, f"{c.id}: command files folder {c.command.files} is missing")
    runner = criteria_file.spec_runner
    if runner is not None:
        specs = _hidden(task_id, task_dir, runner.dir, f"spec_runner.dir {runner.dir}")
        if not (specs / "package.json").is_file():
            raise TaskError(
                task_id,
                CRITERIA,
                f"spec_runner.dir {runner.dir} has no package.json",
                "the spec folder declares @playwright/test (and a lockfile) like an app",
            )
        for name, folder in runner.packages.items():
            if not (specs / folder / "package.json").is_file():
                raise TaskError(
                    task_id, CRITERIA, f"spec_runner.packages: {name} has no package.json in {runner.dir}/{folder}"
                )
        for c in criteria:
            if c.spec and not (specs / c.spec.file).is_file():
                raise TaskError(task_id, CRITERIA, f"{c.id}: spec file {runner.dir}/{c.spec.file} is missing")
    return Task(
        manifest=manifest,
        criteria=criteria,
        dir=task_dir.resolve(),
        content_hash=tree_hash(task_dir),
        spec_runner=runner,
    )


def _hidden(task_id: str, task_dir: Path, rel: str, what: str, hint: str | None = None) -> Path:
    """``task_dir / rel``, which must be hidden material: in the task folder, outside what the solver sees."""
    path = task_dir / rel
    if not _inside(task_dir.resolve(), path) or Path(rel).parts[0] in (APP_DIR, "attachments"):
        where = "must be in the task folder, outside app/ and attachments/ (the solver sees those)"
        raise TaskError(task_id, CRITERIA, f"{what} {where}", hint)
    return path


def load_suite(root: str | Path, include: list[str] | None = None) -> Suite:
    """Load every task folder under ``root`` (or only ``include``); errors are collected per task."""
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise TaskError("*", str(root), "task root is not a folder", "set tasks.root to a folder of tasks")
    suite = Suite(root=root)
    names = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if include:
        missing = sorted(set(include) - set(names))
        suite.errors += [TaskError(t, str(root / t), "no such task folder") for t in missing]
        names = [n for n in names if n in set(include)]
    for name in names:
        try:
            suite.tasks.append(load_task(root / name))
        except TaskError as e:
            suite.errors.append(e)
    return suite
