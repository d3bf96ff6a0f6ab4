"""The store by URI (a folder or object storage through fsspec), tasks packed by content, and what the Ray
executor refuses before it starts anything."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from codesign.errors import ConfigError
from codesign.store import Store, is_remote, stage_lock
from codesign.tasks.archive import pack, unpack
from tests.conftest import S3_BUCKET
from tests.helpers import REPO, caller_pid, stream_lines

SUITE = REPO / "codesign" / "suite"


def s3_keys(env: dict[str, str]) -> list[str]:
    """The bucket's keys as an independent client lists them."""
    import boto3

    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket=S3_BUCKET).get("Contents", []))


def test_uris_name_local_folders_or_object_storage(tmp_path, s3):
    assert not is_remote("outputs/store") and not is_remote(f"file://{tmp_path}") and is_remote("s3://b/p")
    assert Store(f"file://{tmp_path}/s").root == tmp_path / "s"
    store = Store(f"s3://{S3_BUCKET}/store", staging=tmp_path / "stage")
    assert store.remote and store.root.is_relative_to(tmp_path / "stage")
    with pytest.raises(ConfigError, match=r"not installed|not understood") as err:
        Store("nosuchfs://bucket/x")
    assert "pip install" in err.value.hint or "s3://" in err.value.hint


def test_object_storage_exchanges_one_stage_marker_last(tmp_path, s3):
    """Two nodes' views of one bucket (moto on loopback): a stage's files go up with the marker last, a node's
    stale copy of a marker the store lacks is removed, and reads need no local file."""
    store = Store(f"s3://{S3_BUCKET}/store", staging=tmp_path / "node-a")
    trial = store.trial_dir("abc")
    (trial / "evals" / "e1").mkdir(parents=True)
    (trial / "patch.diff").write_text("diff")
    (trial / "solve.json").write_text("{}")
    (trial / "trajectory.jsonl").write_text("{}\n")  # sorts after the marker
    (trial / ".solve.lock").write_text("")
    (trial / "evals" / "e1" / "evaluation.json").write_text("{}")
    written: list[str] = []
    pipe = store.fs.pipe_file  # the real upload, its order noted (a bucket keeps no order of writes)
    store.fs.pipe_file = lambda path, data: (written.append(path.rsplit("/", 1)[-1]), pipe(path, data))
    store.push(trial, last="solve.json", skip=("evals",))
    assert written == ["patch.diff", "trajectory.jsonl", "solve.json"]  # no lock, no evaluation, the marker last
    assert s3_keys(s3) == [f"store/trials/abc/{n}" for n in ("patch.diff", "solve.json", "trajectory.jsonl")]
    other = Store(f"s3://{S3_BUCKET}/store", staging=tmp_path / "node-b")  # another node's view
    folder = other.trial_dir("abc")
    other.pull(folder, ["solve.json", "patch.diff"])
    assert (folder / "patch.diff").read_text() == "diff"
    (folder / "evals" / "e1").mkdir(parents=True)
    (folder / "evals" / "e1" / "evaluation.json").write_text("{}")  # a copy from a stage that never finished
    other.pull(folder / "evals" / "e1", ["evaluation.json"])
    assert not (folder / "evals" / "e1" / "evaluation.json").exists()
    assert other.read_bytes("trials/abc/patch.diff") == b"diff" and other.read_bytes("trials/none") is None
    assert other.glob("trials/*/solve.json") == ["trials/abc/solve.json"]
    other.delete("trials/abc/patch.diff")
    assert s3_keys(s3) == ["store/trials/abc/solve.json", "store/trials/abc/trajectory.jsonl"]


@pytest.mark.ray
@pytest.mark.parametrize("scheme", ["s3", "memory"])
def test_a_remote_stage_lock_queues_on_the_runs_lock_actor(scheme, ray_instance, s3, tmp_path):
    """The run's real ``StageLocks`` actor as the lock service: while another worker of the run holds a stage's
    lock there, a stage lock on the remote store waits (polling the actor); once it is released, the stage runs
    holding the actor's lock — on s3:// the lock object in the bucket too; on a store without conditional
    writes (fsspec's memory://, as gs:// would be) the actor's lock alone — and gives back what it held."""
    import ray

    from codesign import leases
    from codesign.execute.ray_actors import ActorLocks, StageLocks
    from codesign.store import use_lock_service

    store = Store(f"{scheme}://{S3_BUCKET}/locks-{tmp_path.name}", staging=tmp_path)
    path = store.trial_dir("k") / ".solve.lock"
    name = store._remote(path)
    locks = ray.remote(StageLocks).options(max_concurrency=100).remote(3600)

    async def scenario() -> dict[str, object]:
        seen: dict[str, object] = {}
        entered = asyncio.Event()

        async def stage() -> None:
            async with stage_lock(path, store):
                entered.set()
                seen["held"] = (await locks.stats.remote())["held"]
                if await asyncio.to_thread(store.fs.exists, name):
                    seen["object"] = json.loads(await asyncio.to_thread(store.fs.cat_file, name))["holder"]

        assert await locks.acquire.remote(name, "other-worker")
        task = asyncio.create_task(stage())
        while not entered.is_set() and (await locks.stats.remote())["longest_silence"] == 0:  # asked twice
            await asyncio.sleep(0.05)
        seen["entered while held elsewhere"] = entered.is_set()
        await locks.release.remote(name, "other-worker")
        await asyncio.wait_for(task, 120)
        seen["after"] = (await locks.stats.remote())["held"]
        return seen

    use_lock_service(ActorLocks(locks, leases.holder()))
    try:
        seen = asyncio.run(scenario())
    finally:
        use_lock_service(None)
        ray.kill(locks)
    assert seen["entered while held elsewhere"] is False
    assert seen["held"] == {name: leases.holder()}
    assert seen.get("object") == (leases.holder() if scheme == "s3" else None)
    assert seen["after"] == {} and not [k for k in s3_keys(s3) if k.endswith(".lock")]  # all given back


def test_a_task_travels_by_content_without_generated_folders(tmp_path):
    task = tmp_path / "suite" / "re-demo"
    (task / "app" / "node_modules" / "x").mkdir(parents=True)
    (task / "app" / "node_modules" / "x" / "big.js").write_text("installed")
    (task / "app" / "dist").mkdir()
    (task / "app" / "index.html").write_text("<p>hi</p>")
    (task / "task.yaml").write_text("id: re-demo")
    archive = pack(task)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert sorted(tar.getnames()) == ["re-demo", "re-demo/app", "re-demo/app/index.html", "re-demo/task.yaml"]
    first = unpack(archive, tmp_path / "node-cache")
    assert first.name == "re-demo" and (first / "app" / "index.html").read_text() == "<p>hi</p>"
    assert unpack(archive, tmp_path / "node-cache") == first  # once per node: the same folder
    (task / "app" / "index.html").write_text("<p>changed</p>")
    assert unpack(pack(task), tmp_path / "node-cache") != first  # another content, another folder
    assert not [p for p in (tmp_path / "node-cache").iterdir() if p.name.startswith(".")]  # no partial extraction


def test_a_real_task_unpacked_loads_with_the_same_hash(tmp_path):
    from codesign.tasks.loader import load_task

    source = load_task(SUITE / "me-bakery-header-mockup")
    copy = load_task(unpack(pack(source.dir), tmp_path))
    assert copy.content_hash == source.content_hash and copy.solver_hash == source.solver_hash


def test_keys_in_the_runtime_env_are_refused_with_the_way_to_pass_them():
    from codesign.execute.ray_pool import RayExecutor

    executor = RayExecutor(runtime_env={"env_vars": {"OPENAI_API_KEY": "sk-x", "LOG_LEVEL": "info"}})
    with pytest.raises(ConfigError, match="OPENAI_API_KEY") as err:
        executor.run([{"task_id": "t"}], print)
    assert "executor.env_from_driver=[OPENAI_API_KEY]" in err.value.hint and "LOG_LEVEL" not in str(err.value)


def test_a_dead_workers_endpoint_slots_are_freed():
    """An actor that dies mid-call never releases its endpoint slot: the pool frees them by holder."""
    from codesign.solve.models.limits import EndpointSlots

    async def scenario() -> tuple[int, int, bool]:
        slots = EndpointSlots(limit=2)
        await slots.acquire("dead-worker")
        await slots.acquire("live-worker")
        blocked = asyncio.create_task(slots.acquire("live-worker"))
        await asyncio.sleep(0.05)
        waiting = not blocked.done()
        freed = await slots.release_holder("dead-worker")
        await asyncio.wait_for(blocked, 5)
        await slots.release("dead-worker")  # a late release of a freed slot changes nothing
        return freed, slots.in_flight, waiting

    freed, in_flight, waiting = asyncio.run(scenario())
    assert waiting and freed == 1 and in_flight == 2


def test_wandb_goes_online_whenever_wandb_itself_would(tmp_path, monkeypatch):
    from codesign.track.wandb import resolve_mode, sweep_group

    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    assert resolve_mode("auto") == "offline"  # no credentials anywhere
    monkeypatch.setenv("WANDB_BASE_URL", "https://wandb.example.test")
    (tmp_path / "netrc").write_text("machine wandb.example.test\n  login user\n  password local-api-key-0123\n")
    assert resolve_mode("auto") == "online"  # what `wandb login` leaves behind
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert resolve_mode("auto") == "disabled" and resolve_mode("offline") == "offline"
    assert sweep_group("MULTIRUN", "outputs/multirun/2026-12-01/16-12-25", None) == "2026-12-01/16-12-25"
    assert sweep_group("MULTIRUN", "outputs/multirun/2026-12-01/16-12-25", "main_results") == "main_results"
    assert sweep_group("RUN", "outputs/multirun/x/y", "main_results") is None


def test_an_archive_that_escapes_its_folder_is_refused_without_tar_filters(tmp_path):
    """Python before 3.11.4 has no extraction filters: the fallback refuses the same entries by hand."""
    from codesign.tasks.archive import _refuse_unsafe

    for name, link in (("task/../../evil", None), ("/etc/evil", None), ("task/link", "../../outside")):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            info = tarfile.TarInfo(name)
            if link:
                info.type, info.linkname = tarfile.SYMTYPE, link
            tar.addfile(info, io.BytesIO(b""))
        with tarfile.open(fileobj=io.BytesIO(buf.getvalue())) as tar, pytest.raises(ValueError, match="unsafe"):
            _refuse_unsafe(tar)
    with tarfile.open(fileobj=io.BytesIO(pack(SUITE / "me-bakery-header-mockup"))) as tar:
        _refuse_unsafe(tar)  # a real task passes


# --- two writers on one s3:// store ----------------------------------------------------------------------------

EDIT = '<edit path="index.html"><search>Come again soon</search><replace>Thanks for visiting</replace></edit>'


def _solve_on_s3(folder: Path, env: dict[str, str], suite: Path, api_base: str, seeds: str) -> subprocess.Popen:
    """``python -m codesign`` solving ``seeds`` of the suite on the s3:// store (executor=inline: its only
    exclusion from another command is the store's lock objects)."""
    from tests.test_judge import KEY_ENV

    folder.mkdir()
    command = [sys.executable, "-m", "codesign", "model=litellm", "model.name=scripted", "model.model=openai/scripted",
               f"model.api_base={api_base}", f"model.api_key_env={KEY_ENV}", "regime=single_shot",
               "stages.evaluate=false", "tasks=all", f"tasks.root={suite}", f"seeds={seeds}", "executor=inline",
               "tracker=none", f"store.root=s3://{S3_BUCKET}/store", f"hydra.run.dir={folder / 'run'}"]  # fmt: skip
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_commands_writing_one_s3_store_at_once_solve_each_trial_once(s3, tmp_path):
    """Two commands on one bucket at the same time, over grids that overlap (seeds 0-2 and 1-3): each writes
    the trials only it has, and of the two shared ones each is solved by whichever takes its lock first while
    the other waits and reuses it. Every model call is held until both commands are in (one waits for a lock
    the other holds): 4 calls in all, from both processes, 4 whole results in the bucket, and both commands'
    tables agree on them."""
    import polars as pl

    from codesign.testing.model_server import Reply, ScriptedModelServer
    from tests.test_judge import KEY_ENV, make_task

    suite = make_task(tmp_path / "suite")
    someone_waits = threading.Event()
    guard = threading.Lock()
    callers: list[int] = []

    def policy(req) -> Reply:
        caller = caller_pid(req.peer, server.url)
        with guard:
            callers.append(caller)
        # Held until a command waits on the other's lock (or, were there no exclusion, both solve every key).
        deadline = time.monotonic() + 240
        while not someone_waits.is_set() and len(callers) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        return Reply(EDIT)

    def on_line(line: str) -> None:
        if "waiting for the solve" in line:
            someone_waits.set()

    with ScriptedModelServer(policy) as server:
        env = {**os.environ, **s3, KEY_ENV: "sk-test"}
        procs = {name: _solve_on_s3(tmp_path / name, env, suite, server.openai_base, seeds)
                 for name, seeds in (("a", "[0,1,2]"), ("b", "[1,2,3]"))}  # fmt: skip
        outputs = {name: stream_lines(p, on_line) for name, p in procs.items()}
        codes = [p.wait(timeout=600) for p in procs.values()]
        for reader, _ in outputs.values():
            reader.join(60)
    logs = {name: "".join(lines) for name, (_, lines) in outputs.items()}
    assert codes == [0, 0], logs
    assert someone_waits.is_set(), logs  # the two really met on a key
    assert len(callers) == 4, logs  # each of the 4 trials solved once
    assert set(callers) == {procs["a"].pid, procs["b"].pid}  # by both writers
    tables = {n: pl.read_parquet(tmp_path / n / "run" / "tasks.parquet").sort("seed") for n in ("a", "b")}
    assert [t.height for t in tables.values()] == [3, 3]
    assert all(set(t["status"]) == {"solved"} for t in tables.values())
    shared = [tables[n].filter(pl.col("seed").is_in(["1", "2"]))["trial_key"].to_list() for n in ("a", "b")]
    assert shared[0] == shared[1]  # one key per trial, whoever solved it
    keys = set(tables["a"]["trial_key"]) | set(tables["b"]["trial_key"])
    assert len(keys) == 4
    stored = s3_keys(s3)
    assert not [k for k in stored if k.endswith(".lock")]  # every lock object released
    assert sorted(k.split("/")[2] for k in stored if k.endswith("/solve.json")) == sorted(keys)
    store = Store(f"s3://{S3_BUCKET}/store", staging=tmp_path / "reader")
    for key in keys:  # whole results: the marker parses, the patch is the one the model wrote
        solve = json.loads(store.read_bytes(f"trials/{key}/solve.json") or b"")
        assert solve["telemetry"]["exit_status"] == "submitted", solve
        patch = (store.read_bytes(f"trials/{key}/patch.diff") or b"").decode()
        assert '+<p class="note">Thanks for visiting</p>' in patch, patch
