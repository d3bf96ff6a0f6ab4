"""Web-Bench projects as codesign tasks: ``python -m codesign.importers.webbench CHECKOUT OUT``.

Web-Bench (Apache-2.0) ships projects of 20 cumulative tasks, each checked by Playwright spec files. For task
N (default 1) of each selected project this writes one task folder ``wb-<project>-task-<N>``:

- ``app/``: the starting app. A project served as static files (``npx serve``) is ``src-init/`` itself
  (plus the project's ``assets/``, which Web-Bench copies in). A project served by Vite keeps Web-Bench's
  layout — the project root with its Vite config and ``src/`` = ``src-init/`` — with a generated
  ``package.json`` (the test-only dependencies dropped, since Web-Bench resolves its test-util as a
  ``workspace:*`` package) and a lockfile resolved by ``npm`` at import time, so every trial installs the same
  versions; codesign serves it with its Vite dev server, as Web-Bench's own evaluation does.
- ``task.yaml``: the task's description as the request (tasks 1..N's, in order, for N > 1: the app is
  ``src-init``); track RE, one edit type (Web-Bench tasks are functional changes to an existing code
  base); routes are the starting app's HTML pages.
- ``solution/solution.patch``: ``src-init`` → ``src`` (Web-Bench's reference after all tasks, which
  passes every earlier task's specs since grading is cumulative).
- ``specs/``: the project's ``test/`` folder and config, its test-util library kept as a local package
  (``spec_runner.packages``, so ``require`` and ES ``import`` both find it) and a pinned ``@playwright/test``
  with a lockfile; ``criteria.yaml`` has one criterion per test of ``init.spec.js`` and of
  ``task-1..N.spec.js``, listed by ``playwright test --list`` — never by parsing JavaScript. Which of them
  are changes is decided by running them once on the unchanged app at import: a test it passes is a
  preservation (it must keep passing), a test it fails is a change (the solution must make it pass — for
  task N's tests, and for the odd earlier test the starting app does not pass, e.g. an ``init`` test that
  needs CSS ``src-init`` lacks). ``--no-classify`` skips that run: ``init`` and earlier tasks' tests are
  then preservations, task N's the changes.

Projects that need what codesign does not run (a database or full-stack server, a bundler task, files
checked by a compiler with no page) are skipped with the reason. Nothing of Web-Bench is shipped with
codesign; point CHECKOUT at your own clone.
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from codesign.sandbox.dependencies import cached_node_modules, failure_excerpt, link_node_modules
from codesign.tasks.loader import load_task

RUNNER = Path(__file__).with_name("webbench_runner")  # package.json + lockfile pinning @playwright/test
UTIL = "@web-bench/test-util"
LIBRARY_PATH = re.compile(r"(['\"])(?:\.\./)+libraries/test-util(?:/src)?(?:/index(?:\.js)?)?\1")
PASSES_ALREADY = " (already true of the starting app: kept as a preservation)"
FAILS_ALREADY = " (the starting app fails this earlier test: the solution must make it pass)"
PACKAGES = {UTIL: "libraries/test-util"}  # spec_runner.packages: test-util linked into node_modules
TEST_ONLY = {UTIL, "@playwright/test", "serve"}  # the app's dependencies the app itself never uses
NOT_APP = {"test", "test-utils", "src", "src-init", "assets", "tasks.jsonl", "tasks.yml", "readme.md",
           "playwright.config.js", "package.json", ".evalignore", "node_modules"}  # fmt: skip
# Web-Bench's solver sees only the sources folder; here it sees the project around it, so say where paths start.
SOURCES_NOTE = "\n\n(The app's sources are in src/: file paths in this request are relative to src/.)"
VITE_SERVE = "EVAL=1 node_modules/.bin/vite --port {port} --host 127.0.0.1 --strictPort"  # EVAL=1: no file watcher


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
    vite = layout(project) == "vite"
    if vite:  # Web-Bench runs the specs inside the project: they may import its packages (e.g. sass)
        app_deps = _dependencies(app_package(project, name))
        runner_package["devDependencies"] = {**app_deps, **runner_package["devDependencies"]}
        (specs / "package-lock.json").unlink()
    (specs / "package.json").write_text(json.dumps(runner_package, indent=2) + "\n")
    if vite:
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


def spec_criteria(folder: Path, project: Path, n: int, node_cache: Path) -> list[dict[str, Any]]:
    """One criterion per test of init and tasks 1..n (task n's are the changes)."""
    files = [
        f"test/{f}"
        for f in ["init.spec.js", *(f"task-{k}.spec.js" for k in range(1, n + 1))]
        if (project / "test" / f).is_file()
    ]
    sources = folder / "app" / ("src" if layout(project) == "vite" else "")
    criteria: list[dict[str, Any]] = []
    for file, title in list_tests(folder / "specs", files, PACKAGES, sources, node_cache):
        change = file == f"test/task-{n}.spec.js"
        criteria.append(
            {
                "id": f"{Path(file).name.removesuffix('.spec.js')}-{_slug(title)}",
                "text": title,
                "kind": "interaction",
                "preserve": not change,
                "spec": {"file": file, "title": title},
            }
        )
    if not any(not c["preserve"] for c in criteria):
        raise ValueError(f"test/task-{n}.spec.js lists no test")
    ids = [c["id"] for c in criteria]
    for i, c in enumerate(criteria):  # two tests with one slug keep apart
        if ids.count(c["id"]) > 1:
            c["id"] += f"-{i}"
    return criteria


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


def import_project(checkout: Path, name: str, out: Path, n: int, node_cache: Path, classify: bool = True) -> Path:
    project = checkout / "projects" / name
    task = manifest(project, name, n)
    folder = out / task["id"]
    if folder.exists():
        shutil.rmtree(folder)
    write_app(project, name, folder / "app", project / "src-init")
    if layout(project) == "vite":
        lock(folder / "app")
    with tempfile.TemporaryDirectory() as tmp:  # the reference: the same app with src/ as its sources
        final = Path(tmp) / "app"
        write_app(project, name, final, project / "src")
        for resolved in ("package-lock.json", ".npmrc"):
            if (folder / "app" / resolved).is_file():
                shutil.copy2(folder / "app" / resolved, final / resolved)
        (folder / "solution").mkdir()
        (folder / "solution" / "solution.patch").write_text(reference_patch(folder / "app", final))
    write_specs(checkout, project, name, folder / "specs")
    root = "{workspace}/src" if layout(project) == "vite" else "{workspace}"  # Web-Bench's EVAL_PROJECT_ROOT
    runner = {
        "dir": "specs",
        "config": "playwright.config.js",
        "timeout_s": 30,
        "env": {"EVAL_PROJECT_ROOT": root, "IS_EVAL_PRODUCTION": "true"},
        "packages": PACKAGES,
    }
    criteria = spec_criteria(folder, project, n, node_cache)
    (folder / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False, allow_unicode=True, width=110))
    write_criteria(folder, runner, criteria)
    load_task(folder)  # the result must be a valid codesign task
    if classify:
        already = asyncio.run(passing_on_baseline(folder, node_cache))
        for c in criteria:  # what the starting app passes must keep passing; what it fails must be made to pass
            if c["preserve"] != (c["id"] in already):
                c["preserve"] = c["id"] in already
                c["text"] += PASSES_ALREADY if c["preserve"] else FAILS_ALREADY
        write_criteria(folder, runner, criteria)
        if all(c["preserve"] for c in criteria):
            raise ValueError(f"the starting app already passes every test of task-{n}: nothing to change")
    return folder


def write_criteria(folder: Path, runner: dict[str, Any], criteria: list[dict[str, Any]]) -> None:
    (folder / "criteria.yaml").write_text(
        yaml.safe_dump({"spec_runner": runner, "criteria": criteria}, sort_keys=False, allow_unicode=True, width=110)
    )


async def passing_on_baseline(folder: Path, node_cache: Path) -> set[str]:
    """Ids of the task's criteria the unmodified app passes, from one evaluation of the empty patch (an
    authoring tool, like the gate, may use the evaluator; the loader-side code above does not)."""
    from codesign.evaluate.evaluators import ProbeEvaluator
    from codesign.evaluate.run import evaluate_patch
    from codesign.runtime.browser import Browser

    task = load_task(folder)
    browser = Browser(os.environ.get("CODESIGN_CHROMIUM"))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            baseline = await evaluate_patch(task, "", ProbeEvaluator(), browser, Path(tmp), node_cache)
    finally:
        await browser.close()
    if baseline.message and all(v.failure_category == "build_failed" for v in baseline.verdicts):
        raise RuntimeError(f"the starting app does not build: {baseline.message[:500]}")
    return {v.criterion_id for v in baseline.verdicts if v.verdict == "PASS"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codesign.importers.webbench", description=__doc__)
    parser.add_argument("checkout", type=Path, help="a Web-Bench clone (with projects/ and libraries/)")
    parser.add_argument("out", type=Path, help="the suite folder to write (tasks.root=OUT tasks=all)")
    parser.add_argument("--projects", help="comma-separated project names (default: every importable one)")
    parser.add_argument("--task", type=int, default=1, help="which task of each project (default 1)")
    parser.add_argument("--node-cache", type=Path, default=Path("~/.cache/codesign/node_modules").expanduser())
    parser.add_argument(
        "--no-classify",
        dest="classify",
        action="store_false",
        help="do not run the starting app once to tell preservations from changes",
    )
    parser.add_argument("--jobs", type=int, default=3, help="projects imported at once (default 3)")
    args = parser.parse_args(argv)
    root = args.checkout / "projects"
    if not root.is_dir():
        print(f"{args.checkout} has no projects/ folder: point it at a Web-Bench clone", file=sys.stderr)
        return 2
    names = args.projects.split(",") if args.projects else sorted(p.name for p in root.iterdir() if p.is_dir())
    args.out.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> str:
        """One line of the summary: ``ok …`` or ``skip …`` with the reason."""
        reason = why_not(root / name) if (root / name / "package.json").is_file() else "not a project"
        if reason:
            return f"skip {name}: {reason}"
        try:
            folder = import_project(args.checkout, name, args.out, args.task, args.node_cache, args.classify)
        except Exception as e:
            shutil.rmtree(args.out / f"wb-{name}-task-{args.task}", ignore_errors=True)  # no half-written task
            return f"skip {name}: {type(e).__name__}: {e}"
        criteria = load_task(folder).criteria
        kept = sum(c.text.endswith(PASSES_ALREADY) for c in criteria)
        fixed = sum(c.text.endswith(FAILS_ALREADY) for c in criteria)
        notes = [f"{kept} task test(s) already pass: preservations"] * bool(kept)
        notes += [f"{fixed} earlier test(s) fail on the starting app: changes"] * bool(fixed)
        return f"ok   {name} -> {folder}" + (f" ({'; '.join(notes)})" if notes else "")

    imported, skipped = 0, 0
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:  # installs wait on the network, runs on the browser
        for line in pool.map(one, names):
            imported += line.startswith("ok")
            skipped += line.startswith("skip")
            print(line, flush=True)
    print(f"{imported} imported, {skipped} skipped; next: python -m codesign.validate tasks=all tasks.root={args.out}")
    return 0 if imported else 1


if __name__ == "__main__":
    sys.exit(main())
