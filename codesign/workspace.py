"""Workspaces: fresh copies of a task's app, their diff against the baseline, and patch application.

The baseline is tracked by a git directory *outside* the workspace, so the solver never sees a
``.git`` it could mine, and the final state is always a patch: what is stored, what is graded,
and what an evaluator sweep re-materializes.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import subprocess
import tempfile
import threading
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


COPY_SKIP = ("node_modules", "dist", ".vite")  # generated trees a workspace gets from the cache or a build


def copy_tree(src: Path, dst: Path, skip: tuple[str, ...] = COPY_SKIP) -> None:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*skip), symlinks=True, dirs_exist_ok=True)


def state_hash(src: Path, skip: tuple[str, ...] = COPY_SKIP) -> str:
    """What :func:`copy_tree` of ``src`` puts in a workspace, as git would snapshot it: each path, whether it is
    a symlink (and to what) or a file (its bytes and executable bit). Copies with one state hash share one
    baseline snapshot (:class:`Baselines`), whichever task they came from."""
    h = hashlib.sha256()
    ignored = shutil.ignore_patterns(*skip)

    def walk(folder: str, rel: str) -> None:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
        left_out = ignored(folder, [e.name for e in entries])
        for e in entries:
            if e.name in left_out:
                continue
            name = f"{rel}{e.name}".encode()
            if e.is_symlink():
                h.update(b"L\0" + name + b"\0" + os.readlink(e.path).encode() + b"\0")
            elif e.is_dir():
                walk(e.path, f"{rel}{e.name}/")
            else:
                executable = b"x" if e.stat().st_mode & 0o111 else b"-"
                with open(e.path, "rb") as f:
                    h.update(b"F" + executable + b"\0" + name + b"\0" + hashlib.sha256(f.read()).digest())

    walk(str(src), "")
    return h.hexdigest()


class Baselines:
    """Baseline snapshots shared by the workspaces that start from one state, in this process: the first
    workspace of a state (a task's app) is hashed into ``root``; the others only point at those objects and
    that tree. A trial then runs two git processes (``add``, ``diff``) instead of five — measured: git's
    processes were ~15 of a trivial trial's ~70 ms of CPU. ``root`` is the caller's to remove."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._trees: dict[str, tuple[Path, str]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def tree(self, state: str, work_tree: Path, ignore: list[str]) -> tuple[Path, str]:
        """The objects folder and tree of ``state`` (hashed from ``work_tree`` the first time it is asked for)."""
        state = "\0".join([state, *ignore])  # what the snapshot leaves out decides its tree too
        with self._guard:
            lock = self._locks.setdefault(state, threading.Lock())
        with lock:  # a second trial of this state waits for the first one's snapshot, never hashes its own
            if state not in self._trees:
                git_dir = Path(tempfile.mkdtemp(suffix=".git", dir=self.root))
                try:
                    _init(git_dir, ignore)
                    _checked(_git(["add", "-A"], git_dir=git_dir, work_tree=work_tree))
                    tree = _checked(_git(["write-tree"], git_dir=git_dir, work_tree=work_tree)).stdout.strip()
                except BaseException:
                    shutil.rmtree(git_dir, ignore_errors=True)
                    raise
                self._trees[state] = (git_dir / "objects", tree)
            return self._trees[state]


class Baseline:
    """A snapshot of a workspace's starting state, kept in ``git_dir`` beside (not inside) it."""

    def __init__(self, git_dir: Path, work_tree: Path, ignore: list[str] | None = None):
        self.git_dir, self.work_tree = Path(git_dir), Path(work_tree)
        self.ignore = [*DIFF_IGNORE, *(ignore or [])]
        self.tree = ""

    def snapshot(self, shared: Baselines | None = None, state: str = "") -> None:
        """Record the workspace as it is. With ``shared`` and a ``state`` naming exactly what the workspace
        holds (its content hash), a state snapshotted before in this process is not hashed again."""
        if shared is not None and state:
            objects, self.tree = shared.tree(state, self.work_tree, self.ignore)
            _init(self.git_dir, self.ignore, alternates=objects)
            return
        _init(self.git_dir, self.ignore)
        self._git(["add", "-A"])
        self.tree = self._git(["write-tree"]).stdout.strip()

    def diff(self) -> str:
        """The workspace's changes since the snapshot, as a binary-safe unified diff (paths a/ b/)."""
        self._git(["add", "-A"])
        return self._git(["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", self.tree]).stdout

    def _git(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return _checked(_git(args, git_dir=self.git_dir, work_tree=self.work_tree))


def _init(git_dir: Path, ignore: list[str], alternates: Path | None = None) -> None:
    """An empty bare repository, written directly (``git init`` is a process and copies its templates): what
    git needs to see one — HEAD, objects, refs — plus the ignore list, and objects to borrow from."""
    (git_dir / "objects" / "info").mkdir(parents=True)
    (git_dir / "refs").mkdir()
    (git_dir / "info").mkdir()
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    (git_dir / "info" / "exclude").write_text("\n".join(ignore) + "\n")
    if alternates is not None:
        (git_dir / "objects" / "info" / "alternates").write_text(f"{alternates.resolve()}\n")


def _checked(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    if proc.returncode != 0:
        raise EnvironmentSetupError(f"git failed: {proc.stderr.strip()}", "is git installed and on PATH?")
    return proc


def remove_escaping_symlinks(root: Path, skip: tuple[str, ...] = ("node_modules",)) -> list[str]:
    """Remove symlinks under ``root`` that resolve outside it (a candidate's link to a host file); returns
    them as ``path -> target`` lines, to be recorded as evidence."""
    root = Path(root).resolve()
    removed = []
    for path in sorted(root.rglob("*")):
        if not path.is_symlink() or any(part in skip for part in path.relative_to(root).parts):
            continue
        target = path.resolve()
        if target != root and root not in target.parents:
            removed.append(f"{path.relative_to(root)} -> {os.readlink(path)}")
            path.unlink()
    return removed


def apply_patch(directory: Path, patch: str, strip: int = 1) -> None:
    """Apply a unified diff to ``directory`` atomically: either every hunk applies or nothing changes.
    ``strip`` leading path components are removed (1 for ``a/…`` ``b/…`` paths, 0 for bare ones)."""
    if not patch.strip():
        return
    proc = _git(["apply", "--whitespace=nowarn", "--binary", f"-p{strip}", "-"], cwd=Path(directory), stdin=patch)
    if proc.returncode != 0:
        raise PatchError(proc.stderr.strip() or "git apply failed")


def changed_files(patch: str) -> list[str]:
    """The paths a diff touches: from ``diff --git`` headers, else from the ``---``/``+++`` lines of a plain
    unified diff (``/dev/null`` on one side for a created or deleted file; ``a/``/``b/`` prefixes removed)."""
    lines = patch.splitlines()
    git_paths = [line.split(" b/", 1)[1] for line in lines if line.startswith("diff --git a/")]
    if git_paths:
        return git_paths
    paths = []
    for old, new in itertools.pairwise(lines):
        if old.startswith("--- ") and new.startswith("+++ "):
            names = [side[4:].split("\t")[0].strip() for side in (old, new)]
            name = names[1] if names[1] != "/dev/null" else names[0]
            paths.append(name[2:] if plain_diff_strip(patch) == 1 else name)
    return paths


def plain_diff_strip(patch: str) -> int:
    """1 when a plain unified diff names its files ``a/…`` and ``b/…`` (git's style), else 0 (bare paths)."""
    names = [line[4:].split("\t")[0].strip() for line in patch.splitlines() if line.startswith(("--- ", "+++ "))]
    names = [n for n in names if n != "/dev/null"]
    return 1 if names and all(n.startswith(("a/", "b/")) for n in names) else 0
