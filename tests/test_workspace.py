"""Workspaces, patches and the local sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codesign.sandbox.local import LocalSandbox
from codesign.workspace import Baseline, PatchError, apply_patch, changed_files, copy_tree
from tests.conftest import unavailable


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_baseline_diff_roundtrips_through_apply(tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "index.html").write_text("<h1>old</h1>\n")
    (ws / "src" / "gone.js").write_text("x\n")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "dep.js").write_text("dep\n")
    base = tmp_path / "base"
    copy_tree(ws, base)
    baseline = Baseline(tmp_path / "b.git", ws)
    baseline.snapshot()
    (ws / "index.html").write_text("<h1>new</h1>\n")
    (ws / "src" / "gone.js").unlink()
    (ws / "src" / "new.js").write_text("y\n")
    (ws / "node_modules" / "dep.js").write_text("changed\n")  # generated: never in the diff
    patch = baseline.diff()
    assert sorted(changed_files(patch)) == ["index.html", "src/gone.js", "src/new.js"]
    apply_patch(base, patch)
    assert _tree(base) == {k: v for k, v in _tree(ws).items() if not k.startswith("node_modules")}
    assert not (ws / ".git").exists()  # the solver never sees the baseline's git directory


def test_bad_patch_changes_nothing(tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("two\n")
    patch = (
        "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n"
        "diff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-not there\n+TWO\n"
    )
    with pytest.raises(PatchError, match=r"b\.txt"):
        apply_patch(tmp_path, patch)
    assert (tmp_path / "a.txt").read_text() == "one\n"  # atomic: the good hunk was not applied either


def test_timeout_kills_everything_a_local_command_started_setsid_included(tmp_path):
    """Even unconfined, commands live in their own PID namespace: a timeout (or the trial's end) ends every
    process they started, and they cannot read codesign's own environment through /proc."""
    from tests.test_confinement import started_then_timed_out

    ws = tmp_path / "ws"
    ws.mkdir()
    box = LocalSandbox(ws, tmp_path / "home")
    sleeps = [f"sleep {301 + i}{os.getpid()}" for i in range(3)]  # unique command lines to look for on the host
    command = (f"sh -c 'echo > a.started; exec {sleeps[0]}' & setsid sh -c 'echo > b.started; exec {sleeps[1]}' & "
               f"echo > c.started; exec {sleeps[2]}")  # fmt: skip
    r = started_then_timed_out(box, command, [ws / f"{n}.started" for n in "abc"], sleeps)
    assert r.timed_out and r.returncode is None


def test_a_local_command_cannot_read_codesigns_environment_through_proc(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    box = LocalSandbox(tmp_path, tmp_path / "home")
    out = box.execute("cat /proc/$PPID/environ; cat /proc/1/environ; ls /proc | grep -c '^[0-9]'").output
    assert "sk-parent-secret" not in out


def test_environment_is_scrubbed_of_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t0ken")
    box = LocalSandbox(tmp_path, tmp_path / "home")
    out = box.execute("env").output
    assert "sk-secret" not in out and "t0ken" not in out
    assert f"HOME={tmp_path / 'home'}" in out


def test_file_access_is_confined_to_the_workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    box = LocalSandbox(ws, tmp_path / "home")
    box.write_file("sub/a.txt", "hi")
    assert box.read_file("sub/a.txt") == "hi"
    with pytest.raises(PermissionError):
        box.read_file("../outside.txt")


def test_confined_sandbox_hides_tasks_and_cuts_the_network(tmp_path, outside_service, request):
    import shutil
    import subprocess
    import tempfile

    if not shutil.which("bwrap"):
        unavailable("bubblewrap is not installed (python -m codesign.install run)")
    url, hits = outside_service  # on this machine's own non-loopback address
    # Outside /tmp (which the sandbox replaces with its own), where suites live: the user's home.
    secret = Path(tempfile.mkdtemp(prefix=".codesign-test-suite-", dir=Path.home()))
    request.addfinalizer(lambda: shutil.rmtree(secret, ignore_errors=True))
    (secret / "criteria.yaml").write_text("hidden")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mine.txt").write_text("the workspace's own file")
    box = LocalSandbox(ws, tmp_path / "home", confine=True, network=False, hide=[str(secret)])
    fetch = (f"python3 -c 'import urllib.request as u; print(u.urlopen(\"{url}/probe\", timeout=10).read().decode())'"
             " 2>&1 | tail -1")  # fmt: skip
    out = box.execute(
        f"cat {secret}/criteria.yaml; echo cat-exit=$?; cat mine.txt; echo; touch made-here && echo writable; "
        f"touch /usr/x 2>&1 || echo read-only; {fetch}"
    ).output
    assert "cat-exit=1" in out and "No such file" in out and "hidden" not in out  # cat ran and found nothing
    assert "the workspace's own file" in out  # ... where it reads the workspace
    assert "writable" in out and "read-only" in out and (ws / "made-here").exists()
    assert "Network is unreachable" in out and hits == []
    # Control: the same request from outside the sandbox reaches the service.
    host = subprocess.run(["bash", "-c", fetch], capture_output=True, text=True, timeout=60)
    assert "outside service answered" in host.stdout and hits == ["/probe"]


def test_the_bubblewrap_check_binds_a_folder_of_its_own_and_asks_again_after_a_failure(tmp_path, monkeypatch):
    """The check a cell makes before it starts binds no shared folder: binding the system temp folder copied every
    mount under it, and a fresh machine's Docker Engine mounts and unmounts container filesystems there (one
    vanishing mid-check failed all cells of a run). A failed check is not remembered: the next one asks again."""
    import shutil
    import subprocess

    from codesign.sandbox import local

    if not shutil.which("bwrap"):
        unavailable("bubblewrap is not installed (python -m codesign.install run)")
    real_run, real_argv, ran = subprocess.run, local.bwrap_argv, []

    def recording(argv, **kwargs):
        ran.append(list(argv))
        return real_run(argv, **kwargs)

    monkeypatch.setattr(local, "_BWRAP_WORKED", False)
    monkeypatch.setattr(local.tempfile, "tempdir", str(tmp_path))  # the system temp folder, as the check sees it
    monkeypatch.setattr(subprocess, "run", recording)
    monkeypatch.setattr(local, "bwrap_argv", lambda inner, *a, **k: ["bwrap", "--no-such-option", *inner])
    assert "--no-such-option" in (local._bwrap_works() or "")  # bubblewrap's own words
    monkeypatch.setattr(local, "bwrap_argv", real_argv)
    assert local._bwrap_works() is None  # asked again, and it works
    binds = [argv[i + 1] for argv in ran[1:] for i, arg in enumerate(argv) if arg == "--bind"]
    assert binds and all(Path(b).is_relative_to(tmp_path) for b in binds)
    assert str(tmp_path) not in binds and list(tmp_path.iterdir()) == []  # its own folder, removed after


def test_scratch_folders_of_dead_runs_are_swept_and_live_ones_kept(tmp_path):
    from codesign.sandbox import scratch

    live = scratch.make("solve-live", tmp_path)
    dead = tmp_path / "codesign-4194303.12345-solve-dead-abc"  # no such process
    reused = tmp_path / f"codesign-{os.getpid()}.1-solve-reused-abc"  # this PID, but another start time
    foreign = tmp_path / "someone-elses-folder"
    for d in (dead, reused, foreign):
        (d / "workspace").mkdir(parents=True)
    removed = scratch.sweep(tmp_path)
    assert sorted(removed) == sorted([dead, reused])
    assert live.is_dir() and foreign.is_dir() and not dead.exists() and not reused.exists()


def test_a_run_removes_what_a_killed_run_left_in_its_scratch_folder(tmp_path):
    from codesign.runner import prepare
    from tests.helpers import compose_config

    left = tmp_path / "scratch" / "codesign-4194303.7-eval-some-task-xyz"
    (left / "workspace").mkdir(parents=True)
    cfg = compose_config("tasks.include=[me-bakery-header-mockup]", f"paths.scratch={tmp_path / 'scratch'}",
                         "tracker=none", "executor=inline")  # fmt: skip
    prepare(cfg, tmp_path)
    assert not left.exists()


def test_a_failing_install_reports_npms_own_cause(tmp_path):
    """npm prints the cause first and usage text after it: the error keeps the cause (here: no lockfile)."""
    from codesign.errors import EnvironmentSetupError
    from codesign.sandbox.dependencies import cached_node_modules

    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "x", "version": "1.0.0", "dependencies": {"left-pad": "1.3.0"}}')
    with pytest.raises(EnvironmentSetupError) as err:
        cached_node_modules(app, tmp_path / "cache" / "node_modules")
    message = str(err.value)
    assert "npm error code EUSAGE" in message and "can only install with an existing package-lock.json" in message
    assert "--install-strategy" not in message  # the usage text after the cause is left out


@pytest.mark.parametrize("applies", [True, False])
def test_the_oracle_submits_only_a_reference_patch_that_applied(tmp_path, applies):
    """The oracle's shell call is run for real; a reference patch that does not apply (a broken task) ends its
    solve as an agent error quoting git, never as a submitted empty change."""
    import json
    import subprocess

    from codesign.solve.ended import AgentError
    from codesign.solve.models.offline import OracleModel

    (tmp_path / "index.html").write_text("<p>old</p>\n" if applies else "<p>something else</p>\n")
    oracle = OracleModel("diff --git a/index.html b/index.html\n--- a/index.html\n+++ b/index.html\n"
                         "@@ -1 +1 @@\n-<p>old</p>\n+<p>new</p>\n")  # fmt: skip
    tools = [{"type": "function", "function": {"name": "shell", "parameters": {}}}]
    messages: list[dict] = [{"role": "user", "content": "Change old to new."}]
    call = oracle.query(messages, tools).message
    command = json.loads(call["tool_calls"][0]["function"]["arguments"])["command"]
    shell = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "HOME": str(tmp_path)})  # fmt: skip
    messages += [call, {"role": "tool", "tool_call_id": "call_oracle_1", "content": shell.stdout + shell.stderr}]
    if applies:
        assert oracle.query(messages, tools).message["content"] == "Applied the reference solution."
        assert (tmp_path / "index.html").read_text() == "<p>new</p>\n"
    else:
        with pytest.raises(AgentError, match=r"reference patch did not apply .*patch does not apply"):
            oracle.query(messages, tools)


def test_workspaces_of_one_state_share_its_snapshot_and_each_diff_is_its_own(tmp_path):
    """Shared baselines: the first workspace of a state is hashed once; every later one diffs against that
    tree, sees only its own changes, and two states snapshotted at once by two threads stay apart."""
    from concurrent.futures import ThreadPoolExecutor

    from codesign.workspace import Baselines

    def workspace(name: str, title: str) -> Path:
        ws = tmp_path / name
        ws.mkdir()
        (ws / "index.html").write_text(f"<h1>{title}</h1>\n")
        (ws / "keep.txt").write_text("kept\n")
        return ws

    shared = Baselines(tmp_path / "shared")
    spaces = [workspace(f"a{i}", "A") for i in range(3)] + [workspace(f"b{i}", "B") for i in range(3)]
    baselines = [Baseline(tmp_path / f"{ws.name}.git", ws) for ws in spaces]
    states = ["state-a"] * 3 + ["state-b"] * 3
    with ThreadPoolExecutor(6) as pool:  # first snapshots of both states race each other
        list(pool.map(lambda i: baselines[i].snapshot(shared, states[i]), range(6)))
    assert len(list((tmp_path / "shared").iterdir())) == 2  # one hashed snapshot per state
    for ws in spaces:
        (ws / f"only-{ws.name}.txt").write_text(f"{ws.name}\n")
    (spaces[1] / "keep.txt").unlink()
    for i, (ws, baseline) in enumerate(zip(spaces, baselines, strict=True)):
        expected = [f"only-{ws.name}.txt", *(["keep.txt"] if i == 1 else [])]
        assert sorted(changed_files(baseline.diff())) == sorted(expected), ws.name
    # Each diff is against its own state: b's heading applies to a copy of b's start, not a's.
    (spaces[3] / "index.html").write_text("<h1>B2</h1>\n")
    start = tmp_path / "b-start"
    start.mkdir()
    (start / "index.html").write_text("<h1>B</h1>\n")
    (start / "keep.txt").write_text("kept\n")
    apply_patch(start, baselines[3].diff())
    assert (start / "index.html").read_text() == "<h1>B2</h1>\n"


def test_the_state_hash_names_what_a_copy_holds_as_git_sees_it(tmp_path):
    """Two tasks' apps with the same files share one baseline snapshot; anything git would record differently —
    a byte, a path, the executable bit, a symlink for a file or another link target — is another state, and what
    a copy leaves out (node_modules, dist) is not part of it."""
    from codesign.workspace import state_hash

    def app(name: str) -> Path:
        root = tmp_path / name
        (root / "src").mkdir(parents=True)
        (root / "index.html").write_text("<h1>Hello</h1>\n")
        (root / "src" / "main.js").write_text("console.log(1)\n")
        (root / "run.sh").write_text("#!/bin/sh\n")
        (root / "link").symlink_to("index.html")
        return root

    first = state_hash(app("a"))
    assert state_hash(app("b")) == first
    (tmp_path / "b" / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "b" / "node_modules" / "x" / "index.js").write_text("left out\n")
    (tmp_path / "b" / "dist").mkdir()
    assert state_hash(tmp_path / "b") == first
    changes = {
        "content": lambda r: (r / "src" / "main.js").write_text("console.log(2)\n"),
        "path": lambda r: (r / "src" / "main.js").rename(r / "src" / "app.js"),
        "mode": lambda r: (r / "run.sh").chmod(0o755),
        "link target": lambda r: ((r / "link").unlink(), (r / "link").symlink_to("run.sh")),
        "link for a file": lambda r: ((r / "index.html").unlink(), (r / "index.html").symlink_to("run.sh")),
        "file for a link": lambda r: ((r / "link").unlink(), (r / "link").write_text("<h1>Hello</h1>\n")),
        "empty file added": lambda r: (r / "src" / "empty.js").write_text(""),
    }
    for what, change in changes.items():
        change(app(what))
        assert state_hash(tmp_path / what) != first, what
