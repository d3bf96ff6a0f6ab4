"""The Docker Engine codesign starts (or finds at ``$DOCKER_HOST``) and the images its sandboxes use."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from codesign.errors import EnvironmentSetupError
from codesign.programs import apt_install, can_apt, run_command

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


def answers() -> bool:
    """True when a Docker Engine answers at ``docker_host()`` now (a pidfile left by a killed one does not count)."""
    import docker as docker_sdk

    try:
        _docker_client()
    except docker_sdk.errors.DockerException:
        return False
    return True


def docker() -> str:
    """A running Docker Engine: the one at ``$DOCKER_HOST`` if it answers, else Debian's ``docker.io``
    installed (as root) and ``dockerd`` started in the background with its state under ``$CODESIGN_DOCKER_RUN``."""
    import docker as docker_sdk

    if answers():
        return docker_host()
    if os.environ.get("DOCKER_HOST"):
        raise EngineUnavailable(
            f"no Docker Engine answers at $DOCKER_HOST={os.environ['DOCKER_HOST']}",
            "start it, or unset DOCKER_HOST to let codesign start its own",
        )
    if not shutil.which("dockerd"):
        if not can_apt():
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
        client.api.import_image_from_data(
            archive.getvalue(), repository=BUSYBOX_IMAGE.split(":")[0], tag=BUSYBOX_IMAGE.split(":")[1]
        )
    return BUSYBOX_IMAGE


def debian_mirror() -> str | None:
    """The Debian mirror this machine's apt uses (debootstrap's own default otherwise)."""
    sources = [
        *Path("/etc/apt/sources.list.d").glob("*.sources"),
        Path("/etc/apt/sources.list"),
        *Path("/etc/apt/sources.list.d").glob("*.list"),
    ]
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
        mirror = debian_mirror()
        run_command(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=git,ca-certificates,patch,procps",
                "bookworm",
                str(rootfs),
                *([mirror] if mirror else []),
            ]
        )
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
        client.api.import_image_from_stream(
            tar.stdout, repository=NODE_IMAGE.split(":")[0], tag=NODE_IMAGE.split(":")[1]
        )
        tar.wait()
    return NODE_IMAGE
