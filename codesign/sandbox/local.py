"""Run commands on this machine in the trial's workspace, each in its own process group — plain, or
confined with bubblewrap.

Confined (``confine: true``) means an allowlist, not a hide list: the command sees the system's
programs and libraries read-only (``/usr``, a few files of ``/etc``, Node.js), its workspace and a
private HOME read-write, an empty ``/tmp``, and nothing else — not the task suite, the result store, the
run's outputs, other trials' workspaces or the user's HOME. It runs as an unprivileged user in its own
user, PID, IPC and UTS namespaces with every capability dropped, and without ``network`` in an empty
network namespace: host services it is given (an agent CLI's model proxy) are relayed through a unix
socket, nothing else of the host's network is reachable.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from codesign._types import ExecResult, Seconds
from codesign.errors import ConfigError, EnvironmentSetupError
from codesign.sandbox import scratch
from codesign.sandbox.bubblewrap import bwrap_argv
from codesign.sandbox.processes import ServeError, free_port, kill_group, run_in_group, scrubbed_env, wait_for_server
from codesign.sandbox.relay import RELAY_JS, Relay
from codesign.workspace import copy_tree

_BWRAP_WORKED = False  # once it has worked in this process it keeps working: checked once


def _bwrap_works() -> str | None:
    """None when bubblewrap can create its namespaces here, else why not (e.g. user namespaces disabled). The
    probe sandbox lives in an empty folder of its own, not in the system temp folder: binding that would copy
    every mount under it, and on a fresh machine whose Docker Engine keeps its data there, a container's
    overlay unmounted at that moment failed the probe ("Can't bind mount /oldroot/tmp on /newroot/tmp: Unable
    to apply mount flags: remount …/overlay2/…/merged: No such file or directory") and, the answer being
    kept for the process, every cell of the run. A failure is not kept: the next check asks again."""
    global _BWRAP_WORKED
    if _BWRAP_WORKED:
        return None
    with tempfile.TemporaryDirectory(prefix="codesign-bwrap-check-") as folder:
        probe = LocalSandbox(Path(folder) / "ws", Path(folder) / "home", confine=True, network=False)
        probe.workspace.mkdir()
        proc = subprocess.run(probe.argv("true"), capture_output=True, text=True, cwd="/")
    _BWRAP_WORKED = proc.returncode == 0
    return None if _BWRAP_WORKED else (proc.stderr.strip() or f"exit code {proc.returncode}")


@dataclass
class LocalSandbox:
    """Commands run with ``bash -c`` in ``workspace`` with a scrubbed environment and a timeout.

    ``home`` is a private HOME inside the trial's scratch folder so tools do not write to the user's.
    """

    workspace: Path
    home: Path
    command_timeout_s: Seconds = 120.0
    env: dict[str, str] | None = None
    confine: bool = False  # bubblewrap: only system files, the workspace and a private HOME are visible
    network: bool = True  # False: an empty network namespace (host services only through `forward`)
    hide: list[str] = field(default_factory=list)  # paths hidden even where a visible folder contains them
    read_only: list[str] = field(default_factory=list)  # further host paths commands may read (an agent CLI)
    writable: list[str] = field(default_factory=list)  # further host paths commands may write (an npm cache)
    frozen: list[str] = field(default_factory=list)  # workspace paths mounted read-only (a shared node_modules)
    caches: list[str] = field(default_factory=list)  # workspace paths given an empty private tmpfs (tool caches)
    _forwards: dict[int, Path] = field(default_factory=dict)
    _relay: Relay | None = None
    _sockets: Path | None = None

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).resolve()
        self.home = Path(self.home)
        self.home.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)

    @property
    def tmp(self) -> Path:
        """The commands' /tmp: private to the trial, and kept between its commands (agents use it)."""
        return self.home.parent / "tmp"

    @property
    def isolated(self) -> bool:
        """True when the settings need bubblewrap (a confined view or no network)."""
        return self.confine or not self.network

    @property
    def wrapped(self) -> bool:
        """True when commands run under bubblewrap: always when it is installed — even unconfined, commands
        then live in their own PID namespace (no ``/proc/$PPID/environ`` of codesign; everything they start,
        ``setsid`` included, ends with them) and get a private /tmp."""
        return self.isolated or bool(shutil.which("bwrap"))

    def for_candidate(
        self, workspace: Path, home: Path, frozen: tuple[str, ...] = (), caches: tuple[str, ...] = ()
    ) -> LocalSandbox:
        """The same kind of sandbox for code the model wrote (install, build, serve): always confined and
        offline, whatever this one allows."""
        return replace(
            self,
            workspace=workspace,
            home=home,
            confine=True,
            network=False,
            env=None,
            read_only=[],
            writable=[],
            frozen=list(frozen),
            caches=list(caches),
            _forwards={},
            _relay=None,
            _sockets=None,
        )

    def check(self) -> None:
        if not self.isolated:
            return
        if not shutil.which("bwrap"):
            raise ConfigError(
                "sandbox.confine / sandbox.network=false need bubblewrap (bwrap), which is not installed",
                "run `python -m codesign.install run` (as root: apt-get install bubblewrap)",
            )
        problem = _bwrap_works()
        if problem:
            raise EnvironmentSetupError(
                f"bubblewrap cannot create a sandbox on this machine: {problem}",
                "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root",
            )

    # --- how a command is wrapped ----------------------------------------------------------------------
    def argv(self, command: str, relays: tuple[str, ...] = ()) -> list[str]:
        inner = ["bash", "-c", command]
        relayed = bool(relays or self._forwards)
        if relayed:
            forwards = tuple(f"tcp:{port}=unix:{sock}" for port, sock in self._forwards.items())
            inner = ["node", str(RELAY_JS), *forwards, *relays, "--", *inner]
        if not self.wrapped:
            return inner
        return bwrap_argv(
            inner,
            self.workspace,
            self.home,
            self.tmp,
            confine=self.confine,
            network=self.network,
            read_only=self.read_only + [str(RELAY_JS)] * relayed,
            writable=self.writable + ([str(self._sockets)] if self._sockets else []),
            frozen=self.frozen,
            caches=self.caches,
            hide=self.hide,
        )

    def _environment(self, env: dict[str, str] | None) -> dict[str, str]:
        return scrubbed_env(self.home, {**(self.env or {}), **(env or {})}, network=self.network)

    # --- the Sandbox protocol ----------------------------------------------------------------------------
    def execute(
        self, command: str, timeout: float | None = None, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> ExecResult:
        """``env`` adds variables for this command (e.g. an agent CLI's proxy address) on top of the scrubbed set."""
        return run_in_group(
            self.argv(command), self.workspace, self._environment(env), timeout or self.command_timeout_s, stdin=stdin
        )

    def expose(self, path: str | Path) -> None:
        """Let commands read ``path`` (e.g. an agent CLI installed outside the system folders)."""
        if self.confine:
            self.read_only.append(str(Path(path).resolve()))

    def forward(self, url: str) -> str:
        """The address at which commands reach the host service at ``url`` (a loopback http URL): the same
        URL, relayed through a unix socket when commands have no network of their own."""
        if self.network:
            return url
        port = urlsplit(url).port
        if port is None:
            raise ValueError(f"forward needs a URL with a port: {url}")
        socket_path = self._socket_dir() / f"fwd-{port}.sock"
        self._relays().unix_to_tcp(socket_path, port)
        self._forwards[port] = socket_path
        return url

    @contextlib.contextmanager
    def serve(self, command: str, ready_path: str = "/", ready_timeout_s: float = 60.0) -> Iterator[str]:
        """Run a server command (``{port}`` is replaced by its port) and yield its base URL on the host."""
        port = free_port()
        relays: tuple[str, ...] = ()
        if self.network:
            host_port = port
        else:  # the server listens inside the sandbox's own loopback; the host reaches it through a socket
            socket_path = self._socket_dir() / f"serve-{port}.sock"
            relays = (f"unix:{socket_path}=tcp:{port}",)
            host_port = self._relays().tcp_to_unix(socket_path)
        log = self.home / f"serve-{port}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                self.argv(command.replace("{port}", str(port)), relays),
                cwd=self.workspace,
                env=self._environment(None),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        base = f"http://127.0.0.1:{host_port}"

        def exited() -> str | None:
            if proc.poll() is None:
                return None
            return f"serve command exited with {proc.returncode}: {command}\n{log.read_text(errors='replace')[-1500:]}"

        try:
            try:
                wait_for_server(base, ready_path, ready_timeout_s, exited)
            except ServeError as e:
                if proc.poll() is None:  # still running but never answered: what it said is the clue
                    raise ServeError(f"{e}; its output:\n{log.read_text(errors='replace')[-1500:]}") from None
                raise
            yield base
        finally:
            kill_group(proc.pid)
            proc.wait()

    def read_file(self, path: str) -> str:
        return self.resolve(path).read_text(errors="replace")

    def write_file(self, path: str, content: str) -> None:
        p = self.resolve(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)

    def resolve(self, path: str) -> Path:
        """A path inside the workspace; anything escaping it is refused."""
        p = (self.workspace / path).resolve()
        if p != self.workspace and self.workspace not in p.parents:
            raise PermissionError(f"{path!r} is outside the workspace")
        return p

    def export(self, dest: Path) -> None:
        copy_tree(self.workspace, dest, skip=("node_modules", "dist", ".vite", "_attachments"))

    def sync(self) -> None:
        """Nothing to do: commands write the host-side workspace directly."""

    def close(self) -> None:
        """Stop relays; the workspace folder belongs to the trial."""
        if self._relay is not None:
            self._relay.close()
            self._relay = None
        if self._sockets is not None:
            shutil.rmtree(self._sockets, ignore_errors=True)
            self._sockets = None
        self._forwards.clear()

    # --- helpers -----------------------------------------------------------------------------------------
    def _socket_dir(self) -> Path:
        if self._sockets is None:
            # Short and outside the workspace: unix socket paths are limited to 107 bytes.
            self._sockets = scratch.make("sock")
            self._sockets.chmod(0o777)  # the sandbox's user creates the serve socket here
        return self._sockets

    def _relays(self) -> Relay:
        if self._relay is None:
            self._relay = Relay()
        return self._relay
