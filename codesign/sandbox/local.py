"""Run a solver's commands on this machine, in the trial's workspace, each in its own process group."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from codesign._types import ExecResult
from codesign.errors import ConfigError
from codesign.sandbox.workspace import copy_tree

# Environment variables a solver's commands may see; everything else (keys, tokens) is dropped.
_PASS_THROUGH = ("PATH", "LANG", "LC_ALL", "TERM", "TZ", "NODE_OPTIONS", "npm_config_cache")
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")


def scrubbed_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _PASS_THROUGH}
    env.update(HOME=str(home), CI="1", NO_COLOR="1", npm_config_update_notifier="false")
    for k, v in (extra or {}).items():
        env[k] = v
    return {k: v for k, v in env.items() if not any(m in k.upper() for m in _SECRET_MARKERS) or k in (extra or {})}


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
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        timed_out = True
    text = out.decode("utf-8", errors="replace")
    if len(text) > max_output:
        half = max_output // 2
        text = f"{text[:half]}\n... [{len(text) - max_output} characters elided] ...\n{text[-half:]}"
    return ExecResult(output=text, returncode=None if timed_out else proc.returncode, timed_out=timed_out)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


@dataclass
class LocalSandbox:
    """Commands run with ``bash -c`` in ``workspace`` with a scrubbed environment and a timeout.

    ``home`` is a private HOME inside the trial's scratch folder so tools do not write to the user's.
    """

    workspace: Path
    home: Path
    command_timeout_s: float = 120.0
    env: dict[str, str] | None = None
    confine: bool = False  # bubblewrap: read-only root, writable workspace and home, private /tmp, hidden paths
    network: bool = True  # False: commands get no network (bubblewrap's empty network namespace)
    hide: list[str] = field(default_factory=list)  # host paths commands must not see (task suite, result store)

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).resolve()
        self.home = Path(self.home)
        self.home.mkdir(parents=True, exist_ok=True)

    def check(self) -> None:
        if (self.confine or not self.network) and not shutil.which("bwrap"):
            raise ConfigError("sandbox.confine / sandbox.network=false need bubblewrap (bwrap), which is not installed",
                              "apt-get install bubblewrap, or use sandbox=docker")  # fmt: skip

    def argv(self, command: str) -> list[str]:
        if not (self.confine or not self.network):
            return ["bash", "-c", command]
        ws, home = str(self.workspace), str(self.home)
        argv = ["bwrap", "--die-with-parent", "--unshare-pid", "--dev", "/dev", "--proc", "/proc"]
        if self.confine:
            argv = [*argv[:1], "--ro-bind", "/", "/", *argv[1:], "--tmpfs", "/tmp"]
            for path in self.hide:  # an empty folder where the tasks and results are
                argv += ["--tmpfs", str(Path(path).resolve())]
            argv += ["--bind", ws, ws, "--bind", home, home]
        else:
            argv = [*argv[:1], "--bind", "/", "/", *argv[1:]]
        if not self.network:
            argv.append("--unshare-net")
        return [*argv, "--chdir", ws, "bash", "-c", command]

    def execute(
        self, command: str, timeout: float | None = None, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> ExecResult:
        """``env`` adds variables for this command (e.g. an agent CLI's proxy address) on top of the scrubbed set."""
        return run_in_group(
            self.argv(command), self.workspace, scrubbed_env(self.home, {**(self.env or {}), **(env or {})}),
            timeout or self.command_timeout_s, stdin=stdin,
        )  # fmt: skip

    def resolve(self, path: str) -> Path:
        """A path inside the workspace; anything escaping it is refused."""
        p = (self.workspace / path).resolve()
        if p != self.workspace and self.workspace not in p.parents:
            raise PermissionError(f"{path!r} is outside the workspace")
        return p

    def read_file(self, path: str) -> str:
        return self.resolve(path).read_text(errors="replace")

    def write_file(self, path: str, content: str) -> None:
        p = self.resolve(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)

    def export(self, dest: Path) -> None:
        copy_tree(self.workspace, dest, skip=("node_modules", "dist", ".vite", "_attachments"))

    def close(self) -> None:
        """Nothing to release: the workspace folder belongs to the trial."""
