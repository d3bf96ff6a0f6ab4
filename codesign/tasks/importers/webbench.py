"""Web-Bench projects as codesign tasks: ``python -m codesign.tasks.importers.webbench CHECKOUT OUT``.

Web-Bench (Apache-2.0) ships projects of 20 cumulative tasks, each checked by Playwright spec files. For task
N (default 1) of each selected project this writes one task folder ``wb-<project>-task-<N>``:

- ``app/``: the starting app, ``src-init/`` (plus the project's ``assets/``, which Web-Bench copies in);
- ``task.yaml``: the task's description as the request (track RE, one edit type: Web-Bench tasks are
  functional changes to an existing code base);
- ``solution/solution.patch``: ``src-init`` → ``src`` (Web-Bench's reference after all tasks, which
  passes every earlier task's specs since grading is cumulative);
- ``specs/``: the project's ``test/`` folder and config, its test-util library vendored (resolved
  through ``NODE_PATH``) and a pinned ``@playwright/test`` with a lockfile; ``criteria.yaml`` has one
  criterion per test of ``init.spec.js`` (preservations: the starting app passes them) and of
  ``task-1..N.spec.js`` (earlier tasks' tests are preservations too; task N's are the changes), listed by
  ``playwright test --list`` — never by parsing JavaScript.

Only projects served as static files (``npx serve``) are imported; the others are skipped with the reason
(a Vite dev server, a database, a bundler task): codesign serves apps itself. Nothing of Web-Bench is
shipped with codesign; point CHECKOUT at your own clone.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from codesign.sandbox.dependencies import cached_node_modules
from codesign.tasks.loader import load_task

RUNNER = Path(__file__).with_name("webbench_runner")  # package.json + lockfile pinning @playwright/test
UTIL = "@web-bench/test-util"


def read_tasks(project: Path) -> list[dict[str, Any]]:
    if (project / "tasks.jsonl").is_file():
        lines = (project / "tasks.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]
    return [{**t, "date": str(t.get("date"))} for t in yaml.safe_load((project / "tasks.yml").read_text())]


def why_not(project: Path) -> str | None:
    """None when codesign can import the project, else why not."""
    package = json.loads((project / "package.json").read_text())
    if not (package.get("eval") or {}).get("stable"):
        return "not marked stable by Web-Bench"
    config = (project / "playwright.config.js").read_text()
    command = re.search(r"command:\s*[`'\"]([^`'\"]*)", config)
    served = command.group(1) if command else "?"
    if "npx serve" not in served:
        return f"served by `{served}` — only static projects (npx serve) are imported"
    if not (project / "src-init").is_dir() or not (project / "src").is_dir():
        return "no src-init/ and src/"
    return None


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
        return subprocess.run([*git, "diff", "--cached", "--binary", "--no-color", "HEAD"], cwd=repo, check=True,
                              capture_output=True, text=True).stdout  # fmt: skip


def list_tests(specs: Path, files: list[str], node_cache: Path) -> list[tuple[str, str]]:
    """(file relative to the spec folder, title path) of every test in ``files``, from ``playwright --list``."""
    modules = cached_node_modules(specs, node_cache)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "specs"
        shutil.copytree(specs, work)
        (work / "node_modules").symlink_to(modules, target_is_directory=True)
        cli = work / "node_modules" / "@playwright" / "test" / "cli.js"
        env = {"PATH": "/usr/bin:/bin", "NODE_PATH": str(work / "libraries"), "IS_EVAL_PRODUCTION": "true",
               "EVAL_PROJECT_ROOT": str(work), "HOME": tmp}  # fmt: skip
        proc = subprocess.run(["node", str(cli), "test", "--list", "--reporter=json", *files], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        try:
            report = json.loads(proc.stdout)
        except ValueError:
            raise RuntimeError(f"playwright --list failed: {(proc.stdout + proc.stderr)[-1500:]}") from None
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


def import_project(checkout: Path, name: str, out: Path, n: int, node_cache: Path) -> Path:
    project = checkout / "projects" / name
    task = next((t for t in read_tasks(project) if t["id"] == f"task-{n}"), None)
    if task is None:
        raise ValueError(f"{name} has no task-{n}")
    folder = out / f"wb-{name}-task-{n}"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(project / "src-init", folder / "app")
    if (project / "assets").is_dir():
        shutil.copytree(project / "assets", folder / "app" / "assets", dirs_exist_ok=True)
    (folder / "solution").mkdir()
    (folder / "solution" / "solution.patch").write_text(reference_patch(project / "src-init", project / "src"))
    specs = folder / "specs"
    shutil.copytree(RUNNER, specs)
    shutil.copytree(project / "test", specs / "test")
    shutil.copy2(project / "playwright.config.js", specs / "playwright.config.js")
    util = checkout / "libraries" / "test-util"
    (specs / "libraries" / UTIL).mkdir(parents=True)
    shutil.copy2(util / "package.json", specs / "libraries" / UTIL / "package.json")
    shutil.copytree(util / "src", specs / "libraries" / UTIL / "src")
    files = [f"test/{f}" for f in ["init.spec.js", *(f"task-{k}.spec.js" for k in range(1, n + 1))]
             if (project / "test" / f).is_file()]  # fmt: skip
    criteria = []
    for file, title in list_tests(specs, files, node_cache):
        change = file == f"test/task-{n}.spec.js"
        criteria.append({"id": f"{Path(file).name.removesuffix('.spec.js')}-{_slug(title)}", "text": title,
                         "kind": "interaction", "preserve": not change,
                         "spec": {"file": file, "title": title}})  # fmt: skip
    ids = [c["id"] for c in criteria]
    for i, c in enumerate(criteria):  # two tests with one slug keep apart
        if ids.count(c["id"]) > 1:
            c["id"] += f"-{i}"
    runner = {"dir": "specs", "config": "playwright.config.js", "timeout_s": 30,
              "env": {"EVAL_PROJECT_ROOT": "{workspace}", "NODE_PATH": "{specs}/libraries",
                      "IS_EVAL_PRODUCTION": "true"}}  # fmt: skip
    (folder / "criteria.yaml").write_text(yaml.safe_dump({"spec_runner": runner, "criteria": criteria},
                                                         sort_keys=False, allow_unicode=True, width=110))  # fmt: skip
    manifest = {"id": folder.name, "track": "RE", "title": f"Web-Bench {name}, task {n}",
                "request": task["description"].strip(), "environment": {"kind": "static", "routes": ["/"]},
                "labels": {"capability": ["functional_implementation"], "categories": ["web-bench", name],
                           "edit_types": ["component"]}}  # fmt: skip
    (folder / "task.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True, width=110))
    load_task(folder)  # the result must be a valid codesign task
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codesign.tasks.importers.webbench", description=__doc__)
    parser.add_argument("checkout", type=Path, help="a Web-Bench clone (with projects/ and libraries/)")
    parser.add_argument("out", type=Path, help="the suite folder to write (tasks.root=OUT tasks=all)")
    parser.add_argument("--projects", help="comma-separated project names (default: every importable one)")
    parser.add_argument("--task", type=int, default=1, help="which task of each project (default 1)")
    parser.add_argument("--node-cache", type=Path, default=Path("~/.cache/codesign/node_modules").expanduser())
    args = parser.parse_args(argv)
    root = args.checkout / "projects"
    if not root.is_dir():
        print(f"{args.checkout} has no projects/ folder: point it at a Web-Bench clone", file=sys.stderr)
        return 2
    names = args.projects.split(",") if args.projects else sorted(p.name for p in root.iterdir() if p.is_dir())
    args.out.mkdir(parents=True, exist_ok=True)
    imported, skipped = 0, 0
    for name in names:
        reason = why_not(root / name) if (root / name / "package.json").is_file() else "not a project"
        if reason:
            skipped += 1
            print(f"skip {name}: {reason}")
            continue
        try:
            folder = import_project(args.checkout, name, args.out, args.task, args.node_cache)
        except Exception as e:
            skipped += 1
            print(f"skip {name}: {type(e).__name__}: {e}")
            continue
        imported += 1
        print(f"ok   {name} -> {folder}")
    print(f"{imported} imported, {skipped} skipped; next: python -m codesign.validate tasks=all tasks.root={args.out}")
    return 0 if imported else 1


if __name__ == "__main__":
    sys.exit(main())
