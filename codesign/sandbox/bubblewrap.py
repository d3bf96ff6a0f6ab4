"""Bubblewrap, as codesign's sandboxes use it: an allowlist view of the system and the namespaces a command runs in."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from codesign.sandbox.processes import CA_VARS

# What a confined command sees of the system, read-only.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = ("passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "protocols",
        "services", "ssl", "ca-certificates", "ca-certificates.conf", "alternatives", "ld.so.cache", "ld.so.conf",
        "ld.so.conf.d", "localtime", "timezone", "mime.types", "npmrc")  # fmt: skip
SANDBOX_UID = 1000


@functools.cache
def bwrap_features() -> frozenset[str]:
    """Options this bubblewrap knows (``--disable-userns`` came with 0.8)."""
    if not shutil.which("bwrap"):
        return frozenset()
    text = subprocess.run(["bwrap", "--help"], capture_output=True, text=True).stdout
    return frozenset(w for w in text.split() if w.startswith("--"))


def system_view() -> list[str]:
    """What a confined command sees of the system: its programs and libraries, a few files of ``/etc``, read-only."""
    args: list[str] = []
    for d in _SYSTEM_DIRS:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    # Programs installed outside /usr (Node.js under /opt or ~/.nvm), and CA bundles named by variables.
    extra = {Path(p).resolve().parent.parent for p in map(shutil.which, ("node", "git")) if p}
    extra |= {Path(os.environ[v]).resolve() for v in CA_VARS if os.environ.get(v)}
    for p in sorted(extra):
        if p.exists() and not any(str(p).startswith(d + "/") or str(p) == d for d in (*_SYSTEM_DIRS, "/etc")):
            args += ["--ro-bind", str(p), str(p)]
    return args


def bwrap_argv(
    inner: list[str],
    workspace: Path,
    home: Path,
    tmp: Path,
    *,
    confine: bool,
    network: bool,
    read_only: list[str],
    writable: list[str],
    frozen: list[str],
    caches: list[str],
    hide: list[str],
) -> list[str]:
    """``inner`` under bubblewrap: its own user, PID, IPC and UTS namespaces, every capability dropped, the network
    only with ``network``; with ``confine`` it sees the system read-only and nothing of the host but ``workspace``,
    ``home`` (its HOME), ``tmp`` (its /tmp) and the paths it is given. ``frozen`` workspace paths are read-only,
    ``caches`` get an empty private tmpfs, ``hide`` paths are hidden even inside a visible folder."""
    features = bwrap_features()
    argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL"]  # fmt: skip
    if "--disable-userns" in features:
        argv.append("--disable-userns")  # no nested namespaces to climb out of
    if network:
        argv.append("--share-net")
    ws, home_dir = str(workspace), str(home)
    if confine:
        argv += system_view()
    else:
        argv += ["--bind", "/", "/"]
    argv += ["--dev", "/dev", "--proc", "/proc", "--bind", str(tmp), "/tmp"]
    visible = [ws, home_dir]
    for path in read_only:
        argv += ["--ro-bind", path, path]
        visible.append(path)
    argv += ["--bind", ws, ws, "--bind", home_dir, home_dir]
    for path in writable:
        argv += ["--bind", path, path]
        visible.append(path)
    for rel in frozen:
        if (workspace / rel).exists():
            argv += ["--ro-bind", str(workspace / rel), str(workspace / rel)]
    for rel in caches:  # the mount point is made on the host: a read-only parent cannot get one later
        if (workspace / rel).parent.is_dir():
            (workspace / rel).mkdir(exist_ok=True)
            argv += ["--tmpfs", str(workspace / rel)]
    for path in hide:
        resolved = str(Path(path).resolve())
        if not confine or any(resolved.startswith(v.rstrip("/") + "/") for v in visible):
            argv += ["--tmpfs", resolved]
    return [*argv, "--chdir", ws, *inner]
