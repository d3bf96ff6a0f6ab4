"""The app as it was when a query was asked (the bundle B), and the environment E it runs in.

A git workspace is read at the commit named, or at its branch's last commit before the query; a folder is
copied; an archive is unpacked (no entry may land outside it). Files the session itself changed are then set
to what they were at the query, from the transcript: a file edited at or after the query was, at the query,
what its first such edit found (``originalFile``); one edited only before the query was what its last edit
left. So uncommitted work of the session is recovered too. Scripted repairs (each recorded on the draft) run
before the gate; what cannot be recovered raises :class:`Unrecoverable` with its reason.
"""

from __future__ import annotations

import difflib
import io
import json
import re
import shutil
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from codesign.curate.records import Query
from codesign.workspace import copy_tree

BACKEND_PACKAGES = ["firebase", "firebase-admin", "@supabase/supabase-js", "aws-amplify", "@aws-amplify/*",
                    "@auth0/*", "next-auth", "@clerk/*", "@stripe/stripe-js", "stripe", "@google-cloud/*",
                    "mongodb", "mongoose", "pg", "mysql2", "@prisma/client", "@planetscale/database",
                    "@vercel/postgres", "openai", "@anthropic-ai/sdk"]  # fmt: skip
SECRET_ENV = re.compile(r"(process\.env|import\.meta\.env)\.(\w*(KEY|TOKEN|SECRET|PASSWORD)\w*)")
SOURCE_SUFFIXES = {".js", ".jsx", ".ts", ".tsx", ".vue", ".svelte", ".mjs", ".cjs", ".html"}


NEEDS_LOCKFILE = "needs a lockfile"  # a repair the pipeline runs (codesign.curate.repairs), then replaces


class Unrecoverable(Exception):
    """The app at the query cannot be recovered or run here; the message is the funnel's reason."""


@dataclass
class Recovered:
    app: Path
    how: str  # where it came from, e.g. "git 3f2a1b2c (main, last commit before the query) + 2 session files"
    environment: dict[str, object]  # task.yaml's environment block
    repairs: list[str] = field(default_factory=list)
    session_patch: str = ""  # what the assistant changed for the request (a unified diff of the app)


def recover(q: Query, session: list[Query], dest: Path, excluded: list[str] | None = None) -> Recovered:
    """Write the app of ``q`` to ``dest`` (which must not exist)."""
    ws = q.workspace
    if ws.kind == "none" or not ws.path:
        raise Unrecoverable("no workspace: the record names no repository, folder or archive")
    root = Path(ws.path)
    if ws.kind == "git":
        top, how = _from_git(q, root, dest)
        subdir = _subdir(root, top) if not ws.subdir else ws.subdir
    elif ws.kind == "folder":
        if not root.is_dir():
            raise Unrecoverable(f"workspace missing: folder {root}")
        copy_tree(root, dest)
        top, how, subdir = root, f"folder {root}", ws.subdir
    else:
        _unpack(root, dest)
        top, how, subdir = root, f"archive {root.name}", ws.subdir
    repairs = _prune_links(dest)
    changed = _overlay(q, session, top, dest)
    if changed:
        how += f" + {changed} file(s) as the session had them"
    app = (dest / subdir).resolve()
    if not app.is_relative_to(dest.resolve()) or not app.is_dir():
        raise Unrecoverable(f"no app folder: {subdir!r} is not in the recovered workspace")
    environment, more = detect_environment(app, excluded if excluded is not None else BACKEND_PACKAGES)
    patch = session_patch(q, top, subdir)
    return Recovered(app, how, environment, repairs + more, patch)


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, timeout=120)
    if done.returncode != 0:
        raise Unrecoverable(f"git failed: git {args[0]} in {cwd}: {done.stderr.decode(errors='replace').strip()[:300]}")
    return done.stdout.decode(errors="replace").strip()


def _from_git(q: Query, root: Path, dest: Path) -> tuple[Path, str]:
    if not root.exists():
        raise Unrecoverable(f"workspace missing: {root} no longer exists")
    top = Path(_git(root, "rev-parse", "--show-toplevel"))
    commit = q.workspace.commit
    if commit:
        how = f"git {commit[:8]}"
    else:
        if not q.timestamp:
            raise Unrecoverable("no commit: none named and no timestamp to find one")
        branch = q.workspace.branch if q.workspace.branch and q.workspace.branch != "HEAD" else "HEAD"
        try:
            commit = _git(top, "rev-list", "-1", f"--before={q.timestamp}", branch)
        except Unrecoverable:
            commit = _git(top, "rev-list", "-1", f"--before={q.timestamp}", "HEAD")
        if not commit:
            raise Unrecoverable(f"no commit: none of {top} before {q.timestamp}")
        how = f"git {commit[:8]} ({branch}, last commit before the query)"
    archive = subprocess.run(["git", "-C", str(top), "archive", "--format=tar", commit], capture_output=True,
                             timeout=300)  # fmt: skip
    if archive.returncode != 0:
        raise Unrecoverable(f"git failed: git archive {commit[:8]}: {archive.stderr.decode(errors='replace')[:300]}")
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return top, how


def _subdir(cwd: Path, top: Path) -> str:
    try:
        return str(cwd.resolve().relative_to(top.resolve()))
    except ValueError:
        return ""


def _unpack(archive: Path, dest: Path) -> None:
    if not archive.is_file():
        raise Unrecoverable(f"workspace missing: archive {archive}")
    dest.mkdir(parents=True)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                for name in z.namelist():
                    target = (dest / name).resolve()
                    if PurePosixPath(name).is_absolute() or not target.is_relative_to(dest.resolve()):
                        raise Unrecoverable(f"unsafe archive: entry {name!r} escapes the workspace")
                z.extractall(dest)
        else:
            with tarfile.open(archive) as tar:
                tar.extractall(dest, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as e:
        raise Unrecoverable(f"unsafe or broken archive: {archive.name}: {type(e).__name__}: {e}") from None
    entries = list(dest.iterdir())
    if len(entries) == 1 and entries[0].is_dir():  # an archive of one folder: that folder is the workspace
        inner = entries[0]
        for child in list(inner.iterdir()):
            shutil.move(str(child), dest / child.name)
        inner.rmdir()


def _prune_links(dest: Path) -> list[str]:
    """Structural pruning: symlinks that are broken or lead outside the workspace are removed."""
    pruned = []
    for link in sorted(p for p in dest.rglob("*") if p.is_symlink()):
        target = link.resolve()
        if not target.exists() or not target.is_relative_to(dest.resolve()):
            pruned.append(str(link.relative_to(dest)))
            link.unlink()
    return [f"pruned {len(pruned)} broken or outside symlink(s): {', '.join(pruned[:5])}"] if pruned else []


def _states(q: Query, session: list[Query]) -> dict[str, str | None]:
    """Each file the session edited, as it was when ``q`` was asked (None: it did not exist)."""
    state: dict[str, str | None] = {}
    for earlier in (s for s in session if s.turn < q.turn):
        for e in earlier.edits or []:
            if e.after is not None:
                state[e.path] = e.after
    seen: set[str] = set()
    for later in (s for s in session if s.turn >= q.turn):
        for e in later.edits or []:
            if e.path not in seen:
                seen.add(e.path)
                state[e.path] = e.before
    return state


def _relative(path: str, top: Path) -> str | None:
    p = PurePosixPath(path)
    if p.is_absolute():
        try:
            p = PurePosixPath(Path(path).resolve().relative_to(top.resolve()))
        except ValueError:
            return None
    return None if ".." in p.parts else str(p)


def _overlay(q: Query, session: list[Query], top: Path, dest: Path) -> int:
    changed = 0
    for path, content in sorted(_states(q, session).items()):
        rel = _relative(path, top)
        if rel is None:
            q.problems.append(f"the session edited {path}, outside the workspace: left out")
            continue
        target = dest / rel
        if content is None:
            if target.is_file():
                target.unlink()
                changed += 1
            continue
        if not target.is_file() or target.read_text(errors="replace") != content:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            changed += 1
    return changed


def session_patch(q: Query, top: Path, subdir: str) -> str:
    """What the assistant changed for ``q``, as a unified diff of the app (paths relative to it): each file from
    its state at the query to its state after the query's last edit of it. Files outside the app are left out."""
    first: dict[str, str | None] = {}
    last: dict[str, str | None] = {}
    for e in q.edits or []:
        first.setdefault(e.path, e.before)
        last[e.path] = e.after
    app = PurePosixPath(subdir) if subdir not in ("", ".") else None
    chunks = []
    for path in sorted(first):
        rel = _relative(path, top)
        if rel is None or last[path] is None or first[path] == last[path]:
            continue
        name = PurePosixPath(rel)
        if app is not None:
            if not name.is_relative_to(app):
                continue
            name = name.relative_to(app)
        chunks.append(_diff(str(name), first[path], last[path]))
    return "".join(chunks)


def _diff(name: str, before: str | None, after: str | None) -> str:
    a = (before or "").splitlines(keepends=True)
    b = (after or "").splitlines(keepends=True)
    for lines in (a, b):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    old = f"a/{name}" if before is not None else "/dev/null"
    body = "".join(difflib.unified_diff(a, b, old, f"b/{name}"))
    return (
        f"diff --git a/{name} b/{name}\n" + ("new file mode 100644\n" if before is None else "") + body if body else ""
    )


def detect_environment(app: Path, excluded: list[str]) -> tuple[dict[str, object], list[str]]:
    """task.yaml's ``environment`` for the app, and the scripted repairs made; Unrecoverable when it is no web
    app codesign can run, or needs a back end no task can reach."""
    manifest = app / "package.json"
    repairs: list[str] = []
    if manifest.is_file():
        try:
            pkg = json.loads(manifest.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise Unrecoverable(f"broken package.json: not valid JSON: {e}") from None
        deps = {**(pkg.get("dependencies") or {}), **(pkg.get("devDependencies") or {})}
        blocked = sorted(d for d in deps if any(_matches(d, p) for p in excluded))
        if blocked:
            raise Unrecoverable(f"inaccessible back end or SDK: {', '.join(blocked[:5])}")
        _check_secrets(app)
        scripts = pkg.get("scripts") or {}
        if "build" not in scripts and "vite" in deps:
            scripts["build"] = "vite build"
            pkg["scripts"] = scripts
            manifest.write_text(json.dumps(pkg, indent=2) + "\n")
            repairs.append('added the build script "vite build" (the app had only a dev server)')
        if "build" not in scripts:
            raise Unrecoverable(
                "no build: package.json has no build script and no bundler codesign knows to add one for"
            )
        out = "build" if "react-scripts" in deps else "out" if "next" in deps else "dist"
        if not (app / "package-lock.json").is_file():
            repairs.append(NEEDS_LOCKFILE)
        return {"kind": "node", "serve": {"static_dir": out}}, repairs
    if (app / "index.html").is_file():
        _check_secrets(app)
        return {"kind": "static"}, repairs
    raise Unrecoverable("no web app: neither package.json nor index.html in the app folder")


def _matches(name: str, pattern: str) -> bool:
    return name == pattern or (pattern.endswith("/*") and name.startswith(pattern[:-1]))


def _check_secrets(app: Path) -> None:
    for path in sorted(app.rglob("*")):
        if "node_modules" in path.parts or path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        if path.stat().st_size > 2_000_000:
            continue
        match = SECRET_ENV.search(path.read_text(errors="replace"))
        if match:
            raise Unrecoverable(f"private key needed: {match.group(0)} in {path.relative_to(app)}")
