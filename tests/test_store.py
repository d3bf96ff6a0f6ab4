"""The store by URI (a folder or object storage through fsspec), tasks packed by content, and what the Ray
executor refuses before it starts anything."""

from __future__ import annotations

import asyncio
import io
import tarfile

import pytest

from codesign.errors import ConfigError
from codesign.store import Store, is_remote, stage_lock
from codesign.tasks.archive import pack, unpack
from tests.helpers import REPO

SUITE = REPO / "codesign" / "suite"


def test_uris_name_local_folders_or_object_storage(tmp_path):
    assert not is_remote("outputs/store") and not is_remote(f"file://{tmp_path}") and is_remote("s3://b/p")
    assert Store(f"file://{tmp_path}/s").root == tmp_path / "s"
    assert Store("memory://bucket/store", staging=tmp_path / "stage").remote
    with pytest.raises(ConfigError, match=r"not installed|not understood") as err:
        Store("nosuchfs://bucket/x")
    assert "pip install" in err.value.hint or "s3://" in err.value.hint


def test_object_storage_exchanges_one_stage_marker_last(tmp_path):
    """fsspec's in-memory filesystem stands in for a bucket: a stage's files go up with the marker last, a
    node's stale copy of a marker the store lacks is removed, and reads need no local file."""
    store = Store("memory://codesign-test/store", staging=tmp_path / "node-a")
    trial = store.trial_dir("abc")
    (trial / "evals" / "e1").mkdir(parents=True)
    (trial / "patch.diff").write_text("diff")
    (trial / "solve.json").write_text("{}")
    (trial / ".solve.lock").write_text("")
    (trial / "evals" / "e1" / "evaluation.json").write_text("{}")
    written: list[str] = []
    pipe = store.fs.pipe_file
    store.fs.pipe_file = lambda path, data: (written.append(path.rsplit("/", 1)[-1]), pipe(path, data))
    store.push(trial, last="solve.json", skip=("evals",))
    assert written == ["patch.diff", "solve.json"]  # no lock file, no evaluation, the marker last
    other = Store("memory://codesign-test/store", staging=tmp_path / "node-b")  # another node's view
    folder = other.trial_dir("abc")
    other.pull(folder, ["solve.json", "patch.diff"])
    assert (folder / "patch.diff").read_text() == "diff"
    (folder / "evals" / "e1").mkdir(parents=True)
    (folder / "evals" / "e1" / "evaluation.json").write_text("{}")  # a copy from a stage that never finished
    other.pull(folder / "evals" / "e1", ["evaluation.json"])
    assert not (folder / "evals" / "e1" / "evaluation.json").exists()
    assert other.read_bytes("trials/abc/patch.diff") == b"diff" and other.read_bytes("trials/none") is None


def test_a_remote_stage_lock_uses_the_runs_lock_service(tmp_path):
    from codesign.store import use_lock_service

    taken: list[str] = []

    class Service:
        async def acquire(self, name: str) -> None:
            taken.append("acquire " + name)

        async def release(self, name: str) -> None:
            taken.append("release " + name)

    store = Store("memory://codesign-test/locks", staging=tmp_path)
    use_lock_service(Service())
    try:

        async def hold() -> None:
            async with stage_lock(store.trial_dir("k") / ".solve.lock", store):
                taken.append("work")

        asyncio.run(hold())
    finally:
        use_lock_service(None)
    assert taken == ["acquire /codesign-test/locks/trials/k/.solve.lock", "work",
                     "release /codesign-test/locks/trials/k/.solve.lock"]  # fmt: skip


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
