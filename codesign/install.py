"""Everything codesign runs outside Python, declared once and set up idempotently.

    python -m codesign.install run      # what `make run` needs: Chromium, bubblewrap, git, Node.js
    python -m codesign.install test     # what `make test` needs: + Docker Engine, debootstrap, busybox
    python -m codesign.install docker node-image    # start an engine, build the sandbox image
    python -m codesign.install --list   # every program, what uses it, where it comes from

``PROGRAMS`` is the single declaration: a test scans the package for programs it calls and fails on
any that is not declared here. Python-side media decoding (PyAV, pypdfium2) comes from pip wheels in
``pyproject.toml``, so no program is needed for attachments. Each step returns at once when its part is
already there, so ``make run`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from codesign.errors import EnvironmentSetupError
from codesign.runtime.browser import find_chromium


@dataclass(frozen=True)
class Program:
    name: str  # the executable's name
    used_by: str  # what in codesign runs it
    apt: str | None = None  # Debian package the set-up installs (as root); None: see `source`
    source: str = "apt"  # apt | prerequisite (the README's "fresh machine" has it) | npm | installer
    groups: tuple[str, ...] = ()  # install groups that need it: run, test, docker, authoring


PROGRAMS: tuple[Program, ...] = (
    Program("chromium", "evidence, probes, judges and the screenshot tool (driven by Playwright)", "chromium",
            groups=("run", "test")),
    Program("playwright", "Playwright's driver (its own Node.js build, which needs libatomic)", "libatomic1",
            groups=("run", "test")),
    Program("bwrap", "sandbox=confined, and every install, build and server of a candidate's code",
            "bubblewrap", groups=("run", "test")),
    Program("git", "workspace baselines, diffs and patch application", source="prerequisite",
            groups=("run", "test")),
    Program("node", "building and serving node apps; the relay inside sandboxes", source="prerequisite",
            groups=("run", "test")),
    Program("npm", "installing node apps' dependencies; the Claude Code CLI", source="prerequisite",
            groups=("run", "test")),
    Program("bash", "the shell every sandbox command runs in", source="prerequisite", groups=("run", "test")),
    Program("dockerd", "sandbox=docker: the Docker Engine codesign starts", "docker.io", groups=("test", "docker")),
    Program("umount", "stopping the Docker Engine codesign started", source="prerequisite",
            groups=("test", "docker")),
    Program("debootstrap", "building the codesign/node image", "debootstrap", groups=("test", "docker")),
    Program("tar", "importing the codesign/node image", source="prerequisite", groups=("test", "docker")),
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


def _run(argv: list[str]) -> None:
    print("+ " + " ".join(argv), flush=True)
    subprocess.run(argv, check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def _can_apt() -> bool:
    return bool(shutil.which("apt-get")) and os.geteuid() == 0


def apt_install(packages: list[str]) -> None:
    """Install Debian packages in one apt call (the index is refreshed first, once)."""
    if not packages:
        return
    if not _can_apt():
        raise EnvironmentSetupError(
            f"missing Debian packages: {' '.join(packages)}",
            f"install them as root: apt-get install -y {' '.join(packages)}",
        )
    _run(["apt-get", "update", "-qq"])
    _run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages])


def _present(program: Program) -> bool:
    if program.name == "chromium":
        return find_chromium() is not None
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
        raise EnvironmentSetupError(f"not installed: {', '.join(absent_prerequisites)}",
                                    "install them (Debian: apt-get install git nodejs npm bash mount tar)")  # fmt: skip
    if any(p.name == "chromium" for p in missing) and not _can_apt():
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
    major = int(re.match(r"v(\d+)", out).group(1)) if re.match(r"v(\d+)", out) else 0
    if major < MIN_NODE:
        raise EnvironmentSetupError(f"Node.js {out or '?'} is too old: codesign needs Node.js {MIN_NODE}+",
                                    "install Node.js 20 or newer (nodejs.org or your distribution)")  # fmt: skip
    return out


def browser() -> str:
    """A headless Chromium: an existing one, else Debian's package (root), else Playwright's own download."""
    found = find_chromium()
    if found:
        return found
    if _can_apt():
        apt_install(["chromium"])
    else:
        # On a machine that can reach Playwright's download host this is the conventional choice.
        _run([sys.executable, "-m", "playwright", "install", "chromium"])
    return find_chromium() or "playwright-bundled chromium"


# --- Docker ---------------------------------------------------------------------------------------

DOCKER_RUN = Path(os.environ.get("CODESIGN_DOCKER_RUN", "/tmp/codesign-docker"))
BUSYBOX_IMAGE = "codesign/busybox:1"
NODE_IMAGE = "codesign/node:20"


class EngineUnavailable(EnvironmentSetupError):
    """No Docker Engine can run on this machine (not root and none installed, or the kernel refuses it).
    The only reason a Docker test may be skipped; any other failure of the set-up is a bug."""


def docker_host() -> str:
    """Where codesign's Docker Engine listens: ``$DOCKER_HOST``, else the engine this module starts."""
    return os.environ.get("DOCKER_HOST") or f"unix://{DOCKER_RUN / 'docker.sock'}"


def _docker_client(timeout: int = 10):
    import docker as docker_sdk

    client = docker_sdk.DockerClient(base_url=docker_host(), timeout=timeout)
    client.ping()
    return client


def docker() -> str:
    """A running Docker Engine: the one at ``$DOCKER_HOST`` if it answers, else Debian's ``docker.io``
    installed (as root) and ``dockerd`` started in the background with its state under ``$CODESIGN_DOCKER_RUN``."""
    import docker as docker_sdk

    try:
        _docker_client()
        return docker_host()
    except docker_sdk.errors.DockerException:
        if os.environ.get("DOCKER_HOST"):
            raise EngineUnavailable(
                f"no Docker Engine answers at $DOCKER_HOST={os.environ['DOCKER_HOST']}",
                "start it, or unset DOCKER_HOST to let codesign start its own",
            ) from None
    if not shutil.which("dockerd"):
        if not _can_apt():
            raise EngineUnavailable("Docker Engine is not installed", "install Docker, or run as root with apt")
        apt_install(["docker.io"])
    if os.geteuid() != 0:
        raise EngineUnavailable("starting a Docker Engine needs root", "start one yourself and set DOCKER_HOST")
    DOCKER_RUN.mkdir(parents=True, exist_ok=True)
    log_path = DOCKER_RUN / "dockerd.log"
    log = open(log_path, "ab")  # noqa: SIM115  (dockerd keeps writing after we return)
    # No iptables or bridge: containers get `network none` or the host's network, nothing in between.
    proc = subprocess.Popen(
        ["dockerd", "--storage-driver=overlay2", "--iptables=false", "--ip6tables=false", "--bridge=none",
         f"--host=unix://{DOCKER_RUN / 'docker.sock'}", f"--data-root={DOCKER_RUN / 'data'}",
         f"--exec-root={DOCKER_RUN / 'exec'}", f"--pidfile={DOCKER_RUN / 'dockerd.pid'}"],
        stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    # Wait on the engine's state, not a fixed time: it answers, or its process ends (then the log says why).
    while True:
        try:
            _docker_client()
            return docker_host()
        except docker_sdk.errors.DockerException as e:
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-1500:]
                raise EngineUnavailable(f"dockerd exited with {proc.returncode}: {tail}", f"see {log_path}") from e
            time.sleep(0.3)


def stop_docker() -> None:
    """Stop the engine ``docker()`` started (tests call this at the end)."""
    pidfile = DOCKER_RUN / "dockerd.pid"
    if not pidfile.is_file():
        return
    pid = int(pidfile.read_text().strip() or 0)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        # dockerd stops its containers first; a minute is far beyond that, then it is killed.
        deadline = time.monotonic() + 60
        while not _exited(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
    netns = DOCKER_RUN / "exec" / "netns" / "default"
    if netns.exists():
        subprocess.run(["umount", str(netns)], check=False, capture_output=True)


def _exited(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):  # our own child: reap it, or it stays a zombie
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def busybox_image() -> str:
    """A 2 MB image (busybox-static) for fast sandbox tests: sh, coreutils, patch, wget."""
    client = _docker_client()
    if client.images.list(name=BUSYBOX_IMAGE):
        return BUSYBOX_IMAGE
    if not Path("/bin/busybox").is_file():
        apt_install(["busybox-static"])
    with tempfile.TemporaryDirectory() as root:
        for d in ("bin", "tmp", "etc", "root", "sandbox"):
            Path(root, d).mkdir()
        Path(root, "tmp").chmod(0o1777)
        shutil.copy2("/bin/busybox", f"{root}/bin/busybox")
        applets = subprocess.run(["/bin/busybox", "--list"], capture_output=True, text=True, check=True).stdout
        for applet in applets.split():
            with contextlib.suppress(FileExistsError):
                os.symlink("busybox", f"{root}/bin/{applet}")
        Path(root, "etc", "passwd").write_text("root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000::/tmp:/bin/sh\n")
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            tar.add(root, arcname=".")
        client.api.import_image_from_data(archive.getvalue(), repository=BUSYBOX_IMAGE.split(":")[0],
                                          tag=BUSYBOX_IMAGE.split(":")[1])  # fmt: skip
    return BUSYBOX_IMAGE


def _debian_mirror() -> str | None:
    """The Debian mirror this machine's apt uses (debootstrap's own default otherwise)."""
    sources = [*Path("/etc/apt/sources.list.d").glob("*.sources"), Path("/etc/apt/sources.list"),
               *Path("/etc/apt/sources.list.d").glob("*.list")]  # fmt: skip
    for path in sources:
        text = path.read_text(errors="replace") if path.is_file() else ""
        for uri in re.findall(r"^URIs:\s*(\S+)", text, re.M) + re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M):
            if not uri.rstrip("/").endswith("-security"):
                return uri
    return None


def node_image() -> str:
    """Debian (debootstrap minbase) with git, bash and this machine's Node.js: what agents need to build apps."""
    client = _docker_client()
    if client.images.list(name=NODE_IMAGE):
        return NODE_IMAGE
    if not shutil.which("debootstrap"):
        apt_install(["debootstrap"])
    node = shutil.which("node")
    if node is None:
        raise EnvironmentSetupError("Node.js is not installed on this machine", "install Node.js 20+")
    with tempfile.TemporaryDirectory() as tmp:
        rootfs = Path(tmp) / "rootfs"
        mirror = _debian_mirror()
        _run(["debootstrap", "--variant=minbase", "--include=git,ca-certificates,patch,procps", "bookworm",
              str(rootfs), *([mirror] if mirror else [])])  # fmt: skip
        node_root = Path(node).resolve().parent.parent  # e.g. /usr: bin/node and lib/node_modules/npm
        shutil.copy2(Path(node).resolve(), rootfs / "usr/local/bin/node")
        npm_dir = node_root / "lib" / "node_modules" / "npm"
        if npm_dir.is_dir():
            shutil.copytree(npm_dir, rootfs / "usr/local/lib/node_modules/npm", symlinks=True)
            (rootfs / "usr/local/bin/npm").symlink_to("../lib/node_modules/npm/bin/npm-cli.js")
            (rootfs / "usr/local/bin/npx").symlink_to("../lib/node_modules/npm/bin/npx-cli.js")
        with (rootfs / "etc/passwd").open("a") as f:
            f.write("agent:x:1000:1000::/tmp:/bin/bash\n")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        client.api.import_image_from_stream(tar.stdout, repository=NODE_IMAGE.split(":")[0],
                                            tag=NODE_IMAGE.split(":")[1])  # fmt: skip
        tar.wait()
    return NODE_IMAGE


STEPS = {
    "run": lambda: "\n  ".join(["", *require("run")]),
    "test": lambda: "\n  ".join(["", *require("test")]),
    "authoring": lambda: "\n  ".join(["", *require("authoring")]),
    "browser": browser,
    "docker": docker,
    "busybox-image": busybox_image,
    "node-image": node_image,
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m codesign.install", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("steps", nargs="*", help=f"any of: {', '.join(STEPS)}")
    parser.add_argument("--list", action="store_true", help="list every program codesign runs")
    args = parser.parse_args()
    unknown = [s for s in args.steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown steps {unknown}; choose from {', '.join(STEPS)}")
    if args.list or not args.steps:
        for p in PROGRAMS:
            where = f"apt {p.apt}" if p.apt else p.source
            print(f"{p.name:12} {where:22} {','.join(p.groups) or '-':18} {p.used_by}")
        return
    try:
        for step in args.steps:
            print(f"{step}: {STEPS[step]()}", flush=True)
    except EnvironmentSetupError as e:
        sys.exit(f"codesign.install: {e}")


if __name__ == "__main__":
    main()
