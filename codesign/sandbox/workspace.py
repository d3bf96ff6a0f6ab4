"""Workspaces: fresh copies of a task's app, their diff against the baseline, and patch application.

The baseline is tracked by a git directory *outside* the workspace, so the solver never sees a
``.git`` it could mine, and the final state is always a patch: what is stored, what is graded,
and what an evaluator sweep re-materializes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from codesign.errors import EnvironmentSetupError

# Generated trees never enter a diff; node_modules is restored from the cache instead.
DIFF_IGNORE = ("node_modules/", "dist/", ".vite/", "__pycache__/", "*.pyc", ".DS_Store", "/_attachments/")
_GIT_ID = ["-c", "user.name=codesign", "-c", "user.email=codesign@localhost", "-c", "commit.gpgsign=false"]


class PatchError(Exception):
    """A patch does not apply to the baseline; the message is git's own explanation."""


def _git(
    args: list[str],
    *,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CEILING_DIRECTORIES"] = str(Path(cwd or work_tree or ".").resolve().parent)
    if git_dir is not None:
        env["GIT_DIR"] = str(git_dir)
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
    return subprocess.run(
        ["git", *_GIT_ID, *args], cwd=cwd or work_tree, env=env, input=stdin, capture_output=True, text=True
    )


def copy_tree(src: Path, dst: Path, skip: tuple[str, ...] = ("node_modules", "dist", ".vite")) -> None:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*skip), symlinks=True, dirs_exist_ok=True)


class Baseline:
    """A snapshot of a workspace's starting state, kept in ``git_dir`` beside (not inside) it."""

    def __init__(self, git_dir: Path, work_tree: Path, ignore: list[str] | None = None):
        self.git_dir, self.work_tree = Path(git_dir), Path(work_tree)
        self.ignore = [*DIFF_IGNORE, *(ignore or [])]

    def snapshot(self) -> None:
        self._check(_git(["init", "-q", "--bare", str(self.git_dir)], cwd=self.work_tree))
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "exclude").write_text("\n".join(self.ignore) + "\n")
        self._run(["add", "-A"])
        self._run(["commit", "-q", "--allow-empty", "--no-verify", "-m", "baseline"])

    def diff(self) -> str:
        """The workspace's changes since the snapshot, as a binary-safe unified diff (paths a/ b/)."""
        self._run(["add", "-A"])
        return self._run(["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "HEAD"]).stdout

    def _run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return self._check(_git(args, git_dir=self.git_dir, work_tree=self.work_tree))

    @staticmethod
    def _check(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
        if proc.returncode != 0:
            raise EnvironmentSetupError(f"git failed: {proc.stderr.strip()}", "is git installed and on PATH?")
        return proc


def apply_patch(directory: Path, patch: str) -> None:
    """Apply a unified diff to ``directory`` atomically: either every hunk applies or nothing changes."""
    if not patch.strip():
        return
    proc = _git(["apply", "--whitespace=nowarn", "--binary", "-"], cwd=Path(directory), stdin=patch)
    if proc.returncode != 0:
        raise PatchError(proc.stderr.strip() or "git apply failed")


def changed_files(patch: str) -> list[str]:
    return [line.split(" b/", 1)[1] for line in patch.splitlines() if line.startswith("diff --git a/")]


# --- node_modules cache ------------------------------------------------------------------------------


def lockfile_key(app_dir: Path) -> str | None:
    """Cache key for an app's dependencies: what is installed, not what the app is called.

    The root package's own name and version are left out, so apps with identical dependency trees
    share one installed copy. None when there is no package.json.
    """
    manifest = app_dir / "package.json"
    if not manifest.is_file():
        return None
    pkg = json.loads(manifest.read_text())
    deps = {k: pkg.get(k) for k in ("dependencies", "devDependencies", "optionalDependencies", "overrides")}
    lock_path = app_dir / "package-lock.json"
    lock = json.loads(lock_path.read_text()) if lock_path.is_file() else {}
    packages = {k: v for k, v in lock.get("packages", {}).items() if k != ""}
    blob = json.dumps([deps, lock.get("lockfileVersion"), packages], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def cached_node_modules(app_dir: Path, cache_root: Path, install: str, timeout_s: float = 600) -> Path:
    """Install an app's dependencies once per lockfile and return the cached ``node_modules``.

    Concurrent workers serialize on a file lock; the install happens in a scratch folder and is
    renamed into place, so a killed install never leaves a half-filled cache entry.
    """
    key = lockfile_key(app_dir)
    if key is None:
        raise EnvironmentSetupError(f"{app_dir}/package.json is missing", "node apps need a package.json")
    entry = cache_root / key
    target = entry / "node_modules"
    if target.is_dir():
        return target
    cache_root.mkdir(parents=True, exist_ok=True)
    with open(cache_root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        scratch = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=cache_root))
        for name in ("package.json", "package-lock.json", ".npmrc"):
            if (app_dir / name).is_file():
                shutil.copy2(app_dir / name, scratch / name)
        proc = subprocess.run(
            ["bash", "-c", install],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )
        if proc.returncode != 0 or not (scratch / "node_modules").is_dir():
            shutil.rmtree(scratch, ignore_errors=True)
            raise EnvironmentSetupError(
                f"dependency install `{install}` failed in {app_dir}:\n{(proc.stdout + proc.stderr)[-2000:]}",
                "check that the npm registry is reachable and the lockfile is valid",
            )
        os.replace(scratch, entry)
    return target


def hydrate_node_modules(workspace: Path, cached: Path, hardlink: bool) -> None:
    """Give a workspace its dependencies: hard links for read-only use (evaluation builds),
    real copies where a solver could write into them (a write through a hard link would corrupt the cache)."""
    dest = workspace / "node_modules"
    if dest.exists():
        shutil.rmtree(dest)
    if hardlink:
        shutil.copytree(cached, dest, symlinks=True, copy_function=os.link)
    else:
        shutil.copytree(cached, dest, symlinks=True)
