"""Node dependencies: installed once per lockfile, confined, and shared by every trial on the machine.

The install runs under bubblewrap with the network (it must reach the registry) and nothing else: no
secrets in its environment, only its scratch folder and codesign's npm cache writable, the task suite,
the result store and the user's files invisible. So a lockfile the model changed — whose packages may run
install scripts — runs them confined, in every sandbox kind.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path

from codesign.errors import EnvironmentSetupError
from codesign.sandbox import scratch as scratch_dirs
from codesign.sandbox.local import LocalSandbox

NODE_INSTALL = "npm ci --no-audit --no-fund --prefer-offline --loglevel=error"


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


def cached_node_modules(app_dir: Path, cache_root: Path, install: str = NODE_INSTALL, timeout_s: float = 600) -> Path:
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
    npm_cache = cache_root.parent / "npm"
    npm_cache.mkdir(parents=True, exist_ok=True)
    with open(cache_root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        scratch = scratch_dirs.make(f"install-{key}", cache_root)
        try:
            app = scratch / "app"
            app.mkdir()
            for name in ("package.json", "package-lock.json", ".npmrc"):
                if (app_dir / name).is_file() and not (app_dir / name).is_symlink():
                    shutil.copy2(app_dir / name, app / name)
            box = LocalSandbox(
                app,
                scratch / "home",
                confine=True,
                network=True,
                writable=[str(npm_cache)],
                env={"npm_config_cache": str(npm_cache)},
            )
            box.check()
            result = box.execute(install, timeout=timeout_s)
            if result.returncode != 0 and "--prefer-offline" in install and "notarget" in result.output.lower():
                # A lockfile without `resolved` URLs sends npm to the package's metadata, and --prefer-offline
                # trusts a cached copy older than the lockfile's version: ask the registry once more.
                install = install.replace("--prefer-offline", "--prefer-online")
                result = box.execute(install, timeout=timeout_s)
            if result.returncode != 0:
                status = "timed out" if result.timed_out else f"exit code {result.returncode}"
                raise EnvironmentSetupError(
                    f"dependency install `{install}` failed in {app_dir} ({status}):\n{failure_excerpt(result.output)}",
                    "check that the npm registry is reachable and the lockfile is valid",
                )
            # An app without dependencies installs nothing, and that is a success.
            (app / "node_modules").mkdir(exist_ok=True)
            os.replace(app, entry)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return target


def failure_excerpt(output: str, head_lines: int = 8, tail_chars: int = 600) -> str:
    """What an install failure says: npm's own first error lines (``npm error …``, ``npm ERR! …``: the cause
    comes first, then usage text and the log's path), then the output's end; other tools: the end."""
    errors = [line for line in output.splitlines() if line.startswith(("npm error", "npm ERR!"))]
    causes = [line for line in errors if line.rstrip() not in ("npm error", "npm ERR!")][:head_lines]
    if not causes:
        return output[-2000:]
    return "\n".join(causes) + "\n…\n" + output[-tail_chars:].strip()


def link_node_modules(work: Path, modules: Path, packages: dict[str, str]) -> None:
    """``work/node_modules``: the cached install, plus the spec folder's own ``packages`` linked in by name.
    Node resolves a linked package's own imports from its real path, which lies inside ``work``, so it
    finds the same ``@playwright/test`` the specs do."""
    target = work / "node_modules"
    if not packages:
        target.symlink_to(modules, target_is_directory=True)
        return

    def link_each(source: Path, folder: Path) -> None:
        folder.mkdir()
        for entry in source.iterdir():
            (folder / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())

    link_each(modules, target)
    for name, folder in packages.items():
        link = target / name
        scope = link.parent
        if scope != target and scope.is_symlink():  # a scope the install has too: link its packages one by one
            installed = scope.resolve()
            scope.unlink()
            link_each(installed, scope)
        scope.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()  # the spec folder's copy wins over an installed one of the same name
        link.symlink_to(work / folder, target_is_directory=True)


def hydrate_node_modules(workspace: Path, cached: Path, hardlink: bool) -> None:
    """Give a workspace its dependencies: hard links for read-only use (evaluation builds, which mount them
    read-only), real copies where a solver could write into them (a write through a hard link would
    corrupt the cache)."""
    dest = workspace / "node_modules"
    if dest.exists():
        shutil.rmtree(dest)
    if hardlink:
        shutil.copytree(cached, dest, symlinks=True, copy_function=os.link)
    else:
        shutil.copytree(cached, dest, symlinks=True)
