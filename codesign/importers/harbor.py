"""Harbor task folders as codesign tasks: ``python -m codesign.importers.harbor DIR OUT``.

A Harbor task is ``task.toml``, ``instruction.md``, ``environment/`` (a Dockerfile), ``tests/test.sh`` (run
in the container at verification; it writes ``/logs/verifier/reward.txt``) and ``solution/solve.sh``. Each
task folder at or under DIR whose environment serves a web app becomes ``harbor-<name>`` in OUT:

- ``app/``: what the Dockerfile copies into its working folder (``WORKDIR``, ``/app`` in most tasks): a
  static site (``index.html``) or a Node app with a ``build`` script (served from ``dist/``); a Node app
  without a lockfile gets one resolved by npm, confined, no scripts run, so every trial installs the same;
- ``task.yaml``: ``instruction.md`` as the request; track RE; difficulty and categories from ``task.toml``;
- ``criteria.yaml``: one **command criterion** — the task's own ``tests/test.sh`` on the final workspace in
  the candidate sandbox, its reward deciding (``pass_if: reward_file``); ``tests/`` is hidden material,
  copied in only at grading, as Harbor does. The script's fixed paths become codesign's: ``/tests`` →
  ``$CRITERION_FILES``, ``/logs/verifier`` → ``$REWARD_DIR``, the working folder → ``$APP_DIR``;
- ``solution/solution.patch``: ``solution/solve.sh`` run on a copy of the app (confined, offline, its
  paths mapped the same way) and the change it made, as a patch.

A task codesign cannot grade the way Harbor does is refused with the reason, never imported half-right:
several services (``docker-compose.yaml``), several steps, no app copied into the working folder, no web
app there, a test script that installs software at verification (codesign grades offline), fixed paths
outside ``test.sh`` or inside single quotes (they cannot be mapped), a ``solve.sh`` that fails or changes
nothing. Run the gate on OUT next (``python -m codesign.validate tasks=all tasks.root=OUT``).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from codesign.sandbox.dependencies import failure_excerpt
from codesign.sandbox.local import LocalSandbox
from codesign.tasks.loader import load_task
from codesign.workspace import Baseline, copy_tree

DIFFICULTY = {"trivial": 1, "easy": 2, "medium": 3, "hard": 4, "expert": 5}
TEST_COMMAND = 'APP_DIR="$PWD" bash "$CRITERION_FILES/test.sh"'
# Software fetched at verification: codesign grades offline in the candidate sandbox, so such a test script
# would fail for want of the network, not for the candidate's code.
INSTALLS = re.compile(
    r"^\s*(?:sudo\s+)?(?:apt(?:-get)?\s+(?:-\S+\s+)*install|pip3?\s+install|uv\s+(?:pip|add|sync|tool)|uvx\s|"
    r"pipx\s|curl\s|wget\s|npm\s+(?:install|i|ci)\b|pnpm\s+(?:add|install)|yarn\s+(?:add|install))",
    re.MULTILINE,
)
LOCK_RESOLVE = "npm install --package-lock-only --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error"


class Refused(Exception):
    """The Harbor task cannot become a codesign task; the message says why."""


@dataclass
class Dockerfile:
    workdir: str  # the container's working folder: where the agent works and the app is
    copied: list[tuple[str, str]]  # (source in environment/, destination in the container), in order


def parse_dockerfile(text: str) -> Dockerfile:
    """The last ``WORKDIR`` and every ``COPY``/``ADD`` of the final stage (line continuations joined)."""
    lines = re.sub(r"\\\n", " ", text).splitlines()
    workdir, copied = "/", list[tuple[str, str]]()
    for line in lines:
        words = line.strip().split()
        if not words or words[0].startswith("#"):
            continue
        op = words[0].upper()
        if op == "FROM":  # a new stage: only the last one's copies are the image's
            workdir, copied = "/", []
        elif op == "WORKDIR" and len(words) > 1:
            workdir = _join(workdir, words[1])
        elif op in ("COPY", "ADD"):
            args = [w for w in words[1:] if not w.startswith("--")]
            if any(w.startswith("--from") for w in words[1:]) or len(args) < 2:
                continue  # from another stage or image: nothing of environment/
            if args[0].startswith("["):  # JSON form
                args = json.loads(" ".join(args))
            dest = _join(workdir, args[-1])
            copied += [(src, dest) for src in args[:-1]]
    return Dockerfile(workdir, copied)


def _join(base: str, path: str) -> str:
    joined = path if path.startswith("/") else f"{base.rstrip('/')}/{path}"
    parts: list[str] = []
    for part in joined.split("/"):
        if part == "..":
            parts = parts[:-1]
        elif part not in ("", "."):
            parts.append(part)
    return "/" + "/".join(parts)


def collect_app(env_dir: Path, docker: Dockerfile, app: Path) -> None:
    """Lay out in ``app`` what the Dockerfile copies into its working folder."""
    root = docker.workdir.rstrip("/") or "/"
    for src, dest in docker.copied:
        if dest != root and not dest.startswith(root.rstrip("/") + "/"):
            continue  # copied elsewhere in the image (a config, a tool): not the app
        source = (env_dir / src).resolve()
        if not source.is_relative_to(env_dir.resolve()) or not source.exists():
            raise Refused(f"the Dockerfile copies {src}, which is not in environment/")
        target = app / dest[len(root) :].lstrip("/")
        if source.is_dir():
            copy_tree(source, target)
        else:
            target = target / source.name if dest.endswith("/") or target == app else target
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for leftover in ("Dockerfile", ".dockerignore", "docker-compose.yaml"):
        (app / leftover).unlink(missing_ok=True)
    if not app.is_dir() or not any(app.iterdir()):
        raise Refused(f"the Dockerfile copies no app into its working folder {docker.workdir}")


def web_environment(app: Path, npm_cache: Path) -> dict[str, Any]:
    """codesign's ``environment`` for the app, or Refused when it serves no web page."""
    package = app / "package.json"
    if package.is_file():
        scripts = json.loads(package.read_text()).get("scripts") or {}
        if "build" in scripts:
            if not (app / "package-lock.json").is_file():
                _resolve_lockfile(app, npm_cache)
            return {"kind": "node", "serve": {"static_dir": "dist"}}
    if (app / "index.html").is_file():
        return {"kind": "static"}
    raise Refused("the environment serves no web app: no index.html and no package.json with a build script "
                  "in its working folder")  # fmt: skip


def _resolve_lockfile(app: Path, npm_cache: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="codesign-harbor-home-"))
    try:
        box = LocalSandbox(app, home, confine=True, network=True, writable=[str(npm_cache)],
                           env={"npm_config_cache": str(npm_cache)})  # fmt: skip
        box.check()
        result = box.execute(LOCK_RESOLVE, timeout=600)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(app / "node_modules", ignore_errors=True)
    if result.returncode != 0 or not (app / "package-lock.json").is_file():
        raise Refused(f"no lockfile and npm could not resolve one: {failure_excerpt(result.output)[-400:]}")


def map_paths(text: str, mapping: dict[str, str], where: str) -> str:
    """``text`` with each fixed container path of ``mapping`` replaced by its variable; Refused when one sits
    in single quotes (a shell would not expand the variable there)."""
    for path, variable in mapping.items():
        pattern = re.compile(r"(?<![\w./-])" + re.escape(path) + r"(?![\w.-])")
        for m in pattern.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            before = text[line_start : m.start()]
            if not before.lstrip().startswith("#") and before.count("'") % 2:  # a comment's apostrophe is no quote
                line = text[line_start:].split("\n", 1)[0].strip()
                raise Refused(f"{where}: {path} inside single quotes cannot be mapped to ${variable}: {line[:120]}")
        text = pattern.sub("${" + variable + "}", text)
    return text


def hidden_tests(tests_dir: Path, out: Path, workdir: str) -> None:
    """Copy ``tests/`` to ``out`` with ``test.sh``'s fixed paths mapped; Refused for what cannot run here."""
    script = tests_dir / "test.sh"
    if not script.is_file():
        raise Refused("no tests/test.sh (a Windows-only test.bat is not run by codesign)")
    text = script.read_text()
    found = INSTALLS.search(text)
    if found:
        raise Refused(f"tests/test.sh installs software at verification ({found.group(0).strip()}…): codesign "
                      "grades offline in the candidate sandbox; install it in the environment instead")  # fmt: skip
    mapping = {"/logs/verifier": "REWARD_DIR", "/tests": "CRITERION_FILES"}
    if workdir != "/":
        mapping[workdir] = "APP_DIR"
    other = re.search(r"(?<![\w./-])/logs/(?!verifier\b)[\w.-]+", text)
    if other:
        raise Refused(f"tests/test.sh writes {other.group(0)}: only the reward (/logs/verifier) has a place here")
    copy_tree(tests_dir, out)
    (out / "test.sh").write_text(map_paths(text, mapping, "tests/test.sh"))
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.name != "test.sh":
            try:
                body = path.read_text()
            except UnicodeDecodeError:
                raise Refused(
                    f"tests/{path.relative_to(out)} is not text: command files are copied in as text"
                ) from None
            for fixed in mapping:
                if re.search(r"(?<![\w./-])" + re.escape(fixed) + r"(?![\w.-])", body):
                    raise Refused(f"tests/{path.relative_to(out)} names {fixed}: only test.sh's paths can be "
                                  "mapped to the final workspace")  # fmt: skip


def reference_patch(task_dir: Path, app: Path, workdir: str, timeout_s: float) -> str:
    """``solution/solve.sh`` run on a copy of ``app`` (confined, offline), and the change it made."""
    solve = task_dir / "solution" / "solve.sh"
    if not solve.is_file():
        raise Refused("no solution/solve.sh: a codesign task ships a reference solution")
    scratch = Path(tempfile.mkdtemp(prefix="codesign-harbor-solve-"))
    try:
        work, solution = scratch / "work", scratch / "work" / ".codesign-solution"
        copy_tree(app, work)
        baseline = Baseline(scratch / "baseline.git", work, ignore=[".codesign-solution"])
        baseline.snapshot()
        copy_tree(task_dir / "solution", solution)
        mapping = {"/solution": "SOLUTION_DIR", **({workdir: "APP_DIR"} if workdir != "/" else {})}
        (solution / "solve.sh").write_text(map_paths(solve.read_text(), mapping, "solution/solve.sh"))
        box = LocalSandbox(work, scratch / "home", confine=True, network=False)
        box.check()
        run = 'APP_DIR="$PWD" SOLUTION_DIR="$PWD/.codesign-solution" bash .codesign-solution/solve.sh'
        result = box.execute(run, timeout=timeout_s)
        if result.returncode != 0:
            status = "timed out" if result.timed_out else f"exit code {result.returncode}"
            raise Refused(f"solution/solve.sh failed here ({status}, confined and offline): "
                          f"{failure_excerpt(result.output)[-400:]}")  # fmt: skip
        shutil.rmtree(solution)
        patch = baseline.diff()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not patch.strip():
        raise Refused("solution/solve.sh changed nothing in the app")
    return patch


def import_task(task_dir: Path, out_root: Path, npm_cache: Path) -> Path:
    """Write ``harbor-<name>`` under ``out_root`` from the Harbor task at ``task_dir``; Refused with the reason."""
    try:
        config = tomllib.loads((task_dir / "task.toml").read_text())
    except tomllib.TOMLDecodeError as e:
        raise Refused(f"task.toml is not valid TOML: {e}") from None
    if config.get("steps"):
        raise Refused("a multi-step task (steps in task.toml): codesign imports single-step tasks")
    env_dir = task_dir / "environment"
    if any((env_dir / n).is_file() for n in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml")):
        raise Refused("the environment has several services (docker-compose.yaml): codesign serves one app")
    if not (env_dir / "Dockerfile").is_file():
        raise Refused("no environment/Dockerfile")
    instruction = (task_dir / "instruction.md").read_text().strip() if (task_dir / "instruction.md").is_file() else ""
    if not instruction:
        raise Refused("no instruction.md (or it is empty): it is the request")
    name = str((config.get("task") or {}).get("name") or task_dir.name).split("/")[-1]
    task_id = "harbor-" + re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")
    docker = parse_dockerfile((env_dir / "Dockerfile").read_text())
    folder = out_root / task_id
    if folder.exists():
        raise Refused(f"{folder} exists already (two Harbor tasks named {name}?)")
    out_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{task_id}-", dir=out_root))  # renamed into place when complete
    work.chmod(0o755)
    placed = False
    try:
        collect_app(env_dir, docker, work / "app")
        environment = web_environment(work / "app", npm_cache)
        verifier_s = float((config.get("verifier") or {}).get("timeout_sec") or 600)
        hidden_tests(task_dir / "tests", work / "tests", docker.workdir)
        (work / "solution").mkdir()
        (work / "solution" / "solution.patch").write_text(
            reference_patch(task_dir, work / "app", docker.workdir, verifier_s)
        )
        metadata = config.get("metadata") or {}
        labels: dict[str, Any] = {"capability": ["functional_implementation"]}
        difficulty = DIFFICULTY.get(str(metadata.get("difficulty", "")).lower())
        if difficulty:
            labels["difficulty"] = difficulty
        categories = [str(c) for c in [metadata.get("category"), *(metadata.get("tags") or [])] if c]
        if categories:
            labels["categories"] = categories
        manifest = {"id": task_id, "track": "RE", "title": instruction.splitlines()[0].lstrip("# ").strip()[:120],
                    "request": instruction, "environment": environment, "labels": labels}  # fmt: skip
        (work / "task.yaml").write_text(
            f"# Imported from the Harbor task {task_dir.name} (python -m codesign.importers.harbor)\n"
            + yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True)
        )
        criterion = {
            "id": "harbor-tests",
            "text": f"The task's own tests pass: Harbor's tests/test.sh, run on the final workspace, gives reward "
            f"1 (from the Harbor task {task_dir.name}).",
            "kind": "interaction",
            "command": {
                "run": TEST_COMMAND,
                "files": "tests",
                "pass_if": "reward_file",
                "timeout_s": min(verifier_s, 3600.0),
            },
        }
        (work / "criteria.yaml").write_text(yaml.safe_dump({"criteria": [criterion]}, sort_keys=False))
        work.rename(folder)
        placed = True
        load_task(folder)  # codesign's own loader: a task it would refuse is not left behind
    except BaseException:
        shutil.rmtree(folder if placed else work, ignore_errors=True)
        raise
    return folder


def task_dirs(root: Path) -> list[Path]:
    """Every folder at or under ``root`` holding a ``task.toml`` (a task's own subfolders are not searched)."""
    if (root / "task.toml").is_file():
        return [root]
    found: list[Path] = []
    for child in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        found += task_dirs(child)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codesign.importers.harbor", description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="a Harbor task folder, or a folder of them")
    parser.add_argument("out", type=Path, help="the suite folder to write (tasks.root=OUT tasks=all)")
    parser.add_argument("--npm-cache", type=Path, default=Path("~/.cache/codesign/npm").expanduser(),
                        help="npm's cache when a lockfile is resolved")  # fmt: skip
    args = parser.parse_args(argv)
    if not args.dir.is_dir():
        print(f"{args.dir} is not a folder: give a Harbor task folder or a folder of them", file=sys.stderr)
        return 2
    found = task_dirs(args.dir)
    if not found:
        print(f"no Harbor task (a folder with task.toml) at or under {args.dir}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    imported = 0
    for task_dir in found:
        try:
            folder = import_task(task_dir, args.out, args.npm_cache)
        except Refused as e:
            print(f"skip {task_dir}: {e}", flush=True)
            continue
        except Exception as e:  # one task's surprise never stops the others
            print(f"skip {task_dir}: {type(e).__name__}: {e}", flush=True)
            continue
        imported += 1
        print(f"ok   {task_dir} -> {folder}", flush=True)
    print(f"{imported} imported, {len(found) - imported} skipped; next: python -m codesign.validate tasks=all "
          f"tasks.root={shlex.quote(str(args.out))}")  # fmt: skip
    return 0 if imported else 1


if __name__ == "__main__":
    sys.exit(main())
