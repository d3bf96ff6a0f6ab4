"""``python -m codesign.cluster``: the ray start it runs, a node without the head's token refused with the fix, and a
real head and joined node running trials. Real nodes are stopped by killing their process groups, never by
``ray stop``, which would stop every Ray on this machine."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl
import psutil
import pytest

from codesign.cluster import start_command
from tests.helpers import REPO


def test_nodes_declare_their_browsers_and_the_head_keeps_the_dashboard_off():
    head = start_command(None, 6400, 3, ["--block"])
    assert head[1:4] == ["start", "--head", "--port=6400"] and "--include-dashboard=false" in head
    assert json.loads(next(a for a in head if a.startswith("--resources=")).split("=", 1)[1]) == {"browser": 3}
    assert head[-1] == "--block"
    join = start_command("10.0.0.1:6400", 6400, 1, [])
    assert join[1:3] == ["start", "--address=10.0.0.1:6400"] and '--resources={"browser": 1}' in join


def test_joining_without_the_heads_token_says_where_to_get_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env |= {"HOME": str(tmp_path), "RAY_AUTH_TOKEN_PATH": str(tmp_path / "none")}
    proc = subprocess.run([sys.executable, "-m", "codesign.cluster", "join", "10.0.0.1:6379"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2
    assert "no Ray authentication token" in proc.stderr and "ray get-auth-token" in proc.stderr


def test_a_head_token_goes_where_ray_auth_token_path_says(tmp_path, monkeypatch):
    from codesign.cluster import has_token, make_token

    path = tmp_path / "tokens" / "auth_token"
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(path))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    assert not has_token()
    make_token()
    assert has_token() and len(path.read_text()) == 64 and path.stat().st_mode & 0o077 == 0


# --- real nodes: a head and a joined node, each in a process group of its own --------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def _own_ports() -> list[str]:
    """Every port a node opens, free ones picked now: Ray's fixed defaults (the client server's 10001, the
    dashboard agent's 52365) would collide with the other Ray instances on this machine."""
    names = ("ray-client-server-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
             "metrics-export-port", "runtime-env-agent-port", "node-manager-port", "object-manager-port")  # fmt: skip
    return [f"--{name}={_free_port()}" for name in names] + ["--num-cpus=2", "--object-store-memory=150000000"]


def _group(pgid: int) -> list[psutil.Process]:
    """The live processes of process group ``pgid`` (zombies are dead: only their parent's reaping is left)."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def _stop_group(pgid: int) -> tuple[int, list[str]]:
    """Kill process group ``pgid`` (never ``ray stop``: it would stop every Ray on this machine) and wait until
    it and every process it started are gone: how many it had, and what is left (empty: a clean stop)."""
    members = _group(pgid)
    spawned = {p for m in members for p in _children(m)} | set(members)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    _, alive = psutil.wait_procs(list(spawned), timeout=60)
    left = [p for p in alive if _alive(p)] + [p for p in _group(pgid) if p not in spawned]
    return len(members), [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in left if _alive(p)]


def _using(folder: Path) -> list[psutil.Process]:
    """Live processes that name ``folder`` on their command line (a Ray node's daemons name its session folder)."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if _alive(proc) and str(folder) in " ".join(proc.cmdline()):
                found.append(proc)
    return found


def _children(proc: psutil.Process) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return proc.children(recursive=True)
    return []


def _alive(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return proc.status() != psutil.STATUS_ZOMBIE
    return False


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.browser
def test_a_head_and_a_joined_node_run_trials_and_stop_with_their_process_groups(tmp_path, node_cache):
    """``python -m codesign.cluster head`` and ``join`` for real, each in a process group of its own with its own
    ports and Ray folder: the head makes the token, the node joins with it, a run placed on both nodes grades
    its trials, and killing the two groups leaves no process behind."""
    ray_dir = Path(tempfile.mkdtemp(prefix="cs-ray-", dir="/tmp"))  # short: Ray's socket paths live under it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env["RAY_AUTH_TOKEN_PATH"] = str(ray_dir / "auth_token")
    groups: list[int] = []

    def start(*args: str) -> tuple[int, str]:
        command = [sys.executable, "-m", "codesign.cluster", *args]
        proc = subprocess.Popen(command, cwd=REPO, env=env, start_new_session=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)  # fmt: skip
        groups.append(proc.pid)  # the group outlives its leader: `ray start` returns, the node runs on
        output = proc.communicate(timeout=600)[0]
        return proc.returncode, output

    try:
        code, head_out = start("head", f"--port={_free_port()}", "--browsers=1", "--", f"--temp-dir={ray_dir}",
                               *_own_ports())  # fmt: skip
        assert code == 0 and "head ready with 1 browser(s)" in head_out, head_out[-3000:]
        assert len((ray_dir / "auth_token").read_text()) == 64  # the head made the cluster's token
        address = re.search(r"ray start --address='([^']+)'", head_out)
        assert address, head_out[-3000:]
        code, join_out = start("join", address.group(1), "--browsers=1", "--", *_own_ports())
        assert code == 0, join_out[-3000:]
        # Both nodes keep their files in the test's folder, not in the machine's shared /tmp/ray.
        assert (ray_dir / "ray_current_cluster").read_text().strip() == address.group(1)
        run = subprocess.run(
            [sys.executable, "-m", "codesign", "model=oracle", "evaluator=probe", "tracker=none", "tasks=all",
             "tasks.include=[me-bakery-header-mockup,me-recipe-servings-text]", "executor.num_workers=2",
             "executor.max_concurrency=1", f"store.root={tmp_path / 'store'}", f"paths.node_cache={node_cache}",
             f"hydra.run.dir={tmp_path / 'run'}"],
            cwd=tmp_path, env={**env, "RAY_ADDRESS": address.group(1)}, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        tasks = pl.read_parquet(tmp_path / "run" / "tasks.parquet")
        assert tasks.height == 2 and tasks["strict"].min() == 1.0, tasks.select("task_id", "status", "message")
        # One trial actor on each node, both ready. Which node ran which trial is load's choice (a free actor
        # takes the next trial): on a loaded machine one actor may finish both before the other is ready.
        assert "2 trial actor(s) ready on 2 node(s)" in run.stderr, run.stderr[-3000:]
        announced = set(re.findall(r"1 on (\w{12})", run.stderr))
        assert len(announced) == 2 and {n[:12] for n in tasks["node"]} <= announced, run.stderr[-3000:]
    finally:
        stopped = {pgid: _stop_group(pgid) for pgid in groups}
        escaped = [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in _using(ray_dir)]
        for proc in _using(ray_dir):  # a node outside its group: not this test's to leave running
            proc.kill()
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert len(stopped) == 2 and all(n > 0 for n, _ in stopped.values()), stopped  # each node ran in its group
    assert [left for _, left in stopped.values()] == [[], []] and escaped == [], (stopped, escaped)  # a clean stop
