"""The Docker sandbox on a real engine: limits enforced, workspace copied in and out, a whole trial,
leftovers of a killed run removed.

The engine is started by the project's own set-up (``codesign.install docker``); the tests are skipped,
with the reason, only where no engine can be started (and fail instead under CI=true).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from codesign.runner import run
from codesign.sandbox.docker import DockerSandbox
from tests.helpers import compose_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def image(busybox_image):
    return busybox_image


@pytest.fixture
def sandbox(image, tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "index.html").write_text("<h1>hello</h1>\n")
    (ws / "src" / "old.js").write_text("old\n")
    box = DockerSandbox(ws, tmp_path / "home", image=image, memory="64m", pids_limit=64, command_timeout_s=20)
    yield box
    box.close()


def test_workspace_is_copied_in_and_back(sandbox):
    r = sandbox.execute("cat index.html && rm src/old.js && echo new > src/new.js && echo more >> index.html"
                        " && ln -s /etc/passwd host-file && ln -s index.html page.html")  # fmt: skip
    assert r.returncode == 0 and "<h1>hello</h1>" in r.output
    sandbox.write_file("deep/er/file.txt", "written\n")
    assert sandbox.read_file("deep/er/file.txt") == "written\n"
    sandbox.close()
    ws = sandbox.workspace
    assert (ws / "index.html").read_text() == "<h1>hello</h1>\nmore\n"
    assert not (ws / "src" / "old.js").exists() and (ws / "src" / "new.js").read_text() == "new\n"
    assert (ws / "deep" / "er" / "file.txt").is_file()
    # A link inside the workspace comes back; one to a path of the host does not.
    assert (ws / "page.html").is_symlink() and not (ws / "host-file").is_symlink()


def test_limits_are_enforced(sandbox):
    assert sandbox.execute("id -u").output.strip() == "1000"  # not root
    assert "no network" in sandbox.execute("ip route 2>/dev/null | grep -q default || echo no network").output
    assert sandbox.execute("touch /etc/x").returncode != 0  # read-only root
    oom = sandbox.execute("head -c 150000000 /dev/zero | tail -c 120000000 > /dev/null; echo rc=$?")
    # Killed by the 64 MB memory limit: the kernel picks the victim (tail, or under load the shell as well).
    assert "rc=137" in oom.output or oom.returncode == 137, oom
    kills = sandbox.execute("cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null")
    assert int(re.search(r"^oom_kill (\d+)", kills.output, re.M).group(1)) >= 1, kills.output
    forks = sandbox.execute("for i in $(seq 100); do sleep 5 & done 2>&1 | tail -1; wait")
    assert "can't fork" in forks.output or "Resource temporarily unavailable" in forks.output
    with pytest.raises(PermissionError):
        sandbox.read_file("../../etc/passwd")


def test_no_command_loses_its_output_with_sandboxes_busy_at_once(image, tmp_path):
    """Docker 20.10 drops an exec's streamed output when the process exits right after printing (4-8 of 120
    came back empty, four sandboxes at once, the CPUs busy; none with the CPUs idle): execute reads the output
    from a file instead. Busy loops make the contention the suite otherwise brings only sometimes."""

    def commands(k: int) -> list[str]:
        (tmp_path / f"ws{k}").mkdir()
        box = DockerSandbox(tmp_path / f"ws{k}", tmp_path / f"home{k}", image=image, memory="64m")
        try:
            return [box.execute(f"echo sandbox {k} command {i}; exit {i % 3}") for i in range(30)]
        finally:
            box.close()

    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3 * (os.cpu_count() or 1))]
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            outputs = list(pool.map(commands, range(4)))
    finally:
        for process in busy:
            process.kill()
    expected = [[(f"sandbox {k} command {i}\n", i % 3) for i in range(30)] for k in range(4)]
    lost = [r for k in range(4) for r, e in zip(outputs[k], expected[k], strict=True) if (r.output, r.returncode) != e]
    assert lost == []
    assert not (tmp_path / "ws0" / ".codesign-exec").exists()  # the output files never reach the workspace


def test_the_network_is_cut(sandbox, outside_service):
    """A service on this machine's own (non-loopback) address is out of reach from the container; the same
    command, by the same busybox wget, reaches it from the host. (No ``-T``: busybox 1.35's wget crashes on it.)"""
    url, hits = outside_service
    fetch = f"wget -O - {url}/probe 2>&1; echo wget-exit=$?"
    inside = sandbox.execute(fetch)
    assert "wget-exit=1" in inside.output and "Network is unreachable" in inside.output and hits == [], inside
    host = subprocess.run(["/bin/busybox", "sh", "-c", fetch], capture_output=True, text=True, timeout=60)
    assert "outside service answered" in host.stdout and "wget-exit=0" in host.stdout, host.stdout
    assert hits == ["/probe"]


def test_timeout_kills_everything_the_command_started(sandbox):
    # No clock: the command sleeps far past the test's guard, so an execute that waited for it (instead of
    # ending it at its 1 s timeout) would trip the guard; `ps` then shows nothing of it survived.
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        r = pool.submit(sandbox.execute, "sleep 3600 & sleep 3600", timeout=1).result(timeout=300)
    finally:
        pool.shutdown(wait=False)
    assert r.timed_out and r.returncode is None
    assert "sleep 3600" not in sandbox.execute("ps").output
    assert sandbox.execute("echo still usable").output.strip() == "still usable"


def test_a_trial_runs_in_a_container(image, tmp_path, suite_copy):
    """The oracle solves a task inside the container (busybox has no git: it falls back to patch)."""
    root = suite_copy("me-bakery-header-mockup")
    cfg = compose_config(
        "tasks=all", f"tasks.root={root}", "sandbox=docker", f"sandbox.image={image}", "executor=inline",
        "tracker=none", f"store.root={tmp_path / 'store'}",
    )  # fmt: skip
    out = tmp_path / "run"
    out.mkdir()
    tables = run(cfg, out)
    row = tables["tasks"].row(0, named=True)
    assert row["status"] == "ok" and row["exit_status"] == "submitted" and row["strict"] == 1.0, row
    patch = next(Path(tmp_path / "store" / "trials").glob("*/patch.diff")).read_text()
    assert '+      <p class="tagline">Fresh bread daily</p>' in patch
    assert tables["verdicts"].filter(pl.col("verdict") != "PASS").height == 0


def test_leftovers_of_a_killed_run_are_removed_and_live_ones_kept(image):
    from codesign.sandbox import scratch
    from codesign.sandbox.docker import LABEL, OWNER, remove_leftovers

    client = DockerSandbox(Path("."), Path("."), image=image).client()
    dead = {LABEL: "sandbox", OWNER: f"{scratch.owner_label().split(':')[0]}:4194303.1"}
    live = {LABEL: "sandbox", OWNER: scratch.owner_label()}
    made = {}
    for name, labels in (("dead", dead), ("live", live)):
        volume = client.volumes.create(labels=labels)
        container = client.containers.create(image, command=["sleep", "60"], labels=labels)
        made[name] = (container.id, volume.name)
    try:
        assert remove_leftovers(client) >= 2
        containers = {c.id for c in client.containers.list(all=True)}
        volumes = {v.name for v in client.volumes.list()}
        assert made["dead"][0] not in containers and made["dead"][1] not in volumes
        assert made["live"][0] in containers and made["live"][1] in volumes
    finally:
        for name in made:
            with contextlib.suppress(Exception):
                client.containers.get(made[name][0]).remove(force=True)
            with contextlib.suppress(Exception):
                client.volumes.get(made[name][1]).remove(force=True)
