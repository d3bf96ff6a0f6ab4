"""Set up what codesign needs outside Python, idempotently: ``python -m codesign.install browser``.

Each step returns at once when its part is already there, so ``make run`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from codesign.errors import EnvironmentSetupError
from codesign.runtime.browser import find_chromium


def _run(argv: list[str]) -> None:
    print("+ " + " ".join(argv), flush=True)
    subprocess.run(argv, check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def browser() -> str:
    """A headless Chromium: an existing one, else Debian's package (root), else Playwright's own download."""
    found = find_chromium()
    if found:
        return found
    if shutil.which("apt-get") and os.geteuid() == 0:
        _run(["apt-get", "update", "-qq"])
        _run(["apt-get", "install", "-y", "-qq", "chromium"])
    else:
        # On a machine that can reach Playwright's download host this is the conventional choice.
        _run([sys.executable, "-m", "playwright", "install", "chromium"])
    return find_chromium() or "playwright-bundled chromium"


DOCKER_RUN = Path(os.environ.get("CODESIGN_DOCKER_RUN", "/tmp/codesign-docker"))
BUSYBOX_IMAGE = "codesign/busybox:1"
NODE_IMAGE = "codesign/node:20"


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
    try:
        _docker_client()
        return docker_host()
    except Exception:
        if os.environ.get("DOCKER_HOST"):
            raise EnvironmentSetupError(
                f"no Docker Engine answers at $DOCKER_HOST={os.environ['DOCKER_HOST']}",
                "start it, or unset DOCKER_HOST to let codesign start its own",
            ) from None
    if not shutil.which("dockerd"):
        if not (shutil.which("apt-get") and os.geteuid() == 0):
            raise EnvironmentSetupError("Docker Engine is not installed", "install Docker, or run as root with apt")
        _run(["apt-get", "install", "-y", "-qq", "docker.io"])
    DOCKER_RUN.mkdir(parents=True, exist_ok=True)
    log = open(DOCKER_RUN / "dockerd.log", "ab")  # noqa: SIM115  (dockerd keeps writing after we return)
    # No iptables or bridge: containers get `network none` or the host's network, nothing in between.
    subprocess.Popen(
        ["dockerd", "--storage-driver=overlay2", "--iptables=false", "--ip6tables=false", "--bridge=none",
         f"--host=unix://{DOCKER_RUN / 'docker.sock'}", f"--data-root={DOCKER_RUN / 'data'}",
         f"--exec-root={DOCKER_RUN / 'exec'}", f"--pidfile={DOCKER_RUN / 'dockerd.pid'}"],
        stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        try:
            _docker_client()
            return docker_host()
        except Exception as e:
            if time.monotonic() > deadline:
                raise EnvironmentSetupError(f"dockerd did not come up: {e}", f"see {DOCKER_RUN / 'dockerd.log'}") from e
            time.sleep(0.3)


def stop_docker() -> None:
    """Stop the engine ``docker()`` started (tests call this at the end)."""
    pidfile = DOCKER_RUN / "dockerd.pid"
    if not pidfile.is_file():
        return
    pid = int(pidfile.read_text().strip() or 0)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.1)
    netns = DOCKER_RUN / "exec" / "netns" / "default"
    if netns.exists():
        subprocess.run(["umount", str(netns)], check=False, capture_output=True)


def busybox_image() -> str:
    """A 2 MB image (busybox-static) for fast sandbox tests: sh, coreutils, patch, timeout."""
    client = _docker_client()
    if client.images.list(name=BUSYBOX_IMAGE):
        return BUSYBOX_IMAGE
    if not Path("/bin/busybox").is_file():
        _run(["apt-get", "install", "-y", "-qq", "busybox-static"])
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


def node_image() -> str:
    """Debian (debootstrap minbase) with git, bash and this machine's Node.js: what agents need to build apps."""
    client = _docker_client()
    if client.images.list(name=NODE_IMAGE):
        return NODE_IMAGE
    if not shutil.which("debootstrap"):
        _run(["apt-get", "install", "-y", "-qq", "debootstrap"])
    node = shutil.which("node")
    if node is None:
        raise EnvironmentSetupError("Node.js is not installed on this machine", "install Node.js 20+")
    with tempfile.TemporaryDirectory() as tmp:
        rootfs = Path(tmp) / "rootfs"
        _run(["debootstrap", "--variant=minbase", "--include=git,ca-certificates,patch,procps", "bookworm",
              str(rootfs)])  # fmt: skip
        node_root = Path(node).resolve().parent.parent  # e.g. /usr: bin/node and lib/node_modules/npm
        shutil.copy2(node, rootfs / "usr/local/bin/node")
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


STEPS = {"browser": browser, "docker": docker, "busybox-image": busybox_image, "node-image": node_image}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m codesign.install", description=__doc__)
    parser.add_argument("steps", nargs="+", choices=sorted(STEPS))
    for step in parser.parse_args().steps:
        print(f"{step}: {STEPS[step]()}")


if __name__ == "__main__":
    main()
