"""Every program codesign runs outside Python, declared once, found and installed idempotently.

``PROGRAMS`` is the single declaration: a test scans the package for programs it calls and fails on
any that is not declared here. ``python -m codesign.install`` is the command that sets them up.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from codesign.errors import EnvironmentSetupError


@dataclass(frozen=True)
class Program:
    name: str  # the executable's name
    used_by: str  # what in codesign runs it
    apt: str | None = None  # Debian package the set-up installs (as root); None: see `source`
    source: str = "apt"  # apt | prerequisite (the README's "fresh machine" has it) | npm | installer
    groups: tuple[str, ...] = ()  # install groups that need it: run, test, docker, authoring


PROGRAMS: tuple[Program, ...] = (
    Program("chromium", "evidence, probes, judges and the screenshot tool (driven by Playwright)",
            "chromium-headless-shell", groups=("run", "test")),
    Program("playwright", "Playwright's driver (its own Node.js build, which needs libatomic)", "libatomic1",
            groups=("run", "test")),
    Program("bwrap", "sandbox=confined, and every install, build and server of a candidate's code",
            "bubblewrap", groups=("run", "test")),
    Program("git", "workspace baselines, diffs and patch application; curation reads apps at a commit",
            source="prerequisite", groups=("run", "test")),
    Program("node", "building and serving node apps; the relay inside sandboxes", source="prerequisite",
            groups=("run", "test")),
    Program("npm", "installing node apps' dependencies; the Claude Code CLI", source="prerequisite",
            groups=("run", "test")),
    Program("bash", "the shell every sandbox command runs in", source="prerequisite", groups=("run", "test")),
    Program("dockerd", "sandbox=docker: the Docker Engine codesign starts", "docker.io", groups=("test", "docker")),
    Program("umount", "stopping the Docker Engine codesign started", source="prerequisite",
            groups=("test", "docker")),
    Program("debootstrap", "building the codesign/node image and the codesign/debian:trixie image under the "
            "harbor image (codesign.export.harbor_image)", "debootstrap", groups=("test", "docker")),
    Program("tar", "importing the codesign/node and codesign/debian:trixie images", source="prerequisite",
            groups=("test", "docker")),
    Program("busybox", "the 2 MB codesign/busybox test image", "busybox-static", groups=("test", "docker")),
    Program("shellcheck", "checking the launchers' shell scripts (tests/test_launchers.py)", "shellcheck",
            groups=("test",)),
    Program("claude", "harness=claude_code (npm install into .tools/ on first use)", source="npm"),
    Program("apt-get", "this installer, as root", source="installer"),
    Program("espeak-ng", "rebuilding the bundled audio attachment (suite/_tools)", "espeak-ng",
            groups=("authoring",)),
    Program("sox", "rebuilding the bundled audio attachment (suite/_tools)", "sox", groups=("authoring",)),
    Program("ffmpeg", "rebuilding the bundled audio and video attachments (suite/_tools)", "ffmpeg",
            groups=("authoring",)),
)  # fmt: skip
DECLARED = {p.name for p in PROGRAMS}
MIN_NODE = 20


def run_command(argv: list[str]) -> None:
    print("+ " + " ".join(argv), flush=True)
    subprocess.run(argv, check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def can_apt() -> bool:
    return bool(shutil.which("apt-get")) and os.geteuid() == 0


def apt_install(packages: list[str]) -> None:
    """Install Debian packages in one apt call (the index is refreshed first, once)."""
    if not packages:
        return
    if not can_apt():
        raise EnvironmentSetupError(
            f"missing Debian packages: {' '.join(packages)}",
            f"install them as root: apt-get install -y {' '.join(packages)}",
        )
    run_command(["apt-get", "update", "-qq"])
    run_command(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages])


def _present(program: Program) -> bool:
    if program.name == "chromium":  # where apt can install the headless shell, a full Chromium is not enough
        return find_chromium() is not None and (not can_apt() or _chosen_chromium_is_light())
    if program.name == "busybox":
        return Path("/bin/busybox").is_file()
    if program.name == "playwright":  # the pip package's driver: it runs only if its shared libraries exist
        return subprocess.run([sys.executable, "-m", "playwright", "--version"], capture_output=True).returncode == 0
    return shutil.which(program.name) is not None


def require(group: str) -> list[str]:
    """Make every program of ``group`` present: missing apt packages are installed in one go,
    a missing prerequisite is an error naming the fix. Returns one status line per program."""
    wanted = [p for p in PROGRAMS if group in p.groups]
    missing = [p for p in wanted if not _present(p)]
    absent_prerequisites = [p.name for p in missing if p.source == "prerequisite"]
    if absent_prerequisites:
        raise EnvironmentSetupError(
            f"not installed: {', '.join(absent_prerequisites)}",
            "install them (Debian: apt-get install git nodejs npm bash mount tar)",
        )
    if any(p.name == "chromium" for p in missing) and not can_apt():
        browser()  # Playwright's own browser where apt cannot be used
        missing = [p for p in missing if p.name != "chromium"]
    apt_install([p.apt for p in missing if p.apt])
    still = [p.name for p in wanted if not _present(p)]
    if still:
        raise EnvironmentSetupError(f"still missing after installing: {', '.join(still)}")
    if group in ("run", "test"):
        check_node()
    return [f"{p.name}: {find_chromium() if p.name == 'chromium' else shutil.which(p.name) or 'ok'}" for p in wanted]


def check_node() -> str:
    """Node.js ≥ 20 (Vite 8 and the Claude Code CLI need it)."""
    out = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    version = re.match(r"v(\d+)", out)
    major = int(version.group(1)) if version else 0
    if major < MIN_NODE:
        raise EnvironmentSetupError(
            f"Node.js {out or '?'} is too old: codesign needs Node.js {MIN_NODE}+",
            "install Node.js 20 or newer (nodejs.org or your distribution)",
        )
    return out


def browser() -> str:
    """A headless Chromium: an existing one, else Debian's package (root), else Playwright's own download."""
    found = find_chromium()
    if found:
        return found
    if can_apt():
        apt_install(["chromium-headless-shell"])
    else:
        # On a machine that can reach Playwright's download host this is the conventional choice.
        run_command([sys.executable, "-m", "playwright", "install", "chromium"])
    return find_chromium() or "playwright-bundled chromium"


# Debian's headless shell first (Chromium's own headless build, the browser Playwright itself drives headless):
# measured here, a context + page + load + full-page PNG + DOM costs 0.18 CPU-s in it against 0.53 in the full
# browser's headless mode, 17.5 s against 39.9 s for 60 of them (/tmp benchmark, 2 cores). Then the real
# binaries before the wrappers: Debian's /usr/bin/chromium wrapper prints a harmless shell warning.
_HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
_SYSTEM_CANDIDATES = (
    _HEADLESS_SHELL,
    "/usr/bin/chromium-headless-shell",
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
)


def _chosen_chromium_is_light() -> bool:
    """The Chromium codesign would drive is one the user named or the headless shell (not the full browser)."""
    found = find_chromium()
    return bool(os.environ.get("CODESIGN_CHROMIUM")) or (found is not None and "headless-shell" in found)


def find_chromium(explicit: str | None = None) -> str | None:
    """The Chromium to drive: ``explicit``, ``$CODESIGN_CHROMIUM``, a system one, else None (Playwright's own)."""
    for candidate in (explicit, os.environ.get("CODESIGN_CHROMIUM")):
        if candidate:
            if not Path(candidate).is_file():
                raise EnvironmentSetupError(
                    f"browser {candidate!r} does not exist", "fix browser.executable / CODESIGN_CHROMIUM or unset it"
                )
            return candidate
    for candidate in (*_SYSTEM_CANDIDATES, shutil.which("chromium")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None
