"""Nothing waits forever on the dead: endpoint slots and stage locks are leases (codesign.leases), freed when
their holder is declared dead or stops renewing; on S3 stage locks are objects taken with conditional writes
(codesign.object_lock), so two commands on one bucket exclude each other; the attribution gate is single-flight
across processes. Real parts: the session's Ray, a moto S3 server on loopback, the scripted model server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from codesign import leases
from codesign.solve.models.limits import ACTOR_PREFIX, EndpointSlots, endpoint_key, endpoint_slot, endpoint_slot_async
from codesign.testing.model_server import Reply, ScriptedModelServer
from tests.conftest import S3_BUCKET as BUCKET
from tests.helpers import REPO, caller_pid, stream_lines
from tests.test_judge import KEY_ENV, make_task

EDIT = '<edit path="index.html"><search>Come again soon</search><replace>Thanks for visiting</replace></edit>'


@pytest.fixture
def short_leases() -> Iterator[float]:
    """A short lease in this process, so expiry is seen in a test: 4 s (renewals every 1/3 s), far above the
    scheduling delays of a loaded machine (~1 s measured at a load average of ~45)."""
    leases.set_lease_seconds(4.0)
    yield 4.0
    leases.set_lease_seconds(None)


def s3_keys(env: dict[str, str]) -> list[str]:
    import boto3

    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    return [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def fresh_fs():
    import s3fs

    return s3fs.S3FileSystem(skip_instance_cache=True)


# --- endpoint slots and stage locks: the keepers' side ------------------------------------------------------


def test_an_acquire_parked_for_a_worker_declared_dead_gives_its_slot_back():
    """Worker X waits for the only slot and dies; the pool frees X (release_holder) before X's acquire gets
    the slot. The acquire completes later — and must hand the slot back, or the endpoint is gone for good."""

    async def scenario() -> tuple[object, dict, bool | None]:
        slots = EndpointSlots(limit=1, lease_s=60)
        await slots.acquire("busy")
        parked = asyncio.create_task(slots.acquire("dead"))
        while (await slots.stats())["waiting"] < 1:
            await asyncio.sleep(0)
        await slots.release_holder("dead")  # the pool learned of its death
        await slots.release("busy")  # the slot frees: the dead worker's acquire is first in line
        granted = await parked
        after = await slots.stats()
        if after["in_flight"]:  # the slot is lost: a live acquire would wait forever
            return granted, after, None
        late = asyncio.create_task(slots.acquire("dead"))  # a call of the dead worker still in transit
        with pytest.raises(leases.LeaseLost):
            await late
        return granted, after, await slots.acquire("live")

    granted, after, live = asyncio.run(scenario())
    assert granted is False  # not granted ...
    assert after["in_flight"] == 0 and after["holders"] == {}  # ... and the slot is back
    assert live is True


def test_a_holder_that_stops_renewing_loses_its_slot_and_one_that_renews_keeps_it(ray_instance, short_leases):
    """No pool: a keeper actor with a short lease. A silent holder's slot is freed once its lease lapses
    (a live caller then gets it); the live caller, renewed by this process's renewal thread, keeps its slot
    while a second silent holder, parked behind it, lapses; that parked acquire gives its slot back."""
    import ray

    model, api_base = "openai/lease-test", f"http://lease-test/{os.getpid()}/{time.monotonic_ns()}"
    key = endpoint_key(model, api_base)
    keeper = ray.remote(EndpointSlots).options(name=ACTOR_PREFIX + key, max_concurrency=100).remote(1, short_leases)
    try:
        assert ray.get(keeper.acquire.remote("silent"))  # holds the only slot, and is never heard from again
        inside, leave = threading.Event(), threading.Event()

        def live_call() -> None:
            with endpoint_slot(model, api_base, 1):
                inside.set()
                leave.wait(120)

        caller = threading.Thread(target=live_call, daemon=True)
        caller.start()
        assert inside.wait(60), ray.get(keeper.stats.remote())  # the silent holder's slot came free
        parked = keeper.acquire.remote("silent-2")  # waits behind the live caller, never renews
        while "silent-2" not in ray.get(keeper.stats.remote())["lapsed"]:  # silent for a whole lease
            time.sleep(0.05)
        stats = ray.get(keeper.stats.remote())
        assert stats["holders"] == {leases.holder(): 1}  # the live caller outlived a whole lease of silence
        leave.set()
        caller.join(60)
        assert ray.get(parked, timeout=60) is False  # lapsed while parked: the slot went back
        assert ray.get(keeper.stats.remote())["in_flight"] == 0
        assert ray.get(keeper.renew.remote("silent")) == "lapsed"  # told, should it ever come back
    finally:
        ray.kill(keeper)


@pytest.mark.parametrize("keeper", ["process", pytest.param("ray", marks=pytest.mark.xdist_group("ray"))])
def test_threads_and_coroutines_share_an_endpoints_slots(keeper, request):
    """The sync and the async slot hold the same slots: without Ray this process's semaphore, with Ray the
    endpoint's keeper. Three threads and three coroutines, one slot: never two calls at once."""
    model, api_base = "openai/shared-slots", f"http://shared-slots/{keeper}/{time.monotonic_ns()}"
    actor = None
    if keeper == "ray":
        import ray

        request.getfixturevalue("ray_instance")
        actor = ray.remote(EndpointSlots).options(name=ACTOR_PREFIX + endpoint_key(model, api_base)).remote(1)
    state = {"now": 0, "peak": 0, "calls": 0}
    guard = threading.Lock()

    def call() -> None:
        with guard:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.01)
        with guard:
            state["now"] -= 1
            state["calls"] += 1

    def in_a_thread() -> None:
        for _ in range(5):
            with endpoint_slot(model, api_base, 1):
                call()

    async def in_coroutines() -> None:
        async def one() -> None:
            for _ in range(5):
                async with endpoint_slot_async(model, api_base, 1):
                    await asyncio.to_thread(call)

        await asyncio.gather(one(), one(), one())

    threads = [threading.Thread(target=in_a_thread) for _ in range(3)]
    for t in threads:
        t.start()
    asyncio.run(in_coroutines())
    for t in threads:
        t.join(60)
    try:
        assert state == {"now": 0, "peak": 1, "calls": 30}
        if actor is not None:
            import ray

            # A release is sent without waiting for it (the caller goes on), and the keeper is an async actor:
            # the last one may still be on its way when the calls have ended. Wait on that state, bounded.
            deadline = time.monotonic() + 120
            while (stats := ray.get(actor.stats.remote()))["in_flight"] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert stats["peak"] == 1 and stats["in_flight"] == 0  # every call went through the keeper
    finally:
        if actor is not None:
            ray.kill(actor)


def test_a_stage_lock_of_a_silent_holder_lapses(ray_instance, short_leases):
    import ray

    from codesign.execute.ray_actors import ActorLocks, StageLocks

    locks = ray.remote(StageLocks).options(max_concurrency=100).remote(short_leases)
    try:
        assert ray.get(locks.acquire.remote("trials/k/.solve.lock", "silent"))
        assert not ray.get(locks.acquire.remote("trials/k/.solve.lock", "waiter"))  # held
        asyncio.run(asyncio.wait_for(ActorLocks(locks, "waiter").acquire("trials/k/.solve.lock"), 60))
        assert ray.get(locks.stats.remote())["held"] == {"trials/k/.solve.lock": "waiter"}
        ray.get(locks.release_holder.remote("waiter"))
        assert ray.get(locks.released.remote("waiter")) and not ray.get(locks.released.remote("silent"))
        with pytest.raises(ray.exceptions.RayTaskError, match="declared dead"):
            ray.get(locks.acquire.remote("trials/other/.solve.lock", "waiter"))
    finally:
        ray.kill(locks)


# --- lock objects in S3 ---------------------------------------------------------------------------------------


def test_a_lock_object_is_kept_by_renewals_and_taken_over_once_they_stop(s3, short_leases):
    from codesign.object_lock import ObjectLock, hold

    fs = fresh_fs()
    path = f"{BUCKET}/store/trials/k/.solve.lock"

    def beat() -> int:
        try:
            return json.loads(fs.cat_file(path))["beat"]
        except FileNotFoundError:  # released already
            return -1

    async def scenario() -> tuple[bool, list[str]]:
        order: list[str] = []
        entered, leave = asyncio.Event(), asyncio.Event()

        async def holder() -> None:
            async with hold(fs, path):
                order.append("holder in")
                entered.set()
                await leave.wait()
                order.append("holder out")

        async def waiter() -> None:
            async with hold(fs, path):
                order.append("waiter in")

        first = asyncio.create_task(holder())
        await entered.wait()
        second = asyncio.create_task(waiter())
        while not second.done() and await asyncio.to_thread(beat) < 2 * leases.RENEWALS_PER_LEASE:  # two leases
            await asyncio.sleep(0.05)
        kept = not second.done()
        leave.set()
        await asyncio.gather(first, second)
        return kept, order

    kept, order = asyncio.run(scenario())
    assert kept and order == ["holder in", "holder out", "waiter in"]
    assert not fs.exists(path)  # released: the object is gone

    silent = ObjectLock(fs, path, "silent")  # takes the lock and stops renewing (a SIGKILLed process)
    assert silent.create() and not ObjectLock(fs, path, "other").create()

    async def take() -> str:
        async with hold(fs, path):
            return json.loads(await asyncio.to_thread(fs.cat_file, path))["holder"]

    assert asyncio.run(take()) == leases.holder()  # taken over once its ETag stood still for a lease
    assert silent.renew() is False  # the silent one learns, should it wake, that the lock is gone


def test_two_commands_on_one_s3_store_solve_each_key_once(s3, tmp_path):
    """Two `python -m codesign` commands (executor=inline: no lock actor) on one s3:// store and the same trial:
    the first holds the solve until the second is seen waiting for it (or, were there no exclusion, until the
    second's own solve call arrives); one solve call in all, the second command reuses the stored solve."""
    suite = make_task(tmp_path / "suite")
    waiting = threading.Event()
    first: list[object] = []

    def policy(req):
        first.append(req)
        if len(first) == 1:
            waiting.wait(240)  # released by the second command's waiting line, or by a second call
        else:
            waiting.set()
        return Reply(EDIT)

    with ScriptedModelServer(policy) as server:
        env = {**os.environ, **s3, KEY_ENV: "sk-test"}
        procs = [_codesign(tmp_path / name, env, suite, server.openai_base) for name in ("a", "b")]
        outputs = [stream_lines(p, lambda line: "waiting for the solve" in line and waiting.set()) for p in procs]
        codes = [p.wait(timeout=600) for p in procs]
        for t, _ in outputs:
            t.join(60)
    logs = ["".join(lines) for _, lines in outputs]
    assert codes == [0, 0], logs
    assert len(first) == 1, logs  # one solve call for the one key
    assert any("waiting for the solve" in log for log in logs)
    rows = pl.concat([pl.read_parquet(tmp_path / n / "run" / "tasks.parquet") for n in ("a", "b")])
    assert rows["trial_key"].n_unique() == 1 and set(rows["status"]) == {"solved"}
    keys = s3_keys(s3)
    assert sum(k.endswith("/solve.json") for k in keys) == 1
    assert not [k for k in keys if k.endswith(".lock")]  # every lock object was released


def _codesign(folder: Path, env: dict[str, str], suite: Path, api_base: str) -> subprocess.Popen:
    folder.mkdir()
    command = [sys.executable, "-m", "codesign", "model=litellm", "model.name=scripted", "model.model=openai/scripted",
               f"model.api_base={api_base}", f"model.api_key_env={KEY_ENV}", "regime=single_shot",
               "stages.evaluate=false", "tasks=all", f"tasks.root={suite}", "executor=inline", "tracker=none",
               f"store.root=s3://{BUCKET}/store", f"hydra.run.dir={folder / 'run'}"]  # fmt: skip
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_store_that_ignores_conditional_writes_is_refused_before_any_trial(tmp_path, monkeypatch):
    """An S3-compatible server that ignores If-None-Match / If-Match (moto behind a proxy that drops those
    headers, as an old server would) could not keep two writers apart: the node check names it and says why."""
    import s3fs
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    from codesign.execute.prerequisites import NodeRequirements, node_problems

    moto_app = DomainDispatcherApplication(create_backend_app)

    def without_conditions(environ, start_response):
        environ.pop("HTTP_IF_NONE_MATCH", None)
        environ.pop("HTTP_IF_MATCH", None)
        return moto_app(environ, start_response)

    server = make_server("127.0.0.1", 0, without_conditions, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    for k, v in {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():  # fmt: skip
        monkeypatch.setenv(k, v)
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        import boto3

        boto3.client("s3", endpoint_url=url).create_bucket(Bucket=BUCKET)
        problems = node_problems(NodeRequirements(f"s3://{BUCKET}/old-server", None, str(tmp_path / "nm")))
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        server.shutdown()
    unsound = [p for p in problems if "conditional writes" in p]
    assert len(unsound) == 1 and "If-None-Match" in unsound[0] and "AWS S3" in unsound[0], problems


# --- the attribution gate, across processes ------------------------------------------------------------------

GATE_SCRIPT = """
import asyncio, json, sys, types
from pathlib import Path
import codesign.store as store_module
from codesign.evaluate import attribution
from codesign.runtime.browser import Browser
from codesign.tasks.loader import load_task

role, task_dir, store, cache, sync = sys.argv[1:6]
sync = Path(sync)
real_validate, real_flock, fcntl = attribution.validate_task, store_module.fcntl.flock, store_module.fcntl

async def counted(*args, **kwargs):  # the real gate, counted; the first waits until the second has come
    with open(sync / "runs", "a") as f:
        f.write(role + "\\n")
    if role == "first":
        (sync / "first-started").touch()
        while not (sync / "second-waiting").exists() and "second" not in (sync / "runs").read_text():
            await asyncio.sleep(0.05)
    return await real_validate(*args, **kwargs)

def flock(handle, op):  # the real flock; the second says when it finds the gate's lock taken
    try:
        return real_flock(handle, op)
    except BlockingIOError:
        if role == "second" and handle.name.endswith(".gate.lock"):
            (sync / "second-waiting").touch()
        raise

attribution.validate_task = counted
store_module.fcntl = types.SimpleNamespace(flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB,
                                           LOCK_UN=fcntl.LOCK_UN)

async def main():
    if role == "second":
        while not (sync / "first-started").exists():
            await asyncio.sleep(0.05)
    browser = Browser()
    try:
        gate = await attribution.task_gate(load_task(Path(task_dir)), browser, Path(cache), Path(store))
    finally:
        await browser.close()
    print("GATE " + json.dumps(gate, sort_keys=True))

asyncio.run(main())
"""


@pytest.mark.browser
def test_the_task_gate_runs_once_across_two_processes(tmp_path, node_cache):
    """Two processes gate one task on one store at the same time: the second finds the gate's lock taken and
    waits for the first's verdict instead of validating the task again."""
    task = make_task(tmp_path / "suite") / "counter"
    sync = tmp_path / "sync"
    sync.mkdir()
    store = tmp_path / "store"
    procs = [subprocess.Popen([sys.executable, "-c", GATE_SCRIPT, role, str(task), str(store), str(node_cache),
                               str(sync)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for role in ("first", "second")]  # fmt: skip
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert (sync / "runs").read_text().split() == ["first"], outputs  # validated once, by the first
    gates = [next(line for line in out.splitlines() if line.startswith("GATE ")) for out in outputs]
    assert gates[0] == gates[1] and not json.loads(gates[0][5:])["transient"]  # one verdict, decided and kept
    assert len(list(store.glob("tasks/*/gate.json"))) == 1


# --- a worker killed mid-call ---------------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.browser
@pytest.mark.slow
def test_a_worker_killed_mid_call_loses_no_slot_and_no_lock(ray_instance, s3, tmp_path):
    """Two actors, two trials each, one model call at a time (model.max_concurrency=1), the store on S3. Once
    the three other trials wait for the slot, the worker making the call is SIGKILLed: it held the endpoint's
    slot and its trial's solve lock (in the lock actor and as an object in the bucket), and its second trial
    was waiting for the slot. The grid finishes — every trial exactly once — with one call at a time
    throughout. The lease is an hour long: only the pool's release of the dead worker can free what it held."""
    import ray

    suite = make_task(tmp_path / "suite")
    tracked = {"in_flight": 0, "peak": 0, "calls": 0}
    killed: list[int] = []
    guard = threading.Lock()

    def parked_waiters() -> int:
        names = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(ACTOR_PREFIX)]
        stats = [ray.get(ray.get_actor(a["name"], namespace=a["namespace"]).stats.remote()) for a in names]
        return max((s["waiting"] for s in stats), default=0)

    def policy(req):
        with guard:
            tracked["calls"] += 1
            tracked["in_flight"] += 1
            tracked["peak"] = max(tracked["peak"], tracked["in_flight"])
        if not killed:
            while parked_waiters() < 3:  # every other trial is waiting for the slot, the caller's second too
                time.sleep(0.1)
            caller = caller_pid(req.peer, server.url)
            with guard:
                tracked["in_flight"] -= 1  # its call ends here: the slot is the pool's to free
            killed.append(caller)
            os.kill(caller, signal.SIGKILL)
            return Reply(EDIT)
        time.sleep(0.3)  # a call that takes a while: another in flight now would be seen
        with guard:
            tracked["in_flight"] -= 1
        return Reply(EDIT)

    with ScriptedModelServer(policy) as server:
        names = "AWS_ENDPOINT_URL,AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY,AWS_DEFAULT_REGION"
        env = {**os.environ, **s3, KEY_ENV: "sk-test", leases.LEASE_ENV: "3600",
               "RAY_ADDRESS": ray.get_runtime_context().gcs_address}  # fmt: skip
        command = [sys.executable, "-m", "codesign", "model=litellm", "model.name=scripted",
                   "model.model=openai/scripted", f"model.api_base={server.openai_base}",
                   f"model.api_key_env={KEY_ENV}", "model.max_concurrency=1", "regime=single_shot",
                   "stages.evaluate=false", "seeds=[0,1,2,3]", "tasks=all", f"tasks.root={suite}", "executor=ray",
                   "executor.num_workers=2", "executor.max_concurrency=2", f"executor.env_from_driver=[{names}]",
                   "tracker=none", f"store.root=s3://{BUCKET}/store", f"hydra.run.dir={tmp_path / 'run'}"]  # fmt: skip
        proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert killed, "no worker was killed"
    tasks = pl.read_parquet(tmp_path / "run" / "tasks.parquet")
    assert tasks.height == 4 and tasks.select("task_id", "seed").unique().height == 4  # each trial exactly once
    assert set(tasks["status"]) == {"solved"}, tasks.select("status", "message")
    assert tasks["retries"].sum() >= 1  # the killed worker's trials ran again elsewhere
    # 5 calls: the killed one, the survivor's two, and the killed worker's two trials again on its replacement
    assert tracked["calls"] == 5 and tracked["peak"] == 1  # one call at a time, before and after the kill
    keys = s3_keys(s3)
    assert sum(k.endswith("/solve.json") for k in keys) == 4 and not [k for k in keys if k.endswith(".lock")]


# --- a dead worker's stage locks --------------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.parametrize("death", ["SIGKILL", "ray.kill"])
def test_a_dead_workers_stage_lock_goes_to_the_next_acquirer(death, ray_instance, s3, tmp_path, short_leases, caplog):
    """A real trial worker (``TrialWorker``, as the pool starts it: its holder name, the run's lock actor, its
    renewal thread) takes a stage lock on the s3:// store — the lock actor's and the lock object in the bucket
    — and dies with it, its process SIGKILLed or its actor killed. No pool is there to declare it dead: its
    leases alone free it. While it lives it keeps the lock through two whole leases with this process waiting;
    once dead, the waiter gets both locks, the lock object by taking it over from a silent holder."""
    import logging

    import ray

    from codesign.execute.ray_actors import ActorLocks, StageLocks, TrialWorker
    from codesign.store import Store, stage_lock, use_lock_service

    class DoomedWorker(TrialWorker):
        """A trial worker that holds one stage lock until it dies."""

        async def hold(self, store_uri: str, staging: str) -> None:
            store = Store(store_uri, staging=staging)
            async with stage_lock(store.trial_dir("k") / ".solve.lock", store):
                self.inside = True
                await asyncio.Event().wait()

        async def holding(self) -> bool:
            return getattr(self, "inside", False)

        async def pid(self) -> int:
            return os.getpid()

    store = Store(f"s3://{BUCKET}/store", staging=tmp_path / "driver")
    path = store.trial_dir("k") / ".solve.lock"
    name = store._remote(path)
    fs = fresh_fs()
    locks = ray.remote(StageLocks).options(max_concurrency=100).remote(short_leases)
    doomed_holder = "doomed-worker-" + death
    worker = ray.remote(DoomedWorker).options(num_cpus=0, runtime_env={"env_vars": s3})
    worker = worker.remote(None, 2, None, locks, doomed_holder, short_leases)

    def beat() -> int:
        return json.loads(fs.cat_file(name))["beat"]

    async def scenario() -> dict[str, object]:
        seen: dict[str, object] = {}
        held_ref = worker.hold.remote(store.uri, str(tmp_path / "worker"))
        while not await worker.holding.remote():
            await asyncio.sleep(0.05)
        pid = await worker.pid.remote()
        got = asyncio.Event()

        async def next_acquirer() -> None:
            async with stage_lock(path, store):
                got.set()
                seen["actor"] = (await locks.stats.remote())["held"]
                seen["object"] = json.loads(await asyncio.to_thread(fs.cat_file, name))["holder"]

        waiter = asyncio.create_task(next_acquirer())
        start = await asyncio.to_thread(beat)
        while await asyncio.to_thread(beat) < start + 2 * leases.RENEWALS_PER_LEASE:  # two leases of renewals
            assert not got.is_set(), "a live holder's lock was taken"
            await asyncio.sleep(0.05)
        seen["kept while alive"] = (await locks.stats.remote())["held"]
        if death == "SIGKILL":
            os.kill(pid, signal.SIGKILL)
        else:
            ray.kill(worker)
        with pytest.raises(ray.exceptions.RayActorError):
            await held_ref  # it is dead, and released nothing
        await asyncio.wait_for(waiter, 120)
        return seen

    caplog.set_level(logging.WARNING, logger="codesign.object_lock")
    use_lock_service(ActorLocks(locks, leases.holder()))  # this process is the next worker, renewing as one
    leases.renewals().add("test stage locks", leases.renew_with_actor(locks, leases.holder(), "stage locks"))
    try:
        seen = asyncio.run(scenario())
        released = ray.get(locks.released.remote(doomed_holder))
        standing = ray.get(locks.renew.remote(doomed_holder))  # as a late renewal of the dead would be answered
    finally:
        leases.renewals().discard("test stage locks")
        use_lock_service(None)
        ray.kill(locks)
        ray.kill(worker)
    assert seen["kept while alive"] == {name: doomed_holder}
    assert seen["actor"] == {name: leases.holder()} and seen["object"] == leases.holder()
    assert released is False and standing == "lapsed"  # freed by its silence, not by a pool that saw it die
    assert not fs.exists(name)  # and released by the next acquirer in turn
    took_over = [r.getMessage() for r in caplog.records if "took over" in r.getMessage()]
    assert len(took_over) == 1 and doomed_holder[:12] in took_over[0] and "silent for 4 s" in took_over[0], took_over
