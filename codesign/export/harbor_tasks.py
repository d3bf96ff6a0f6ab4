"""``python -m codesign.export harbor TASKS… OUT``: each codesign task as a Harbor task folder.

``TASKS`` are task folders or folders of them (a suite); ``OUT/<task_id>/`` gets::

    task.toml           Harbor's task config: metadata from the labels, timeouts, resources, a separate verifier
    instruction.md      what codesign's solvers are told (codesign/solve/prompts), with the app at /app
    environment/        a Dockerfile on codesign's worker image; app/ (copied to /app), attachments/
                        (to /app/_attachments) and, where the grader needs bubblewrap, docker-compose.yaml
    tests/test.sh       grades /app with codesign's evaluator (codesign.export.harbor_verify); tests/<task_id>/
                        is the task folder, criteria included, which Harbor copies in only for the verifier
    solution/solve.sh   applies solution.patch, the task's reference, to /app

A folder that is not a codesign task is reported by name and the others are exported; the exit status is
then 1. docs/export.md ("Harbor tasks") says how to build the base image and run the tasks.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from jinja2 import StrictUndefined, Template

from codesign.errors import TaskError
from codesign.evaluate.evaluators import ProbeEvaluator
from codesign.export.harbor_verify import needs_bubblewrap
from codesign.sandbox.dependencies import NODE_INSTALL, lockfile_key
from codesign.solve import prompts
from codesign.solve.regimes import Agentic
from codesign.tasks.loader import GENERATED_DIRS, MANIFEST, NEAR_MISSES, Task, load_suite, load_task
from codesign.workspace import copy_tree

DEFAULT_IMAGE = "codesign/worker:latest"  # launchers/Dockerfile, built locally (docs/export.md)
WORKDIR = "/app"  # the agent's working folder in the container: the app
ATTACHMENTS = "_attachments"  # inside the app, as for codesign's solvers (left out of every diff)
SCHEMA_VERSION = "1.4"  # Harbor's task.toml format (harbor 0.26.0)
# Collected from the agent's container and put back into the verifier's: the app without what is generated
# or given (tar --exclude patterns; codesign's diffs leave the same out).
ARTIFACT_EXCLUDE = ("node_modules", "dist", ".vite", ATTACHMENTS)
# Resources for the agent's tools and the grader (Chromium, a Vite build): codesign gives each trial actor a CPU
# and 1 GB (launchers/README.md); twice that leaves room for an agent's own builds and browser.
CPUS, MEMORY_MB, STORAGE_MB = 2, 4096, 10240
HARBOR_DIFFICULTY = {1: "easy", 2: "easy", 3: "medium", 4: "hard", 5: "hard"}


@dataclass
class Exported:
    """What one export wrote and what it could not."""

    written: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _template(name: str) -> Template:
    source = resources.files("codesign.export").joinpath("templates", "harbor", name).read_text()
    return Template(source, undefined=StrictUndefined, keep_trailing_newline=True)


def instruction(task: Task) -> str:
    """codesign's own request (``task.md``, as every harness renders it) and its closing instructions
    (``claude_code.md``), with where the app and the attachments are in the container."""
    view = task.view()
    text = prompts.render(prompts.load("task.md"), task=view).rstrip() + "\n\n"
    text += prompts.load("claude_code.md").rstrip() + "\n"
    where = f"\nThe app's folder is `{WORKDIR}`, your working directory."
    if view.attachments:
        where += f" The attachments are in `{WORKDIR}/{ATTACHMENTS}/`; that folder is not part of the app."
    return text + where + "\n"


def _toml(value: object) -> str:
    """A TOML value: JSON's strings and arrays are TOML's (escapes included); numbers and booleans as TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value), ensure_ascii=False)


def _table(name: str, values: Mapping[str, object]) -> str:
    return f"[{name}]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in values.items())


def tags(task: Task) -> list[str]:
    labels = task.manifest.labels
    found = [*labels.capability, *labels.categories, *labels.edit_types, task.manifest.modality]
    return list(dict.fromkeys(found))


def task_toml(task: Task, author: str, email: str | None, org: str | None) -> str:
    """Harbor's ``task.toml`` (``harbor.models.task.config.TaskConfig``, schema 1.4)."""
    m = task.manifest
    env = m.environment
    evaluator = ProbeEvaluator()
    # One evaluation's own bounds (the build, then evidence and grading), for each attempt the grader makes.
    verifier_s = (env.build_timeout_s + evaluator.timeout_s) * (1 + evaluator.max_retries)
    metadata: dict[str, object] = {
        "author_name": author,
        **({"author_email": email} if email else {}),
        "difficulty": HARBOR_DIFFICULTY[m.labels.difficulty],
        "category": "software_engineering",
        "tags": tags(task),
        "track": m.track,
        "codesign_task_id": m.id,
        "codesign_difficulty": m.labels.difficulty,
        "modality": m.modality,
        "criteria": len(task.criteria),
    }
    parts = [
        f"# codesign task {m.id}, exported by `python -m codesign.export harbor` (docs/export.md).\n"
        f'schema_version = "{SCHEMA_VERSION}"\n'
        f"artifacts = [{_toml({'source': WORKDIR, 'exclude': list(ARTIFACT_EXCLUDE)})}]\n"
    ]
    if org:  # a registry package's name and card
        authors = [{"name": author, **({"email": email} if email else {})}]
        package = {"name": f"{org}/{m.id}", "description": m.title, "keywords": tags(task), "authors": authors}
        parts.append(_table("task", package))
    parts += [
        _table("metadata", metadata),
        # Separate: graded in a fresh container of the same image, the agent's final /app copied in (artifacts),
        # so nothing the agent did to the container (codesign, its cache, the tests' copy) reaches the grader.
        _table("verifier", {"timeout_sec": float(verifier_s), "environment_mode": "separate"}),
        _table("agent", {"timeout_sec": float(Agentic().max_wall_s)}),
        _table("environment", {"build_timeout_sec": 600.0, "cpus": CPUS, "memory_mb": MEMORY_MB,
                               "storage_mb": STORAGE_MB}),
    ]  # fmt: skip
    return "\n".join(parts)


def _write_script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def write_task(task: Task, dest: Path, image: str, author: str, email: str | None, org: str | None) -> None:
    """``dest``: the Harbor task folder of ``task`` (``dest`` must not exist)."""
    m = task.manifest
    env = m.environment
    dest.mkdir(parents=True)
    (dest / "task.toml").write_text(task_toml(task, author, email, org))
    (dest / "instruction.md").write_text(instruction(task))

    environment = dest / "environment"
    copy_tree(task.app_dir, environment / "app", skip=GENERATED_DIRS)
    for a in m.attachments:  # by name, as codesign's solvers get them
        (environment / "attachments").mkdir(parents=True, exist_ok=True)
        shutil.copy2(task.dir / a.path, environment / "attachments" / Path(a.path).name)
    node = env.kind == "node"
    (environment / "Dockerfile").write_text(
        _template("Dockerfile.j2").render(
            task_id=m.id,
            image=image,
            attachments=bool(m.attachments),
            install=(env.install or NODE_INSTALL) if node else None,
            lockfile_key=lockfile_key(task.app_dir) if node else None,
        )
    )
    if needs_bubblewrap(task):
        (environment / "docker-compose.yaml").write_text(_template("docker-compose.yaml.j2").render())

    tests = dest / "tests"
    # The whole task folder but its near misses (the loader needs the reference patch): Harbor copies tests/
    # into the verifier's container only, so the agent never sees the criteria.
    copy_tree(task.dir, tests / m.id, skip=GENERATED_DIRS)  # named as the task: the loader checks the id
    shutil.rmtree(tests / m.id / NEAR_MISSES, ignore_errors=True)
    _write_script(tests / "test.sh", _template("test.sh.j2").render(task_id=m.id))

    solution = dest / "solution"
    solution.mkdir()
    shutil.copy2(task.solution_path, solution / "solution.patch")
    _write_script(solution / "solve.sh", _template("solve.sh.j2").render(task_id=m.id))


def _tasks(path: Path) -> tuple[list[Task], list[str]]:
    """The tasks at ``path``: a task folder (it has task.yaml) or a folder of them; every folder that is not a
    loadable task is an error naming it."""
    if not path.is_dir():
        return [], [f"{path}: no such folder (give codesign task folders or folders of them)"]
    if (path / MANIFEST).is_file():
        try:
            return [load_task(path)], []
        except TaskError as e:
            return [], [f"{path}: {e}"]
    suite = load_suite(path)
    if not suite.tasks and not suite.errors:
        return [], [f"{path}: not a codesign task folder (no {MANIFEST}) and no task folders in it"]
    return suite.tasks, [f"{path / e.task_id}: {e}" for e in suite.errors]


def export(
    sources: list[Path],
    out: Path,
    image: str = DEFAULT_IMAGE,
    author: str = "codesign",
    email: str | None = None,
    org: str | None = None,
) -> Exported:
    """Each task under ``sources`` as ``out/<task_id>/`` (an earlier export of it is replaced)."""
    result = Exported()
    out.mkdir(parents=True, exist_ok=True)
    for source in sources:
        tasks, errors = _tasks(Path(source))
        result.errors += errors
        for task in tasks:
            dest = out / task.id
            if dest.exists() and not (dest / "task.toml").is_file():
                result.errors.append(
                    f"{dest}: exists and is not a Harbor task folder: not replaced (remove it or choose another OUT)"
                )
                continue
            # Written beside, then swapped in: an interrupted export never leaves half a task.
            staging = Path(tempfile.mkdtemp(prefix=f".{task.id}-", dir=out))
            try:
                write_task(task, staging / task.id, image, author, email, org)
                if dest.exists():
                    shutil.rmtree(dest)
                (staging / task.id).rename(dest)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            result.written.append(dest)
    return result


def _author(text: str) -> tuple[str, str | None]:
    """``Name <email>`` or ``Name``."""
    name, _, rest = text.partition("<")
    return name.strip(), rest.rstrip(">").strip() or None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m codesign.export harbor",
        description="Write each codesign task as a Harbor task folder OUT/<task_id>/ (docs/export.md).",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="TASKS… OUT", help="task folders or suites, then OUT")
    parser.add_argument("--image", default=DEFAULT_IMAGE, help=f"codesign's worker image (default {DEFAULT_IMAGE})")
    parser.add_argument("--author", default="codesign", help='"Name <email>" for the metadata (default codesign)')
    parser.add_argument("--org", help="also write [task] name = ORG/<task_id>, for Harbor's registry")
    args = parser.parse_args(argv)
    if len(args.paths) < 2:
        parser.error("give one or more task folders (or suites) and then OUT")
    author, email = _author(args.author)
    result = export(args.paths[:-1], args.paths[-1], args.image, author, email, args.org)
    for path in result.written:
        print(f"wrote {path}")
    for error in result.errors:
        print(f"error: {error}", file=sys.stderr)
    print(f"{len(result.written)} Harbor task(s) in {args.paths[-1]}; {len(result.errors)} error(s)")
    return 1 if result.errors or not result.written else 0
