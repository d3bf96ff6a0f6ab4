"""Run a solver's commands in a Docker container: the local sandbox's interface on the Docker SDK.

The workspace is copied into the container when the sandbox starts and copied back when it closes,
so the host-side diff and evaluation work exactly as with the local sandbox. Resource limits,
``network none``, dropped capabilities and a non-root user are set on the container. Every container and
volume carries the label ``codesign=sandbox`` and its owner (machine and process): what a killed run left
behind is removed when the next run starts (``remove_leftovers``).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import tarfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codesign._types import Count, ExecResult, Seconds
from codesign.errors import ConfigError, EnvironmentSetupError
from codesign.sandbox import scratch
from codesign.sandbox.processes import ServeError, wait_for_server
from codesign.sandbox.relay import RELAY_JS, Relay

LABEL = "codesign"
OWNER = "codesign.owner"
_OUTPUT_VARIABLE = "CODESIGN_EXEC_OUTPUT"  # where a command's output is written inside the container
_OUTPUTS = ".codesign-exec"  # the folder of those files, beside the workspace (never copied back)


def _folder_info(name: str, uid: int, gid: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, 0o755, uid, gid, int(time.time())
    return info


def _tar_folder(name: str, uid: int, gid: int) -> bytes:
    """A tar of one empty folder owned by ``uid:gid``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.addfile(_folder_info(name, uid, gid))
    return buf.getvalue()


def _tar_dir(root: Path, arcname: str, uid: int, gid: int) -> bytes:
    """A tar of ``root`` owned by ``uid:gid`` (the container drops CAP_CHOWN, so ownership travels in the tar)."""

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        return info

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(root, arcname=arcname, filter=owned)
    return buf.getvalue()


@dataclass
class DockerSandbox:
    # Settings that do not change what it does: left out of content keys (codesign.build.behaviour).
    not_in_key = ("docker_host",)
    workspace: Path  # host path: copied in at start, copied back at close
    home: Path
    image: str = "codesign/node:20"
    network: str = "none"  # Docker network mode: none, host, or a network name
    memory: str = "2g"
    cpus: Seconds = 1.0
    pids_limit: Count = 512
    user: str = "1000:1000"
    workdir: str = "/sandbox/app"  # the workspace inside the container; its parent is a volume
    shell: str = "sh"
    command_timeout_s: Seconds = 120.0
    read_only_root: bool = True  # the image is read-only; only /workspace (a volume) and /tmp are writable
    docker_host: str | None = None  # None: $DOCKER_HOST, else the engine `python -m codesign.install docker` starts
    env: dict[str, str] = field(default_factory=dict)
    hide: list[str] = field(default_factory=list)  # nothing to do: the container never sees host paths
    candidate: bool = False  # runs code the model wrote: gets a socket folder for a serve command's relay
    _sockets: Path | None = None  # host folder bind-mounted at /run/codesign (candidate sandboxes)
    _relay: Relay | None = None
    _client: Any = None
    _container: Any = None
    _volume: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.workspace, self.home = Path(self.workspace).resolve(), Path(self.home)

    # --- lifecycle -------------------------------------------------------------------------------------
    def client(self) -> Any:
        if self._client is None:
            import docker

            from codesign.sandbox.engine import docker_host

            try:
                self._client = docker.DockerClient(base_url=self.docker_host or docker_host(), timeout=120)
                self._client.ping()
            except Exception as e:
                raise EnvironmentSetupError(
                    f"no Docker Engine answers at {self.docker_host or docker_host()}: {e}",
                    "run `python -m codesign.install docker` (starts one) or set DOCKER_HOST",
                ) from e
        return self._client

    def check(self) -> None:
        """Preflight: the engine answers and the image exists; a killed run's containers are removed."""
        client = self.client()
        if not client.images.list(name=self.image):
            raise ConfigError(
                f"Docker image {self.image!r} is not present on the engine",
                "build it: python -m codesign.install node-image (or busybox-image)",
            )
        remove_leftovers(client)

    def for_candidate(
        self, workspace: Path, home: Path, frozen: tuple[str, ...] = (), caches: tuple[str, ...] = ()
    ) -> DockerSandbox:
        """A fresh container of the same image and limits for code the model wrote: no network. (``frozen``
        and ``caches`` need nothing here: the container gets its own copy of the dependencies.)"""
        return replace(
            self,
            workspace=workspace,
            home=home,
            network="none",
            env={},
            candidate=True,
            _sockets=None,
            _relay=None,
            _client=self._client,
            _container=None,
            _volume=None,
            _lock=threading.Lock(),
        )

    def container(self) -> Any:
        if self._container is None:
            # /tmp is a tmpfs (Docker copies the image's /tmp permissions onto it: images need /tmp at 1777).
            # The workspace lives in a volume mounted at its parent: Docker's archive API refuses paths under a
            # read-only root that are not on a volume, and the workspace folder itself (created from the tar)
            # belongs to the sandbox user, who cannot chown (all capabilities are dropped).
            labels = {LABEL: "sandbox", OWNER: scratch.owner_label()}
            mounts = {}
            if self.candidate:  # a host folder for a serve command's relay socket (engines on this machine)
                self._sockets = scratch.make("docker-sock")
                self._sockets.chmod(0o777)  # the container's user creates the socket here
                shutil.copy2(RELAY_JS, self._sockets / "relay.js")
                mounts[str(self._sockets)] = {"bind": "/run/codesign", "mode": "rw"}
            self._volume = self.client().volumes.create(labels=labels)
            self._container = self.client().containers.run(
                self.image,
                command=["sleep", "infinity"],
                detach=True,
                network_mode=self.network,
                mem_limit=self.memory,
                memswap_limit=self.memory,
                nano_cpus=int(self.cpus * 1e9),
                pids_limit=self.pids_limit,
                working_dir="/",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=self.read_only_root,
                tmpfs={"/tmp": "rw,exec,size=512m,mode=1777"},
                labels=labels,
                init=True,
                volumes={self._volume.name: {"bind": os.path.dirname(self.workdir), "mode": "rw"}, **mounts},
            )
            uid, gid = (int(x) for x in self.user.split(":"))
            parent, name = os.path.split(self.workdir)
            self._container.put_archive(parent, _tar_dir(self.workspace, name, uid, gid))
            self._container.put_archive(parent, _tar_folder(_OUTPUTS, uid, gid))
        return self._container

    def close(self) -> None:
        """Copy the final workspace back to the host, then remove the container."""
        if self._relay is not None:
            self._relay.close()
            self._relay = None
        if self._container is None:
            return
        try:
            self.sync()
        finally:
            with contextlib.suppress(Exception):
                self._container.remove(force=True)
            with contextlib.suppress(Exception):
                self._volume.remove(force=True)
            self._container = self._volume = None
            if self._sockets is not None:
                shutil.rmtree(self._sockets, ignore_errors=True)
                self._sockets = None

    def sync(self) -> None:
        """Mirror the container's workspace onto the host-side one (installed dependencies stay as they are)."""
        if self._container is not None:
            self._sync_out(self.workspace, keep=("node_modules", "_attachments"))

    @contextlib.contextmanager
    def serve(self, command: str, ready_path: str = "/", ready_timeout_s: float = 60.0) -> Iterator[str]:
        """Run a server command in the container (no network) and relay it to host loopback through a unix
        socket in a bind-mounted folder — which needs an engine on this machine."""
        container, port = self.container(), 8000
        if self._sockets is None:
            raise ServeError("serve commands run in candidate sandboxes only (see for_candidate)")
        sock = self._sockets / "serve.sock"
        exec_id = self.client().api.exec_create(
            container.id,
            [
                "node",
                "/run/codesign/relay.js",
                f"unix:/run/codesign/{sock.name}=tcp:{port}",
                "--",
                self.shell,
                "-c",
                command.replace("{port}", str(port)),
            ],
            workdir=self.workdir,
            user=self.user,
            environment={"HOME": "/tmp", **self.env},
        )["Id"]
        self.client().api.exec_start(exec_id, detach=True)
        self._relay = self._relay or Relay()
        base = f"http://127.0.0.1:{self._relay.tcp_to_unix(sock)}"

        def exited() -> str | None:
            state = self.client().api.exec_inspect(exec_id)
            if state.get("Running") or state.get("ExitCode") is None:
                return None
            return f"serve command exited with {state['ExitCode']}: {command}"

        wait_for_server(base, ready_path, ready_timeout_s, exited)
        yield base

    # --- the Sandbox protocol ------------------------------------------------------------------------
    def execute(
        self, command: str, timeout: float | None = None, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> ExecResult:
        container = self.container()
        environment = {k: v for k, v in {**self.env, **(env or {})}.items()}
        environment.setdefault("HOME", "/tmp")
        if stdin is not None:
            command = f"{command} <<'CODESIGN_STDIN_EOF'\n{stdin}\nCODESIGN_STDIN_EOF"
        # The command's output goes to a file beside the workspace (on the volume: the archive API cannot read
        # a tmpfs), read back with the archive API: Docker 20.10 loses an exec's streamed output when the
        # process exits right after printing (4-8 of 120 short `echo` commands came back empty with four
        # sandboxes busy at once; the test suite saw two tests fail on it).
        output_file = f"{os.path.dirname(self.workdir)}/{_OUTPUTS}/{uuid.uuid4().hex}.out"
        environment[_OUTPUT_VARIABLE] = output_file
        exec_id = self.client().api.exec_create(
            container.id,
            [self.shell, "-c", f'exec >"${_OUTPUT_VARIABLE}" 2>&1\n{command}'],
            workdir=self.workdir,
            user=self.user,
            environment=environment,
        )["Id"]
        done = threading.Event()

        def wait() -> None:
            for _ in self.client().api.exec_start(exec_id, stream=True, demux=False):
                pass  # the output is in the file; the stream only says when the command has ended
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        timed_out = not done.wait(timeout or self.command_timeout_s)
        if timed_out:
            # As the sandbox user, `kill -9 -1` ends every process of that user — the command and whatever it
            # spawned — while the container's own keep-alive (root) survives.
            with contextlib.suppress(Exception):
                container.exec_run(["sh", "-c", "kill -9 -1"], user=self.user)
            done.wait(10)
        code = self.client().api.exec_inspect(exec_id).get("ExitCode")
        output = (self._get(output_file) or b"").decode("utf-8", errors="replace")
        with contextlib.suppress(Exception):
            container.exec_run(["rm", "-f", output_file], user=self.user, detach=True)
        return ExecResult(output=output, returncode=None if timed_out else code, timed_out=timed_out)

    def read_file(self, path: str) -> str:
        data = self._get(self._inside(path))
        if data is None:
            raise FileNotFoundError(path)
        return data.decode("utf-8")

    def write_file(self, path: str, content: str) -> None:
        rel = os.path.relpath(self._inside(path), self.workdir)
        uid, gid = (int(x) for x in self.user.split(":"))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            parts = rel.split("/")
            for k in range(1, len(parts)):  # parent folders, owned by the sandbox user
                tar.addfile(_folder_info("/".join(parts[:k]), uid, gid))
            data = content.encode()
            info = tarfile.TarInfo(rel)
            info.size, info.mode, info.uid, info.gid, info.mtime = len(data), 0o644, uid, gid, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        self.container().put_archive(self.workdir, buf.getvalue())

    def export(self, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        self._sync_out(dest, keep=())

    # --- helpers -----------------------------------------------------------------------------------------
    def _inside(self, path: str) -> str:
        full = os.path.normpath(os.path.join(self.workdir, path))
        if full != self.workdir and not full.startswith(self.workdir + "/"):
            raise PermissionError(f"{path!r} is outside the workspace")
        return full

    def _get(self, inside: str) -> bytes | None:
        import docker

        try:
            stream, _ = self.container().get_archive(inside)
        except docker.errors.NotFound:
            return None
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise IsADirectoryError(inside)
            extracted = tar.extractfile(member)
            assert extracted is not None  # a regular file always has content to extract
            return extracted.read()

    def _sync_out(self, dest: Path, keep: tuple[str, ...]) -> None:
        """Make ``dest`` mirror the container's workspace (deletions included), except ``keep``."""
        stream, _ = self.container().get_archive(self.workdir + "/.")
        data = io.BytesIO(b"".join(stream))
        for child in dest.iterdir() if dest.exists() else []:
            if child.name in keep:
                continue
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        with tarfile.open(fileobj=data) as tar:
            members = [m for m in tar.getmembers() if m.name.split("/")[0] not in ("node_modules", *keep)]
            # tarfile's "data" filter came with Python 3.11.4; _contained does its job on older versions too.
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, members=list(_contained(members)), filter="data")
            else:
                tar.extractall(dest, members=list(_contained(members)))


def _contained(members: list[tarfile.TarInfo]) -> Iterator[tarfile.TarInfo]:
    """Regular files, folders and links that stay inside the destination; anything else a candidate left in
    its container (an absolute symlink to a host path, a device) is not copied out."""
    for m in members:
        if m.name.startswith("/") or ".." in Path(m.name).parts:
            continue
        if m.issym() or m.islnk():
            base = os.path.dirname(m.name) if m.issym() else ""
            if m.linkname.startswith("/") or os.path.normpath(os.path.join(base, m.linkname)).startswith(".."):
                continue
        elif not (m.isfile() or m.isdir()):
            continue
        yield m


def remove_leftovers(client: Any) -> int:
    """Remove containers and volumes labelled ``codesign=sandbox`` whose owning process on this machine has
    ended (a killed run's); those of live runs, and of other machines sharing the engine, stay."""
    host = socket.gethostname()

    def orphaned(labels: dict[str, str]) -> bool:
        machine, _, owner = labels.get(OWNER, ":").rpartition(":")
        return not owner or (machine == host and not scratch.alive(owner))

    removed = 0
    for container in client.containers.list(all=True, filters={"label": f"{LABEL}=sandbox"}):
        if orphaned(container.labels):
            with contextlib.suppress(Exception):
                container.remove(force=True, v=True)
                removed += 1
    for volume in client.volumes.list(filters={"label": f"{LABEL}=sandbox"}):
        if orphaned(volume.attrs.get("Labels") or {}):
            with contextlib.suppress(Exception):
                volume.remove(force=True)
                removed += 1
    return removed
