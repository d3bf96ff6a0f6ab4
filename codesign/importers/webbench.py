"""Web-Bench projects as codesign tasks: ``python -m codesign.importers.webbench CHECKOUT OUT``.

Web-Bench (Apache-2.0) ships projects of 20 cumulative tasks, each checked by Playwright spec files. For each
task N chosen (``--task N``, default 1; ``--tasks all``, ``1-20``, ``3,5``) of each selected project this
writes one task folder ``wb-<project>-task-<N>``:

- ``app/``: the starting app. A project served as static files (``npx serve``) is ``src-init/`` itself
  (plus the project's ``assets/``, which Web-Bench copies in). A project served by Vite keeps Web-Bench's
  layout — the project root with its Vite config and ``src/`` = ``src-init/`` — with a generated
  ``package.json`` (the test-only dependencies dropped, since Web-Bench resolves its test-util as a
  ``workspace:*`` package) and a lockfile resolved by ``npm`` at import time, so every trial installs the same
  versions; codesign serves it with its Vite dev server, as Web-Bench's own evaluation does.
- ``task.yaml``: the task's description as the request (tasks 1..N's, in order, for N > 1: Web-Bench ships no
  state between ``src-init`` and the final ``src``, so the app is ``src-init`` for every N); track RE, one
  edit type (Web-Bench tasks are functional changes to an existing code base); routes are the starting app's
  HTML pages.
- ``solution/solution.patch``: ``src-init`` → ``src`` (Web-Bench's reference after all tasks, which
  passes every earlier task's specs since grading is cumulative).
- ``specs/``: the project's ``test/`` folder and config, its test-util library kept as a local package
  (``spec_runner.packages``, so ``require`` and ES ``import`` both find it), a pinned ``@playwright/test`` and
  the project's own packages (its specs may import them; not a static project's type declarations) with a
  lockfile; ``criteria.yaml`` has one criterion per test of ``init.spec.js`` and of
  ``task-1..N.spec.js``, listed by ``playwright test --list`` — never by parsing JavaScript (a spec that
  imports the app's own modules as it loads, against the reference, the starting app lacking them). Which of them
  are changes is decided by running them on the unchanged app at import: a test it passes is a
  preservation (it must keep passing), a test it fails is a change (the solution must make it pass).
  ``--no-classify`` skips that run: ``init`` and earlier tasks' tests are then preservations, task N's the
  changes. ``--repeat K`` grades the reference K times: a test that passes and fails is flaky — left out of
  the criteria, with the evidence in a comment atop ``criteria.yaml`` (``--include-flaky`` keeps it, marked).

The tasks of a project share their app, reference and specs, so each of those runs happens once per project
(on every test up to the last task wanted), its spec files split over ``--workers`` Playwright runners at
once on the starting app (whose tests wait out their bounds) and ``--reference-workers`` on the reference.
``OUT/summary.md`` and ``summary.json`` say what was imported, skipped and flaky; ``--gate`` takes the gate's
steps (:mod:`codesign.importers.webbench_gate`'s) on those runs, ``--fresh-gate`` grades both apps again.
Projects that need what codesign does not run (a database or full-stack server, a bundler task, files checked
by a compiler with no page) are skipped with the reason.
Nothing of Web-Bench is shipped with codesign; point CHECKOUT at your own clone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from codesign._types import CriterionVerdict
from codesign.evaluate.gate import flaky_warnings, integrity
from codesign.evaluate.specs import RERUN_FACTOR
from codesign.importers.webbench_runs import Flaky, Graded, StartingAppDoesNotBuild, flaky_tests, grade_in_parallel
from codesign.importers.webbench_summary import SUMMARY_MD, record_import
from codesign.runtime.browser import Browser
from codesign.sandbox.dependencies import cached_node_modules, failure_excerpt, link_node_modules
from codesign.tasks.loader import GENERATED_DIRS, Task, load_task

RUNNER = Path(__file__).with_name("webbench_runner")  # package.json + lockfile pinning @playwright/test
UTIL = "@web-bench/test-util"
LIBRARY_PATH = re.compile(r"(['\"])(?:\.\./)+libraries/test-util(?:/src)?(?:/index(?:\.js)?)?\1")
PASSES_ALREADY = " (already true of the starting app: kept as a preservation)"
FAILS_ALREADY = " (the starting app fails this earlier test: the solution must make it pass)"
FLAKY_KEPT = " (flaky on Web-Bench's reference: passed {passed} of {runs} runs at import)"
FLAKY_KEY = "flaky"  # criteria.yaml's comment block of flaky tests
BROKEN_KEY = "fails_on_reference"  # … and of the tests the reference failed in every run
PACKAGES = {UTIL: "libraries/test-util"}  # spec_runner.packages: test-util linked into node_modules
TEST_ONLY = {UTIL, "@playwright/test", "serve"}  # the app's dependencies the app itself never uses
NOT_APP = {"test", "test-utils", "src", "src-init", "assets", "tasks.jsonl", "tasks.yml", "readme.md",
           "playwright.config.js", "package.json", ".evalignore", "node_modules"}  # fmt: skip
# Web-Bench's solver sees only the sources folder; here it sees the project around it, so say where paths start.
SOURCES_NOTE = "\n\n(The app's sources are in src/: file paths in this request are relative to src/.)"
VITE_SERVE = "EVAL=1 node_modules/.bin/vite --port {port} --host 127.0.0.1 --strictPort"  # EVAL=1: no file watcher
# Bounds. A test that runs out of one is run again alone with 4x (codesign.evaluate.specs), so a bound sets what a
# test failing on purpose costs: calculator's `click` on a button src-init lacks waited 30 s + 120 s under
# Web-Bench's 30 s a test; jotai's classification took 1114 s under its development setting of 15 s, calculator's
# 451 s under 5 s (20 tasks, 8 runners). The reference's slowest test took 1.4 s (calculator, 68 tests, median
# 0.38 s): 5 s is 3.5x that, and the run again's 20 s holds a test slowed 14x, or canvas's tests that wait 10 s on
# purpose. Web-Bench's own development bounds are 2-30 s a test, 1-5 s an expect.
TEST_TIMEOUT_S = 5.0
EXPECT_TIMEOUT_S = 2.0
WORKERS = 8  # runners at once on a starting app, whose tests wait: see the measurement in docs/tasks.md
REFERENCE_WORKERS = 2  # on the reference, whose tests compute: one per core (Web-Bench's 500 ms timing tests)
STARTING_WORKERS = 2  # tests at once in each runner on the starting app (spec_runner.workers): they wait
RERUN_WORKERS = 4  # element-waiting tests run again at once after a timeout (spec_runner.rerun_workers): docs/tasks.md


def read_tasks(project: Path) -> list[dict[str, Any]]:
    if (project / "tasks.jsonl").is_file():
        lines = (project / "tasks.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]
    return [{**t, "date": str(t.get("date"))} for t in yaml.safe_load((project / "tasks.yml").read_text())]


def served_by(project: Path) -> str:
    """The command Web-Bench's playwright config starts the app with."""
    config = (project / "playwright.config.js").read_text()
    command = re.search(r"command:\s*[`'\"]([^`'\"]*)", config)
    return command.group(1).strip() if command else "?"


def layout(project: Path) -> str:
    """``static`` (served as files) or ``vite`` (served by Vite's dev server)."""
    return "vite" if re.match(r"npx vite\b", served_by(project)) else "static"


def pages(start: Path) -> list[str]:
    """The routes of an app: its top-level HTML pages (``index.html`` is ``/``)."""
    found = sorted(p.name for p in start.glob("*.html"))
    return [("/" if f == "index.html" else f"/{f}") for f in sorted(found, key=lambda f: f != "index.html")]


def why_not(project: Path) -> str | None:
    """None when codesign can import the project, else why not."""
    package = json.loads((project / "package.json").read_text())
    if not (package.get("eval") or {}).get("stable"):
        return "not marked stable by Web-Bench"
    served = served_by(project)
    if not re.match(r"(cp -r \S+ \S+ && )?npx (serve|vite)\b", served):
        return f"served by `{served}` — only apps served as files (npx serve) or by Vite (npx vite) are imported"
    if not (project / "src-init").is_dir() or not (project / "src").is_dir():
        return "no src-init/ and src/"
    if not pages(project / "src-init"):
        return "src-init/ has no HTML page: its tests check files (e.g. with a compiler), not an app"
    workspace = [k for k, v in _dependencies(package).items() if str(v).startswith("workspace:") and k != UTIL]
    if workspace:
        return f"depends on workspace packages codesign cannot resolve: {', '.join(workspace)}"
    return None


def _dependencies(package: dict[str, Any]) -> dict[str, str]:
    return {**package.get("dependencies", {}), **package.get("devDependencies", {})}


def reference_patch(start: Path, final: Path) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        git = ["git", "-c", "user.name=codesign", "-c", "user.email=codesign@localhost", "-c", "core.autocrlf=false"]
        shutil.copytree(start, repo, dirs_exist_ok=True)
        subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
        subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", "start", "--allow-empty"], cwd=repo, check=True)
        for p in repo.iterdir():
            if p.name != ".git":
                shutil.rmtree(p) if p.is_dir() else p.unlink()
        shutil.copytree(final, repo, dirs_exist_ok=True)
        subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
        return subprocess.run(
            [*git, "diff", "--cached", "--binary", "--no-color", "HEAD"],
            cwd=repo,
            check=True,
            capture_output=True,
            text=True,
        ).stdout


def list_tests(
    specs: Path, files: list[str], packages: dict[str, str], sources: Path, node_cache: Path
) -> list[tuple[str, str]]:
    """(file relative to the spec folder, title path) of every test in ``files``, from ``playwright --list``;
    ``sources`` is the app's source folder (some specs read it as they load)."""
    modules = cached_node_modules(specs, node_cache)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "specs"
        shutil.copytree(specs, work)
        link_node_modules(work, modules, packages)
        cli = work / "node_modules" / "@playwright" / "test" / "cli.js"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "IS_EVAL_PRODUCTION": "true",
            "EVAL_PROJECT_ROOT": str(sources),
            "HOME": tmp,
        }
        proc = subprocess.run(
            ["node", str(cli), "test", "--list", "--reporter=json", *files],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        try:
            report = json.loads(proc.stdout)
        except ValueError:
            raise RuntimeError(f"playwright --list failed: {(proc.stdout + proc.stderr)[-1500:]}") from None
    if report.get("errors"):  # a spec that does not load (a module it imports is missing …) lists nothing
        messages = sorted({e.get("message", "?").splitlines()[0] for e in report["errors"]})
        raise RuntimeError(f"playwright --list: {' | '.join(messages)[:1500]}")
    found: list[tuple[str, str]] = []

    def walk(suite: dict[str, Any], path: list[str], file: str) -> None:
        for spec in suite.get("specs", []):
            found.append((file, " > ".join([*path, spec["title"]])))
        for child in suite.get("suites", []):
            walk(child, [*path, child["title"]], file)

    for top in report.get("suites", []):
        listed = top.get("file", top.get("title", ""))  # relative to the config's testDir: test/ or the root
        walk(top, [], listed if (specs / listed).is_file() else f"test/{listed}")
    return found


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "test"


def app_package(project: Path, name: str) -> dict[str, Any]:
    """The Vite app's package.json: the project's, without what only Web-Bench's test runner uses."""
    package = json.loads((project / "package.json").read_text())
    app: dict[str, Any] = {"name": f"wb-{name}", "private": True, "version": package.get("version", "0.0.1")}
    if "type" in package:
        app["type"] = package["type"]
    app["scripts"] = {"dev": "vite", "build": "vite build"}
    for section in ("dependencies", "devDependencies"):
        kept = {k: v for k, v in package.get(section, {}).items() if k not in TEST_ONLY}
        if kept:
            app[section] = kept
    return app


def lock(folder: Path) -> None:
    """Resolve ``folder/package.json`` to a ``package-lock.json`` (needs the npm registry). Web-Bench installs
    with pnpm, which lets a peer-dependency range disagree; npm refuses unless told to ignore peers, which the
    folder's ``.npmrc`` then tells every later install too."""
    command = ["npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund"]
    proc = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 and "ERESOLVE" in proc.stderr:
        (folder / ".npmrc").write_text("legacy-peer-deps=true\n")
        proc = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"npm could not resolve the dependencies:\n{failure_excerpt(proc.stderr)}")


def write_app(project: Path, name: str, app: Path, source: Path) -> None:
    """The app folder with ``source`` as its sources (``src-init`` for the task, ``src`` for the reference)."""
    assets = project / "assets"
    if layout(project) == "static":
        shutil.copytree(source, app)
        if assets.is_dir():
            shutil.copytree(assets, app / "assets", dirs_exist_ok=True)
        if json.loads((project / "package.json").read_text()).get("type") == "module":
            # Web-Bench's sources sit in their project, whose package.json makes their .js files ES modules for
            # Node too (esmodule's specs import the app's Node.js modules): the app says so itself.
            (app / "package.json").write_text(json.dumps({"private": True, "type": "module"}, indent=2) + "\n")
        return
    app.mkdir(parents=True)
    for entry in project.iterdir():
        if entry.name not in NOT_APP:
            (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, app / entry.name)
    (app / "package.json").write_text(json.dumps(app_package(project, name), indent=2) + "\n")
    shutil.copytree(source, app / "src")
    if assets.is_dir():
        shutil.copytree(assets, app / "src" / "assets", dirs_exist_ok=True)


def write_specs(checkout: Path, project: Path, name: str, specs: Path) -> None:
    """The hidden spec folder: the project's tests and config, test-util, a pinned ``@playwright/test``."""
    shutil.copytree(RUNNER, specs)
    package = json.loads((project / "package.json").read_text())
    runner_package = json.loads((specs / "package.json").read_text())
    if "type" in package:  # the config and specs are ES modules in a "type": "module" project
        runner_package["type"] = package["type"]
    # Web-Bench runs the specs inside the project: they may import its packages (sass in a Vite project,
    # tinycolor2 in expression-editor's static one). Type declarations never load.
    app_deps = _dependencies(app_package(project, name))
    if layout(project) == "static":
        app_deps = {k: v for k, v in app_deps.items() if not k.startswith("@types/")}
    if app_deps:
        runner_package["devDependencies"] = {**app_deps, **runner_package["devDependencies"]}
        (specs / "package-lock.json").unlink()
    (specs / "package.json").write_text(json.dumps(runner_package, indent=2) + "\n")
    if app_deps:
        lock(specs)
    for material in ("test", "test-utils"):
        if (project / material).is_dir():
            shutil.copytree(project / material, specs / material)
    for spec in specs.rglob("*.js"):  # a few specs reach test-util by a path out of the project: use its name
        text = spec.read_text()
        if LIBRARY_PATH.search(text):
            spec.write_text(LIBRARY_PATH.sub(lambda m: f"{m.group(1)}{UTIL}{m.group(1)}", text))
    shutil.copy2(project / "playwright.config.js", specs / "playwright.config.js")
    util = checkout / "libraries" / "test-util"
    shutil.copytree(util / "src", specs / "libraries" / "test-util" / "src")
    shutil.copy2(util / "package.json", specs / "libraries" / "test-util" / "package.json")


def task_numbers(project: Path) -> list[int]:
    """The numbers of the project's tasks (``task-1`` … ``task-20``), in order."""
    found = (re.fullmatch(r"task-(\d+)", str(t.get("id", ""))) for t in read_tasks(project))
    return sorted(int(m.group(1)) for m in found if m)


def parse_tasks(text: str) -> list[int] | None:
    """``--tasks``: ``all`` (None: every task a project has), ``1-20``, ``3,5,7-9``."""
    if text.strip() == "all":
        return None
    numbers: set[int] = set()
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or int(m.group(1)) < 1 or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise ValueError(f"--tasks {text!r}: {part!r} is not N or N-M (N ≥ 1); e.g. --tasks all, 1-20, 3,5,7-9")
        numbers.update(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    return sorted(numbers)


def _file_rank(file: str) -> int:
    """init's tests first, then task 1's, task 2's …"""
    m = re.search(r"task-(\d+)\.spec\.js$", file)
    return int(m.group(1)) if m else 0


def spec_files(project: Path, n: int) -> list[str]:
    """The spec files whose tests task ``n`` is graded on: ``init.spec.js`` and ``task-1..n.spec.js``."""
    names = ["init.spec.js", *(f"task-{k}.spec.js" for k in range(1, n + 1))]
    return [f"test/{f}" for f in names if (project / "test" / f).is_file()]


def listed_criteria(
    folder: Path, project: Path, top: int, node_cache: Path, reference: Path
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """One criterion per test of init and tasks 1..top (init's preservations for now), and the spec files that
    do not load, with Playwright's reason (the tasks that need them cannot be imported; the others can). A spec
    that imports the app's own modules as it loads (esmodule's task 18 on) is listed against ``reference`` (the
    reference app): the starting app does not have them yet."""
    files = spec_files(project, top)
    inner = "src" if layout(project) == "vite" else ""
    sources = folder / "app" / inner
    broken: dict[str, str] = {}
    try:
        listed = list_tests(folder / "specs", files, PACKAGES, sources, node_cache)
    except RuntimeError:  # one spec that does not load lists nothing for every file: find which, file by file
        listed = []
        for file in files:
            try:
                listed += list_tests(folder / "specs", [file], PACKAGES, sources, node_cache)
            except RuntimeError:
                try:
                    listed += list_tests(folder / "specs", [file], PACKAGES, reference / inner, node_cache)
                except RuntimeError as e:
                    broken[file] = str(e)
    criteria: list[dict[str, Any]] = []
    for file, title in sorted(listed, key=lambda t: _file_rank(t[0])):  # stable: each file's tests in order
        criteria.append(
            {
                "id": f"{Path(file).name.removesuffix('.spec.js')}-{_slug(title)}",
                "text": title,
                "kind": "interaction",
                "preserve": file == "test/init.spec.js",  # set per task from the runs
                "spec": {"file": file, "title": title},
            }
        )
    ids = [c["id"] for c in criteria]
    seen: dict[str, int] = {}
    for c in criteria:  # two tests with one slug keep apart, numbered within their file (the same in every task)
        if ids.count(c["id"]) > 1:
            seen[c["id"]] = seen.get(c["id"], 0) + 1
            c["id"] += f"-{seen[c['id']]}"
    return criteria, broken


def manifest(project: Path, name: str, n: int) -> dict[str, Any]:
    tasks = {t["id"]: t["description"].strip() for t in read_tasks(project)}
    if f"task-{n}" not in tasks:
        raise ValueError(f"{name} has no task-{n}")
    request = tasks[f"task-{n}"]
    if n > 1:  # the app is src-init, before task 1: the solver is asked for every task up to n, in order
        steps = "\n\n".join(f"Change {k}:\n{tasks[f'task-{k}']}" for k in range(1, n + 1))
        request = f"Make these {n} changes, in order (each builds on the ones before):\n\n{steps}"
    routes = pages(project / "src-init")
    vite = layout(project) == "vite"
    # Many projects start from an empty root (`<div class="root"></div>`): a blank start is theirs, not a crash.
    environment: dict[str, Any] = {"kind": "static", "routes": routes, "starts_blank": True}
    if vite:
        environment = {
            "kind": "node",
            "build": False,
            "routes": routes,
            "starts_blank": True,
            "serve": {"command": VITE_SERVE, "ready_path": routes[0], "ready_timeout_s": 300},
        }
    return {
        "id": f"wb-{name}-task-{n}",
        "track": "RE",
        "title": f"Web-Bench {name}, task {n}",
        "request": request + (SOURCES_NOTE if vite else ""),
        "environment": environment,
        "labels": {
            "capability": ["functional_implementation"],
            "categories": ["web-bench", name],
            "edit_types": ["component"],
        },
    }


@dataclass
class ImportOptions:
    """How the tasks are made and checked at import (the command line's options)."""

    node_cache: Path = field(default_factory=lambda: Path("~/.cache/codesign/node_modules").expanduser())
    classify: bool = True  # grade the starting app once to tell preservations from changes
    repeat: int = 0  # grade the reference this many times; a test that passes and fails is flaky
    include_flaky: bool = False  # keep flaky tests as criteria (marked), instead of leaving them out
    workers: int = WORKERS  # runners at once on the starting app (its tests wait)
    reference_workers: int = REFERENCE_WORKERS  # runners at once on the reference (its tests compute)
    rerun_workers: int = RERUN_WORKERS  # the tasks' spec_runner.rerun_workers
    test_timeout_s: float = TEST_TIMEOUT_S
    expect_timeout_s: float = EXPECT_TIMEOUT_S


@dataclass
class ProjectImport:
    """What importing one project gave: its tasks, the tasks (or the whole project) skipped and why, the
    flaky tests found on the reference, and how long it took."""

    name: str
    requested: list[int] = field(default_factory=list)
    imported: dict[int, str] = field(default_factory=dict)  # task number -> folder
    skipped: dict[int, str] = field(default_factory=dict)  # task number -> why
    reason: str = ""  # why the whole project was skipped ('' when it was imported)
    flaky: list[dict[str, Any]] = field(default_factory=list)  # Flaky.as_dict(), with "included"
    notes: dict[int, str] = field(default_factory=dict)  # task number -> the classification's note
    criteria: dict[int, int] = field(default_factory=dict)  # task number -> criteria written
    left_out: dict[int, int] = field(default_factory=dict)  # task number -> tests left out: the reference fails them
    # Kept, but the gate will fail the tasks that have them: a test the starting app's run could not grade.
    ungraded_on_start: dict[str, str] = field(default_factory=dict)  # criterion id -> why
    fails_on_reference: dict[str, str] = field(default_factory=dict)  # failed in every reference run: left out
    wall_s: float = 0.0
    phases_s: dict[str, float] = field(default_factory=dict)  # write, classify, reference, tasks
    gated: dict[str, Any] | None = None  # the gate's record from these runs (classified, reference graded)


def import_project(
    checkout: Path, name: str, out: Path, numbers: list[int] | None, options: ImportOptions
) -> ProjectImport:
    """Tasks ``numbers`` (None: all) of one project. The tasks of a project share the starting app, the
    reference and the spec folder, so the app is built, its tests listed, the starting app and the reference
    graded once for all of them: task N's criteria are the tests of init and tasks 1..N among those."""
    start = time.monotonic()
    project = checkout / "projects" / name
    result = ProjectImport(name)
    reason = why_not(project) if (project / "package.json").is_file() else "not a project"
    if reason:
        result.reason = reason
        return result
    available = task_numbers(project)
    result.requested = available if numbers is None else numbers
    for n in result.requested:
        if n not in available:
            result.skipped[n] = f"ValueError: {name} has no task-{n}"
    wanted = [n for n in result.requested if n in available]
    try:
        if wanted:
            with tempfile.TemporaryDirectory(prefix=f"codesign-wb-{name}-") as tmp:
                _import_tasks(checkout, project, name, out, wanted, options, Path(tmp), result)
    except Exception as e:  # the project's app, listing or runs failed: none of its tasks is imported
        for n in wanted:
            shutil.rmtree(out / f"wb-{name}-task-{n}", ignore_errors=True)  # no half-written task
        result.imported, result.reason = {}, f"{type(e).__name__}: {e}"
    result.wall_s = round(time.monotonic() - start, 1)
    return result


def _import_tasks(
    checkout: Path,
    project: Path,
    name: str,
    out: Path,
    wanted: list[int],
    options: ImportOptions,
    tmp: Path,
    result: ProjectImport,
) -> None:
    clock = time.monotonic()
    top = max(wanted)
    union = tmp / "union" / f"wb-{name}-task-{top}"  # every test up to the last task wanted
    write_app(project, name, union / "app", project / "src-init")
    if layout(project) == "vite":
        lock(union / "app")  # one package.json for every task of the project: one lockfile
    final = tmp / "final" / "app"
    write_app(project, name, final, project / "src")
    for resolved in ("package-lock.json", ".npmrc"):
        if (union / "app" / resolved).is_file():
            shutil.copy2(union / "app" / resolved, final / resolved)
    (union / "solution").mkdir()
    (union / "solution" / "solution.patch").write_text(reference_patch(union / "app", final))
    write_specs(checkout, project, name, union / "specs")
    root = "{workspace}/src" if layout(project) == "vite" else "{workspace}"  # Web-Bench's EVAL_PROJECT_ROOT
    runner = {
        "dir": "specs",
        "config": "playwright.config.js",
        "timeout_s": options.test_timeout_s,
        "expect_timeout_s": min(options.expect_timeout_s, options.test_timeout_s),
        "rerun_workers": options.rerun_workers,
        "env": {"EVAL_PROJECT_ROOT": root, "IS_EVAL_PRODUCTION": "true"},
        "packages": PACKAGES,
    }
    every, broken = listed_criteria(union, project, top, options.node_cache, final)
    if not every:
        raise RuntimeError(f"no spec file of {name} loads: " + " | ".join(broken.values())[:1500])
    (union / "task.yaml").write_text(_yaml(manifest(project, name, top)))
    write_criteria(union, runner, every)
    load_task(union)  # the result must be a valid codesign task
    result.phases_s["write"] = round(time.monotonic() - clock, 1)
    passing, flaky = asyncio.run(_grade(union, options, tmp / "runs", result))
    for n in wanted:
        try:
            _write_task(union, project, name, n, out, runner, every, broken, passing, flaky, options, result)
        except Exception as e:
            shutil.rmtree(out / f"wb-{name}-task-{n}", ignore_errors=True)  # no half-written task
            result.skipped[n] = f"{type(e).__name__}: {e}"
    result.flaky = [f.as_dict() | {"included": options.include_flaky} for f in flaky]


async def _grade(
    union: Path, options: ImportOptions, work: Path, result: ProjectImport
) -> tuple[set[str] | None, list[Flaky]]:
    """The ids the starting app passes (None without classification), and the flaky tests of the reference
    (graded ``options.repeat`` times). With both runs, ``result.gated`` is the gate's view of them (the gate's
    own steps on the same runs: :func:`gated_by_import`). Authoring tools, like the gate, may use the evaluator."""
    browser = Browser(os.environ.get("CODESIGN_CHROMIUM"), slots=max(options.workers, options.reference_workers))
    task = load_task(union)
    try:
        baseline = None
        clock = time.monotonic()
        if options.classify:
            try:
                baseline = await grade_in_parallel(
                    union, "", options.workers, browser, options.node_cache, work / "baseline", starting_runner(task)
                )
            except StartingAppDoesNotBuild as e:
                raise RuntimeError(f"the starting app does not build: {str(e).split(': ', 1)[-1]}") from None
            result.ungraded_on_start = {i: v.reason[:300] for i, v in baseline.verdicts.items() if v.grading_failed}
            result.phases_s["classify"] = round(time.monotonic() - clock, 1)
        clock = time.monotonic()
        runs = [
            (
                await grade_in_parallel(
                    union,
                    task.reference_patch(),
                    options.reference_workers,
                    browser,
                    options.node_cache,
                    work / f"reference-{k}",
                )
            ).verdicts
            for k in range(1, options.repeat + 1)
        ]
        if runs:
            result.phases_s["reference"] = round(time.monotonic() - clock, 1)
            result.fails_on_reference = {
                c.id: " ".join(runs[0][c.id].reason.split())[:300]
                for c in task.criteria
                if all(c.id in run and run[c.id].verdict == "FAIL" for run in runs)
            }
        if baseline is not None and runs:
            result.gated = gated_by_import(task, baseline, runs)
        passing = None if baseline is None else {i for i, v in baseline.verdicts.items() if v.verdict == "PASS"}
        return passing, flaky_tests(task.criteria, runs)
    finally:
        await browser.close()


def starting_runner(task: Task) -> dict[str, Any]:
    """How the starting app is graded: once, with the bounds a run again would give (``RERUN_FACTOR``×) and no
    run again, ``STARTING_WORKERS`` tests at once in each runner. Nearly every test fails on it, most by
    waiting out a bound (an element ``src-init`` lacks), so the usual first run + run again graded each such
    test twice — 40 % of its test runs on table, each a new Playwright worker (~1.3 CPU-s: Playwright discards a
    worker after a failure) — for the verdicts one run at the longer bounds gives; and the longer bounds are
    waited out side by side, as a run again of element-waiting tests is."""
    runner = task.spec_runner
    assert runner is not None
    return {
        "timeout_s": min(runner.timeout_s * RERUN_FACTOR, 600.0),
        "expect_timeout_s": min(runner.expect_timeout_s * RERUN_FACTOR, 120.0),
        "run_again": False,
        "workers": STARTING_WORKERS,
    }


def gated_by_import(task: Task, baseline: Graded, runs: list[dict[str, CriterionVerdict]]) -> dict[str, Any]:
    """The gate's record of a project (:func:`codesign.importers.webbench_gate.gate_cover`'s) from the import's
    own runs: the starting app graded once, the reference ``len(runs)`` times, and the gate's steps on them —
    integrity (the files, the reference patch applies), install/build (the starting app built: else no task
    was imported), launch/render (the first runner's pages). Each imported task's report is read from it."""
    from codesign.importers.webbench_gate import shared_key

    clock = time.monotonic()
    steps = {"integrity": "ok", "install_build": "ok", "launch_render": "ok"}
    problem = integrity(task)
    if problem:
        steps["integrity"] = f"FAIL: {problem}"
    elif baseline.render_problems:
        steps["launch_render"] = "FAIL: " + "; ".join(baseline.render_problems)
    seen = {c.id: [run[c.id].verdict for run in runs if c.id in run] for c in task.criteria}
    warnings = [*baseline.render_warnings, *flaky_warnings(seen)]
    return {
        "criteria": [c.id for c in task.criteria],
        "shards": [{"steps": steps, "warnings": warnings, "transient": baseline.transient}],
        "baseline": {i: asdict(v) for i, v in baseline.verdicts.items()},
        "references": [{i: asdict(v) for i, v in run.items()} for run in runs],
        "wall_s": round(time.monotonic() - clock, 1),  # what the gate added to the import's runs
        "shared": shared_key(task),
    }


def _write_task(
    union: Path,
    project: Path,
    name: str,
    n: int,
    out: Path,
    runner: dict[str, Any],
    every: list[dict[str, Any]],
    broken: dict[str, str],
    passing: set[str] | None,
    flaky: list[Flaky],
    options: ImportOptions,
    result: ProjectImport,
) -> None:
    """Task ``n``'s folder: the union's app, reference and specs, task n's request, and as criteria the tests
    of init and tasks 1..n — classified by the starting app's run, the flaky ones left out or marked."""
    needed = [f for f in spec_files(project, n) if f in broken]
    if needed:
        raise RuntimeError(f"{needed[0]} does not load: {broken[needed[0]]}")
    task = manifest(project, name, n)
    files = set(spec_files(project, n))
    unstable = {f.id: f for f in flaky}
    criteria, left_out, broken_on_reference = [], [], []
    for listed in every:
        if listed["spec"]["file"] not in files:
            continue
        c = dict(listed)
        if c["id"] in result.fails_on_reference:  # no solution can be checked against it: left out, recorded
            why = result.fails_on_reference[c["id"]]
            broken_on_reference.append({"id": c["id"], "file": c["spec"]["file"], "title": c["text"], "failure": why})
            continue
        by_file = c["spec"]["file"] != f"test/task-{n}.spec.js"  # init's and earlier tasks' tests: preservations
        c["preserve"] = by_file if passing is None else c["id"] in passing
        if c["preserve"] != by_file:
            c["text"] += PASSES_ALREADY if c["preserve"] else FAILS_ALREADY
        if c["id"] in unstable:
            left_out.append(unstable[c["id"]])
            if not options.include_flaky:
                continue
            f = unstable[c["id"]]
            c["text"] += FLAKY_KEPT.format(passed=f.passed, runs=f.passed + f.failed)
        criteria.append(c)
    if not any(c["spec"]["file"] == f"test/task-{n}.spec.js" for c in criteria):
        why = "lists no test"
        if left_out or broken_on_reference:
            why = "has only tests that are flaky or fail on Web-Bench's reference (see summary.md)"
        raise ValueError(f"test/task-{n}.spec.js {why}")
    if all(c["preserve"] for c in criteria):
        raise ValueError(f"the starting app already passes every test of task-{n}: nothing to change")
    folder = out / task["id"]
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(union, folder, ignore=shutil.ignore_patterns(*GENERATED_DIRS))
    (folder / "task.yaml").write_text(_yaml(task))
    write_criteria(folder, runner, criteria, flaky_note(left_out, options) + broken_note(broken_on_reference, options))
    load_task(folder)
    result.imported[n] = str(folder)
    result.criteria[n] = len(criteria)
    kept = sum(c["text"].endswith(PASSES_ALREADY) for c in criteria)
    fixed = sum(c["text"].endswith(FAILS_ALREADY) for c in criteria)
    notes = [f"{kept} task test(s) already pass: preservations"] * bool(kept)
    notes += [f"{fixed} earlier test(s) fail on the starting app: changes"] * bool(fixed)
    notes += [f"{len(left_out)} flaky test(s) " + ("kept, marked" if options.include_flaky else "left out")] * bool(
        left_out
    )
    notes += [f"{len(broken_on_reference)} test(s) failing on the reference left out"] * bool(broken_on_reference)
    result.left_out[n] = len(broken_on_reference)
    result.notes[n] = "; ".join(notes)


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


def flaky_note(flaky: list[Flaky], options: ImportOptions) -> str:
    """criteria.yaml's leading comment on the task's flaky tests: the evidence, as YAML behind ``# ``
    (:func:`flaky_recorded` reads it back); '' when there are none."""
    if not flaky:
        return ""
    how = (
        "kept as criteria, marked in their text (--include-flaky)"
        if options.include_flaky
        else "left out of the criteria (import with --include-flaky to grade them)"
    )
    head = f"Flaky on Web-Bench's own reference solution over {options.repeat} runs at import: {how}."
    body = _yaml({FLAKY_KEY: [f.as_dict() for f in flaky]})
    return "".join(f"# {line}\n" for line in [head, *body.splitlines()])


def broken_note(broken: list[dict[str, Any]], options: ImportOptions) -> str:
    """criteria.yaml's comment on the tests Web-Bench's reference failed in every run at import: left out (no
    solution could be held to them), with the failure; '' when there are none."""
    if not broken:
        return ""
    head = f"Failed on Web-Bench's own reference solution in every one of {options.repeat} run(s) at import: left out."
    body = _yaml({BROKEN_KEY: broken})
    return "".join(f"# {line}\n" for line in [head, *body.splitlines()])


def flaky_recorded(folder: Path, key: str = FLAKY_KEY) -> list[dict[str, Any]]:
    """The flaky tests a task's criteria.yaml records (left out or kept), with their evidence; with
    ``key=BROKEN_KEY``, the tests left out because the reference failed them."""
    lines = (folder / "criteria.yaml").read_text().splitlines()
    marker = f"# {key}:"
    if marker not in lines:
        return []
    block = []
    for line in lines[lines.index(marker) :]:
        if not line.startswith("#"):
            break
        block.append(line[2:])
    found: list[dict[str, Any]] = yaml.safe_load("\n".join(block))[key]
    return found


def write_criteria(folder: Path, runner: dict[str, Any], criteria: list[dict[str, Any]], note: str = "") -> None:
    (folder / "criteria.yaml").write_text(note + _yaml({"spec_runner": runner, "criteria": criteria}))


def _lines(result: ProjectImport) -> list[str]:
    """The summary's lines for one project: ``ok …`` per task, ``skip …`` with the reason."""
    if result.reason:
        return [f"skip {result.name}: {result.reason}"]
    lines = []
    for n in result.requested:
        if n in result.imported:
            note = result.notes.get(n, "")
            lines.append(f"ok   {result.name} -> {result.imported[n]}" + (f" ({note})" if note else ""))
        else:
            lines.append(f"skip {result.name} task-{n}: {result.skipped[n]}")
    for i, why in result.ungraded_on_start.items():
        lines.append(f"note {result.name} {i}: the starting app's run could not grade it (the gate will not): {why}")
    for i, why in result.fails_on_reference.items():
        lines.append(f"left out {result.name} {i}: fails on every reference run: {why}")
    for f in result.flaky:
        lines.append(
            f"flaky {result.name} {f['id']}: passed {f['passed']}, failed {f['failed']} of "
            f"{f['passed'] + f['failed']} reference runs ({'kept, marked' if f['included'] else 'left out'}); "
            f"{f['failures'][0][:200]}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m codesign.importers.webbench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("checkout", type=Path, help="a Web-Bench clone (with projects/ and libraries/)")
    parser.add_argument("out", type=Path, help="the suite folder to write (tasks.root=OUT tasks=all)")
    parser.add_argument("--projects", help="comma-separated project names (default: every importable one)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--task", type=int, help="one task of each project (default 1)")
    which.add_argument("--tasks", help="several: all, 1-20, 3,5,7-9")
    parser.add_argument("--node-cache", type=Path, default=Path("~/.cache/codesign/node_modules").expanduser())
    parser.add_argument(
        "--no-classify",
        dest="classify",
        action="store_false",
        help="do not run the starting app once to tell preservations from changes",
    )
    parser.add_argument(
        "--repeat", type=int, default=0, metavar="K", help="grade the reference K times at import (K ≥ 2: flaky tests)"
    )
    parser.add_argument("--include-flaky", action="store_true", help="keep flaky tests as criteria (marked)")
    parser.add_argument(
        "--workers",
        type=int,
        default=WORKERS,
        help=f"Playwright runners at once on the starting app (default {WORKERS})",
    )
    parser.add_argument(
        "--reference-workers",
        type=int,
        default=REFERENCE_WORKERS,
        help=f"runners at once on the reference (default {REFERENCE_WORKERS})",
    )
    parser.add_argument(
        "--rerun-workers",
        type=int,
        default=RERUN_WORKERS,
        help=f"tests that waited for a missing element, run again at once after a timeout (the tasks' "
        f"spec_runner.rerun_workers; default {RERUN_WORKERS}; other timeouts are run again alone)",
    )
    parser.add_argument(
        "--test-timeout",
        type=float,
        default=TEST_TIMEOUT_S,
        help=f"seconds a test may take (default {TEST_TIMEOUT_S:g}; Web-Bench's evaluation: 30)",
    )
    parser.add_argument(
        "--expect-timeout",
        type=float,
        default=EXPECT_TIMEOUT_S,
        help=f"seconds an expect() may wait (default {EXPECT_TIMEOUT_S:g}; Web-Bench's: 5)",
    )
    parser.add_argument("--jobs", type=int, default=3, help="projects imported at once (default 3)")
    parser.add_argument(
        "--gate",
        action="store_true",
        help="the gate on every imported task, judged on the import's own runs (the reference graded at least once)",
    )
    parser.add_argument(
        "--fresh-gate",
        action="store_true",
        help="with --gate: the gate grades both apps again (a second sample, twice the runs)",
    )
    parser.add_argument("--inline", action="store_true", help="the gate without Ray (--gate)")
    parser.add_argument("--gate-jobs", type=int, help="projects gated at once (--gate; default: half a CPU each)")
    args = parser.parse_args(argv)
    root = args.checkout / "projects"
    if not root.is_dir():
        print(f"{args.checkout} has no projects/ folder: point it at a Web-Bench clone", file=sys.stderr)
        return 2
    try:
        numbers = parse_tasks(args.tasks) if args.tasks else [args.task or 1]
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    if args.repeat < 0 or min(args.workers, args.reference_workers, args.rerun_workers) < 1:
        print("--repeat takes K ≥ 0, --workers, --reference-workers and --rerun-workers N ≥ 1", file=sys.stderr)
        return 2
    options = ImportOptions(
        args.node_cache,
        args.classify,
        max(args.repeat, 1) if args.gate and not args.fresh_gate else args.repeat,  # the gate's solvability
        args.include_flaky,
        args.workers,
        args.reference_workers,
        args.rerun_workers,
        args.test_timeout,
        args.expect_timeout,
    )
    names = args.projects.split(",") if args.projects else sorted(p.name for p in root.iterdir() if p.is_dir())
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    results: list[ProjectImport] = []
    gate = None
    if args.gate:  # each project gated as soon as it is imported, beside the imports still running
        from codesign.importers.webbench_gate import SuiteGate

        # The gate judges the reference over as many runs as the import graded (a task gated afresh: as many).
        gate = SuiteGate(args.out, workers=args.workers, repeat=max(1, args.repeat), on_ray=not args.inline,
                         node_cache=args.node_cache, at_once=args.gate_jobs)  # fmt: skip
        # Which runs the gate judges: the import's (its starting app graded once, the reference K times), or
        # its own, graded again (--fresh-gate, or a project imported without them: gated as validate does).
        gate.options["runs"] = "fresh" if args.fresh_gate else "the import's, where it has them"
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:  # installs wait on the network, runs on the browser
        running = {pool.submit(import_project, args.checkout, name, args.out, numbers, options) for name in names}
        while running:
            # A gate decided while imports still run is recorded within a minute, not when the next import ends.
            finished, running = wait(running, timeout=60, return_when=FIRST_COMPLETED)
            for future in finished:
                result = future.result()
                results.append(result)
                for line in _lines(result):
                    print(line, flush=True)
                record_import(args.out, [result], options, numbers, time.monotonic() - start)  # kept if interrupted
                if gate is not None and result.gated is not None and not args.fresh_gate:  # the import's runs
                    gate.submit_decided([Path(f) for f in result.imported.values()], result.gated)
                elif gate is not None:
                    gate.submit([Path(f) for f in result.imported.values()])
            if gate is not None:
                gate.collect()
    imported = sum(len(r.imported) for r in results)
    skipped = sum(1 for r in results if r.reason) + sum(len(r.skipped) for r in results if not r.reason)
    flaky = sum(len(r.flaky) for r in results)
    wall = time.monotonic() - start
    flaky_note_text = f", {flaky} flaky test(s) on the reference" if flaky else ""
    print(f"{imported} imported, {skipped} skipped{flaky_note_text} in {wall:.0f} s; summary: {args.out / SUMMARY_MD}")
    if gate is not None:
        reports = gate.finish()
        return 0 if imported and len(reports) == imported and all(r.ok for r in reports) else 1  # each one gated
    if not imported:
        return 1
    print(f"next: python -m codesign.importers.webbench_gate {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
