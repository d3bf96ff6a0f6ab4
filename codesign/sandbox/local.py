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
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from codesign._types import ExecResult, Seconds
from codesign.errors import ConfigError, EnvironmentSetupError
from codesign.sandbox import scratch
from codesign.sandbox.relay import RELAY_JS, Relay
from codesign.sandbox.workspace import copy_tree

# Environment variables a sandbox's commands may see; everything else (keys, tokens) is dropped.
_PASS_THROUGH = ("PATH", "LANG", "LC_ALL", "TERM", "TZ", "NODE_OPTIONS")
# Where this machine's TLS trust lives (paths, not secrets): an install behind a TLS-inspecting proxy needs them.
_CA_VARS = ("SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")

# What a confined command sees of the system, read-only.
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = ("passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "protocols",
        "services", "ssl", "ca-certificates", "ca-certificates.conf", "alternatives", "ld.so.cache", "ld.so.conf",
        "ld.so.conf.d", "localtime", "timezone", "mime.types", "npmrc")  # fmt: skip
SANDBOX_UID = 1000


def scrubbed_env(home: Path, extra: dict[str, str] | None = None, network: bool = False) -> dict[str, str]:
    """The host environment minus anything secret: a fixed allowlist, plus proxies (without credentials)
    for commands that have the network. ``extra`` is added as given (e.g. a model proxy's own token)."""
    env = {k: v for k, v in os.environ.items() if k in (*_PASS_THROUGH, *_CA_VARS)}
    if network:  # a proxy URL with user:password@ is a credential: left out
        env |= {k: v for k, v in os.environ.items() if k in _PROXY_VARS and "@" not in v}
    env.update(HOME=str(home), CI="1", NO_COLOR="1", npm_config_update_notifier="false")
    env.update(extra or {})
    return env


def run_in_group(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout: float | None,
    max_output: int = 200_000,
    stdin: str | None = None,
) -> ExecResult:
    """Run ``argv`` in a new session; on timeout the whole process group is killed (mini-swe-agent's rule)."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(input=stdin.encode() if stdin is not None else None, timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, _ = proc.communicate()
        timed_out = True
    text = out.decode("utf-8", errors="replace")
    if len(text) > max_output:
        half = max_output // 2
        text = f"{text[:half]}\n... [{len(text) - max_output} characters elided] ...\n{text[-half:]}"
    return ExecResult(output=text, returncode=None if timed_out else proc.returncode, timed_out=timed_out)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


@functools.cache
def _bwrap_features() -> frozenset[str]:
    """Options this bubblewrap knows (``--disable-userns`` came with 0.8)."""
    if not shutil.which("bwrap"):
        return frozenset()
    text = subprocess.run(["bwrap", "--help"], capture_output=True, text=True).stdout
    return frozenset(w for w in text.split() if w.startswith("--"))


@functools.cache
def _bwrap_works() -> str | None:
    """None when bubblewrap can create its namespaces here, else why not (e.g. user namespaces disabled)."""
    probe = LocalSandbox(Path(tempfile.gettempdir()), Path(tempfile.gettempdir()), confine=True, network=False)
    proc = subprocess.run(probe.argv("true"), capture_output=True, text=True, cwd="/")
    return None if proc.returncode == 0 else (proc.stderr.strip() or f"exit code {proc.returncode}")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServeError(Exception):
    """A serve command exited, or its app never answered."""


def wait_for_server(base: str, ready_path: str, timeout_s: float, exited: Callable[[], str | None]) -> None:
    """Poll ``base + ready_path`` until it answers; ``exited()`` says why the server is gone, if it is."""
    deadline = time.monotonic() + timeout_s
    while True:
        gone = exited()
        if gone is not None:
            raise ServeError(gone)
        try:
            with urllib.request.urlopen(base + ready_path, timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise ServeError(f"app not ready at {ready_path} after {timeout_s:.0f} s") from None
            time.sleep(0.2)


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
        return replace(self, workspace=workspace, home=home, confine=True, network=False, env=None,
                       read_only=[], writable=[], frozen=list(frozen), caches=list(caches), _forwards={},
                       _relay=None, _sockets=None)  # fmt: skip

    def check(self) -> None:
        if not self.isolated:
            return
        if not shutil.which("bwrap"):
            raise ConfigError("sandbox.confine / sandbox.network=false need bubblewrap (bwrap), which is not installed",
                              "run `python -m codesign.install run` (as root: apt-get install bubblewrap)")  # fmt: skip
        problem = _bwrap_works()
        if problem:
            raise EnvironmentSetupError(
                f"bubblewrap cannot create a sandbox on this machine: {problem}",
                "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root",
            )

    # --- how a command is wrapped ----------------------------------------------------------------------
    def argv(self, command: str, relays: tuple[str, ...] = ()) -> list[str]:
        inner = ["bash", "-c", command]
        if relays or self._forwards:
            forwards = tuple(f"tcp:{port}=unix:{sock}" for port, sock in self._forwards.items())
            inner = ["node", str(RELAY_JS), *forwards, *relays, "--", *inner]
        if not self.wrapped:
            return inner
        features = _bwrap_features()
        argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user",
                "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL"]  # fmt: skip
        if "--disable-userns" in features:
            argv.append("--disable-userns")  # no nested namespaces to climb out of
        if self.network:
            argv.append("--share-net")
        ws, home = str(self.workspace), str(self.home)
        if self.confine:
            argv += self._system_view()
        else:
            argv += ["--bind", "/", "/"]
        argv += ["--dev", "/dev", "--proc", "/proc", "--bind", str(self.tmp), "/tmp"]
        visible = [ws, home]
        for path in self.read_only + [str(RELAY_JS)] * bool(relays or self._forwards):
            argv += ["--ro-bind", path, path]
            visible.append(path)
        argv += ["--bind", ws, ws, "--bind", home, home]
        for path in self.writable + ([str(self._sockets)] if self._sockets else []):
            argv += ["--bind", path, path]
            visible.append(path)
        for rel in self.frozen:
            if (self.workspace / rel).exists():
                argv += ["--ro-bind", str(self.workspace / rel), str(self.workspace / rel)]
        for rel in self.caches:  # the mount point is made on the host: a read-only parent cannot get one later
            if (self.workspace / rel).parent.is_dir():
                (self.workspace / rel).mkdir(exist_ok=True)
                argv += ["--tmpfs", str(self.workspace / rel)]
        for path in self.hide:
            resolved = str(Path(path).resolve())
            if not self.confine or any(resolved.startswith(v.rstrip("/") + "/") for v in visible):
                argv += ["--tmpfs", resolved]
        return [*argv, "--chdir", ws, *inner]

    @staticmethod
    def _system_view() -> list[str]:
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
        extra |= {Path(os.environ[v]).resolve() for v in _CA_VARS if os.environ.get(v)}
        for p in sorted(extra):
            if p.exists() and not any(str(p).startswith(d + "/") or str(p) == d for d in (*_SYSTEM_DIRS, "/etc")):
                args += ["--ro-bind", str(p), str(p)]
        return args

    def _environment(self, env: dict[str, str] | None) -> dict[str, str]:
        return scrubbed_env(self.home, {**(self.env or {}), **(env or {})}, network=self.network)

    # --- the Sandbox protocol ----------------------------------------------------------------------------
    def execute(
        self, command: str, timeout: float | None = None, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> ExecResult:
        """``env`` adds variables for this command (e.g. an agent CLI's proxy address) on top of the scrubbed set."""
        return run_in_group(self.argv(command), self.workspace, self._environment(env),
                            timeout or self.command_timeout_s, stdin=stdin)  # fmt: skip

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
        port = _free_port()
        relays: tuple[str, ...] = ()
        if self.network:
            host_port = port
        else:  # the server listens inside the sandbox's own loopback; the host reaches it through a socket
            socket_path = self._socket_dir() / f"serve-{port}.sock"
            relays = (f"unix:{socket_path}=tcp:{port}",)
            host_port = self._relays().tcp_to_unix(socket_path)
        log = self.home / f"serve-{port}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(self.argv(command.replace("{port}", str(port)), relays), cwd=self.workspace,
                                    env=self._environment(None), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
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
