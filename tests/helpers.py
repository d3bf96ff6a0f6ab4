"""Test helpers: compose configs in-process exactly as the CLI does."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from codesign.config import CONF_DIR, register_resolvers

REPO = Path(__file__).resolve().parent.parent


def compose_config(*overrides: str) -> DictConfig:
    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=False)


def graded_run(tmp_path: Path, root: Path, model: str, store: Path | None = None, *overrides: str) -> dict:
    """Every task under ``root`` solved by ``model`` and graded by the probe evaluator, inline, in one run
    folder under ``tmp_path``: the run's tables (``codesign.runner.run``)."""
    from codesign.runner import run

    store = store or tmp_path / "store"
    cfg = compose_config(f"model={model}", "evaluator=probe", "tasks=all", f"tasks.root={root}", "executor=inline",
                         "tracker=none", f"store.root={store}", "attribution.below=null", *overrides)  # fmt: skip
    out = tmp_path / f"run-{model}"
    out.mkdir(parents=True, exist_ok=True)
    return run(cfg, out)


def cli(*args: str, cwd: Path = REPO, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m codesign ARGS`` in a real subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "codesign", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def host_address() -> str | None:
    """A non-loopback IPv4 address of one of this machine's own interfaces, or None. Read from the interfaces
    (SIOCGIFADDR), so nothing is sent anywhere: a network check must only ever reach an address it owns."""
    import fcntl
    import socket
    import struct

    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(s.fileno(), siocgifaddr, struct.pack("256s", name[:15].encode()))
            except OSError:  # an interface without an IPv4 address
                continue
            address = socket.inet_ntoa(packed[20:24])
            if not address.startswith("127."):
                return address
    return None


def caller_pid(peer: tuple[str, int] | None, server_url: str) -> int:
    """The process whose TCP connection to ``server_url`` has ``peer`` as its local end. Both ends are matched:
    the kernel may give one ephemeral port to several connections to different servers at once (seen on a
    fresh machine: another process held ``peer``'s port towards another address)."""
    from urllib.parse import urlsplit

    import psutil

    url = urlsplit(server_url)
    server = (url.hostname, url.port)
    pids = {c.pid for c in psutil.net_connections("tcp") if c.laddr and c.raddr
            and tuple(c.laddr) == peer and tuple(c.raddr) == server}  # fmt: skip
    assert len(pids) == 1 and None not in pids, f"the connection {peer} -> {server} belongs to {pids or 'no process'}"
    return pids.pop()  # type: ignore[return-value]


def stream_lines(proc: subprocess.Popen, on_line: Callable[[str], object]) -> tuple[threading.Thread, list[str]]:
    """Read ``proc``'s stdout on a thread as it comes: every line kept, and ``on_line`` told of each."""
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            on_line(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, lines
