"""Commands as process groups: a scrubbed environment, a timeout that kills the whole group, servers waited on."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from codesign._types import ExecResult

# Environment variables a sandbox's commands may see; everything else (keys, tokens) is dropped.
_PASS_THROUGH = ("PATH", "LANG", "LC_ALL", "TERM", "TZ", "NODE_OPTIONS")
# Where this machine's TLS trust lives (paths, not secrets): an install behind a TLS-inspecting proxy needs them.
CA_VARS = ("SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


def scrubbed_env(home: Path, extra: dict[str, str] | None = None, network: bool = False) -> dict[str, str]:
    """The host environment minus anything secret: a fixed allowlist, plus proxies (without credentials)
    for commands that have the network. ``extra`` is added as given (e.g. a model proxy's own token)."""
    env = {k: v for k, v in os.environ.items() if k in (*_PASS_THROUGH, *CA_VARS)}
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


def free_port() -> int:
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
