"""Run trials on Ray: a few async actors per node, each running many trials as coroutines.

Trials wait on models and browsers, not CPUs. Measured here on latency-bound work: one Ray task per
trial reached 6% of ideal throughput, an async actor ~90%. So each actor keeps one browser and runs
up to ``max_concurrency`` trials at once; results stream back as they finish.

On a cluster (docs/cluster.md): actors are spread over the nodes that have room for them (CPU, memory
and one ``browser`` each), and each checks its node before its first trial — a node that fails is
named and drained. Task folders travel by content through Ray's object store; the store is a URI every
node reaches. An actor that dies (its node lost, a crash) is replaced on a live node, and the trials it
had in flight run again there — bounded by ``max_retries``, each re-run noted on the trial's record.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from codesign._types import Count, NonNegative, TrialRecord, TrialStatus
from codesign.errors import ConfigError, EnvironmentSetupError
from codesign.execute import Budget
from codesign.execute.prerequisites import NodeRequirements, needed_keys, store_token
from codesign.leases import lease_seconds
from codesign.solve.models.limits import endpoint_limits, start_slot_keepers

BROWSER = "browser"  # the custom resource one actor (one Chromium) takes; nodes declare how many they host


class TrialWorker:
    """A Ray actor body: one shared browser, many concurrent trials."""

    def __init__(self, browser_executable: str | None, max_concurrency: int = 8, browser_slots: int | None = None,
                 locks: Any = None, holder: str = "", lease_s: float | None = None) -> None:  # fmt: skip
        import ray

        from codesign import leases
        from codesign.runtime.browser import Browser
        from codesign.store import use_lock_service

        # Ray warns at the first blocking ray.get in an async actor, meaning its event loop; this actor calls
        # it only from threads (solves' endpoint slots, lease renewals), where it blocks nothing else.
        os.environ.setdefault("RAY_WARN_BLOCKING_GET_INSIDE_ASYNC", "0")
        self.browser = Browser(browser_executable, browser_slots)
        self.threads = max_concurrency + 4  # solves run in threads; the default pool is only cores + 4
        self.node = ray.get_runtime_context().get_node_id()
        # Everything this worker holds (endpoint slots, stage locks, lock objects in the store) is held under
        # the pool's name for it, and renewed from a thread of this process while it lives.
        leases.set_holder(holder or leases.holder())
        leases.set_lease_seconds(lease_s)
        if locks is not None:
            use_lock_service(_ActorLocks(locks, leases.holder()))
            leases.renewals().add("stage locks", leases.renew_with_actor(locks, leases.holder(), "stage locks"))

    async def run(self, spec: dict[str, Any], task_archive: bytes | None = None) -> TrialRecord:
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        from codesign.trial import TrialSpec, run_trial_safely

        if self.threads:  # once, on the actor's own event loop (and node: a killed run's scratch goes)
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(self.threads))
            self.threads = 0
            from codesign.sandbox import scratch

            scratch.sweep(spec.get("scratch_root"))
        if task_archive is not None:  # this node's copy of the task, by content
            from codesign.tasks.archive import unpack

            tasks_cache = Path(spec["node_cache"]).expanduser().parent / "tasks"
            spec = {**spec, "task_dir": str(await asyncio.to_thread(unpack, task_archive, tasks_cache))}
        record = await run_trial_safely(TrialSpec(**spec), self.browser)
        record.node = self.node
        return record

    async def check(self, requirements: dict[str, Any]) -> list[str]:
        """This node's missing prerequisites (empty when ready), the browser launched for real."""
        import asyncio
        import socket

        from codesign.errors import CodesignError
        from codesign.execute.prerequisites import node_problems

        problems = await asyncio.to_thread(node_problems, NodeRequirements(**requirements))
        try:
            await self.browser.get()
        except CodesignError as e:
            problems.append(f"{socket.gethostname()}: Chromium: {e}")
        return problems

    async def shutdown(self) -> None:
        await self.browser.close()


class StageLocks:
    """A Ray actor body: named exclusive locks, each held by one worker under a lease (``codesign.leases``).
    Object storage has no file locks, so the single flight of a stage across a run's nodes is kept here; a
    dead worker's locks are released by the driver (``release_holder``), or when its lease lapses."""

    def __init__(self, lease_s: float | None = None) -> None:
        from codesign import leases

        self.held: dict[str, str] = {}
        self.leases = leases.LeaseBook(lease_s)

    async def acquire(self, name: str, holder: str) -> bool:
        from codesign import leases

        self.leases.keep_reaping(self._free_holder)
        if self.leases.heard(holder) is leases.Standing.RELEASED:
            raise leases.LeaseLost(f"worker {holder[:12]} was declared dead; it takes no lock")
        if name in self.held:
            return False
        self.held[name] = holder
        return True

    async def release(self, name: str, holder: str) -> None:
        if self.held.get(name) == holder:
            del self.held[name]

    async def renew(self, holder: str) -> str:
        self.leases.keep_reaping(self._free_holder)
        return self.leases.heard(holder).value

    async def released(self, holder: str) -> bool:
        """Whether ``holder`` was declared dead (a lock object it left in the store may be taken over)."""
        return holder in self.leases.released

    async def release_holder(self, holder: str) -> int:
        self.leases.release(holder)
        return self._free_holder(holder)

    def _free_holder(self, holder: str) -> int:
        names = [n for n, h in self.held.items() if h == holder]
        for n in names:
            del self.held[n]
        return len(names)

    async def stats(self) -> dict[str, Any]:
        return {"held": dict(self.held), "longest_silence": self.leases.longest_silence}


@dataclass
class _ActorLocks:
    """The store's ``LockService`` on a worker: polls the run's ``StageLocks`` actor."""

    actor: Any
    holder: str

    async def acquire(self, name: str) -> None:
        import asyncio

        from codesign.store import LOCK_POLL_S

        while not await self.actor.acquire.remote(name, self.holder):
            await asyncio.sleep(LOCK_POLL_S)

    async def release(self, name: str) -> None:
        await self.actor.release.remote(name, self.holder)

    async def released(self, holder: str) -> bool:
        return await self.actor.released.remote(holder)


def use_token_auth(address: str) -> None:
    """Ray's token authentication, out of the box. A cluster started with a token (``ray start`` makes one
    when ``~/.ray/auth_token`` exists) admits only clients in token mode, and Ray does not switch a client
    to it by itself; a token-mode client of a cluster without tokens connects but cannot start actors
    (both seen with Ray 2.60). So unless ``RAY_AUTH_MODE`` says otherwise, the cluster is asked (one
    instant call to its GCS) and the client follows it."""
    if os.environ.get("RAY_AUTH_MODE") is not None or address == "local":
        return
    from ray.exceptions import AuthenticationError

    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
        from ray._raylet import GcsClient

        GcsClient(address=canonicalize_bootstrap_address_or_die(address)).internal_kv_get(b"codesign", None, timeout=30)
        return  # admitted without a token
    except AuthenticationError:
        pass
    except Exception:  # not reachable (yet), or a ray:// address: ray.init reports it in its own words
        return
    token_file = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or "~/.ray/auth_token").expanduser()
    if not (os.environ.get("RAY_AUTH_TOKEN") or token_file.is_file()):
        raise EnvironmentSetupError(
            f"the Ray cluster at {address} uses token authentication and this machine has no token",
            "export RAY_AUTH_TOKEN=<the output of `ray get-auth-token` on the head node> and run again",
        )
    from ray._raylet import Config

    os.environ["RAY_AUTH_MODE"] = "token"
    Config.initialize("")  # Ray read its mode at import: refresh it


def ensure_ray(address: str | None, num_cpus: int | None = None, runtime_env: dict | None = None,
               browsers: int | None = None) -> None:  # fmt: skip
    """Connect once per process: ``address`` / ``$RAY_ADDRESS`` for a cluster, else a new local instance
    (declaring ``browsers`` units of the ``browser`` resource).

    ``address="local"`` is explicit on purpose: a stale cluster file from a killed ``ray start`` makes a
    plain ``ray.init()`` hang for minutes (docs/cluster.md).
    """
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    target = address or os.environ.get("RAY_ADDRESS") or "local"
    use_token_auth(target)
    kwargs: dict[str, Any] = {"address": target, "logging_level": logging.WARNING, "runtime_env": runtime_env}
    if target == "local":
        kwargs |= {"include_dashboard": False, "num_cpus": num_cpus, "resources": {BROWSER: float(browsers or 2)}}
    # A loaded machine can miss Ray's own start-up deadline (30 s, fixed in Ray): one more try, then a hint.
    for attempt in (1, 2):
        try:
            ray.init(**kwargs)
            return
        except Exception as e:
            ray.shutdown()
            if attempt == 2:
                raise EnvironmentSetupError(
                    f"Ray did not start ({target}): {type(e).__name__}: {str(e)[:500]}",
                    "on a busy machine run without Ray (executor=inline); for a cluster check RAY_ADDRESS / "
                    "executor.address, and RAY_AUTH_TOKEN when the cluster uses token authentication",
                ) from e


def _retryable() -> tuple[type[BaseException], ...]:
    """Failures of the infrastructure under a trial (never of the trial itself): the trial runs again."""
    from ray import exceptions as rx

    return (rx.RayActorError, rx.WorkerCrashedError, rx.ObjectLostError, rx.NodeDiedError, rx.RaySystemError)


@dataclass
class _Worker:
    handle: Any
    node: str
    holder: str  # the name its stage locks are held under
    in_flight: int = 0
    ready: bool = False  # passed its node's self-check


@dataclass
class RayExecutor:
    address: str | None = None  # None: $RAY_ADDRESS, else a new local instance
    num_workers: Count | None = 2  # actors (each with its own browser); None: as many as the nodes have room for
    max_concurrency: Count = 8  # trials in flight per actor
    worker_num_cpus: Annotated[float, Field(ge=0)] = 0.5
    worker_memory_gb: Annotated[float, Field(ge=0)] = 1.0  # memory reserved per actor (Chromium + its trials)
    local_num_cpus: Count | None = None  # CPUs of the local instance (None: all)
    max_retries: NonNegative = 2  # re-runs of a trial whose actor or node died; agent failures never re-run
    browser_executable: str | None = None
    browser_slots: Count | None = None  # evaluations at once per actor (None: the CPU count)
    runtime_env: dict[str, Any] | None = None  # e.g. {pip: [codesign]} for a cluster without codesign installed
    resources: dict[str, float] = field(default_factory=lambda: {BROWSER: 1.0})  # custom resources per actor
    env_from_driver: list[str] = field(default_factory=list)  # variables (keys) passed to workers by name only

    def run(self, specs: list[dict[str, Any]], on_result: Callable[[TrialRecord], None],
            budget: Budget | None = None, on_start: Callable[[dict[str, Any]], None] | None = None,
            ) -> list[TrialRecord]:  # fmt: skip
        import ray

        if not specs:
            return []
        self._check_runtime_env()
        ensure_ray(self.address, self.local_num_cpus, self.runtime_env, self.num_workers)
        store_uri = specs[0]["store_root"]
        token_path, token = store_token(store_uri)
        requirements = NodeRequirements(store_uri, specs[0].get("scratch_root"), specs[0]["node_cache"],
                                        token_path, token, sorted(needed_keys(specs)))  # fmt: skip
        here = _on_driver_node()
        lease_s = lease_seconds()  # the driver's, for every keeper and worker of the run
        locks = ray.remote(StageLocks).options(num_cpus=0, max_concurrency=1000, scheduling_strategy=here)
        locks = locks.remote(lease_s)
        keepers = start_slot_keepers(endpoint_limits(specs), scheduling_strategy=here, lease_s=lease_s)
        pool: _Pool | None = None
        try:
            pool = _Pool(self, specs, [locks, *keepers], requirements, budget or Budget(), on_result, on_start, lease_s)
            return pool.run()
        finally:
            self._stop(list(pool.workers.values()) if pool else [], [locks, *keepers])
            _remove_store_token(store_uri, token_path)

    def actor_options(self, specs: list[dict[str, Any]]) -> dict[str, Any]:
        # Keys reach workers by name: the listed variables and the keys the run's models name (api_key_env),
        # read from the driver's environment into the actors' — never into a config, a name or a file.
        names = set(self.env_from_driver) | needed_keys(specs)
        env = {name: os.environ[name] for name in sorted(names) if os.environ.get(name)}
        return {
            "max_concurrency": self.max_concurrency,
            "num_cpus": self.worker_num_cpus,
            "memory": int(self.worker_memory_gb * 1e9) or None,
            "resources": self.resources or None,
            "max_restarts": 0,  # a dead actor is replaced by the pool, on a live node, and its trials re-run
            "runtime_env": {"env_vars": env} if env else None,
        }

    def _need(self) -> dict[str, float]:
        return {"CPU": self.worker_num_cpus, "memory": self.worker_memory_gb * 1e9, **self.resources}

    def _check_runtime_env(self) -> None:
        from codesign.redact import is_secret_name

        named = (self.runtime_env or {}).get("env_vars") or {}
        secret = sorted(k for k in named if is_secret_name(k))
        if secret:
            raise ConfigError(
                f"executor.runtime_env.env_vars holds secrets ({', '.join(secret)}): their values would be "
                "written to the run's config, name and logs",
                f"name them instead: executor.env_from_driver=[{','.join(secret)}] (values are read from the "
                "driver's environment and never stored)",
            )

    @staticmethod
    def _stop(workers: list[_Worker], helpers: list[Any]) -> None:
        import ray

        for w in workers:
            with contextlib.suppress(Exception):  # a dead actor has nothing left to close
                ray.get(w.handle.shutdown.remote(), timeout=10)
            ray.kill(w.handle)
        for h in helpers:
            ray.kill(h)


class _Pool:
    """One run's actors and trials: places workers, feeds them, replaces the dead, re-runs what they lost."""

    def __init__(self, executor: RayExecutor, specs: list[dict[str, Any]], holders: list[Any],
                 requirements: NodeRequirements, budget: Budget, on_result: Callable[[TrialRecord], None],
                 on_start: Callable[[dict[str, Any]], None] | None = None, lease_s: float | None = None):  # fmt: skip
        import ray

        self.lease_s = lease_s
        self.x, self.requirements, self.budget, self.on_result = executor, requirements, budget, on_result
        self.on_start = on_start or (lambda spec: None)
        # The stage locks first, then the endpoint slot keepers: each frees what a dead worker held.
        self.locks, self.holders = holders[0], holders
        self.actor = ray.remote(TrialWorker)
        self.options = executor.actor_options(specs)
        self.want = max(1, min(executor.num_workers or len(specs), len(specs)))
        self.archives = _pack_tasks(specs)
        self.workers: dict[str, _Worker] = {}
        self.checks: dict[Any, _Worker] = {}
        self.pending: dict[Any, tuple[dict[str, Any], int, _Worker]] = {}
        self.queue = [(spec, 0) for spec in reversed(specs)]  # (spec, attempt), taken from the end
        self.events: dict[int, list[str]] = {}  # id(spec) -> infrastructure events of its lost attempts
        self.drained: dict[str, list[str]] = {}  # node id -> its self-check's problems
        self.suspect: set[str] = set()  # nodes where a worker died
        self.lost_workers = 0
        self.records: list[TrialRecord] = []

    def run(self) -> list[TrialRecord]:
        import ray

        retryable = _retryable()
        self.start_workers()
        if not self.checks:
            raise ConfigError(*_no_room(self.x._need()))
        while self.checks or self.pending or (self.queue and not self.budget.exhausted):
            if not self.checks and not self.pending:  # every worker is gone and none could be placed
                problems = "\n  ".join(p for found in self.drained.values() for p in found) or "none has room"
                fix = "run `make setup` (python -m codesign.install run) on those nodes"
                raise EnvironmentSetupError(f"no node is ready to run trials:\n  {problems}", fix)
            ref = ray.wait([*self.checks, *self.pending], num_returns=1)[0][0]
            if ref in self.checks:
                self.checked(ref, retryable)
            else:
                self.returned(ref, retryable)
            self.submit_more()
        for spec, _ in reversed(self.queue):  # left over: the budget is spent
            self.finish(self.budget.skipped(spec), spec)
        return self.records

    def start_workers(self) -> None:
        placed = [w.node for w in self.workers.values()]
        missing = self.want - len(self.workers)
        # A node that just lost a worker may still be listed alive for a while: other nodes come first.
        nodes = _place(missing, self.x._need(), set(self.drained) | self.suspect, placed)
        nodes += _place(missing - len(nodes), self.x._need(), set(self.drained), placed + nodes)
        for node in nodes:
            holder = uuid.uuid4().hex
            x = self.x
            handle = self.actor.options(**self.options, scheduling_strategy=_node_affinity(node)).remote(
                x.browser_executable, x.max_concurrency, x.browser_slots, self.locks, holder, self.lease_s
            )
            worker = self.workers[holder] = _Worker(handle, node, holder)
            self.checks[handle.check.remote(vars(self.requirements))] = worker

    def checked(self, ref: Any, retryable: tuple[type[BaseException], ...]) -> None:
        import ray

        worker = self.checks.pop(ref)
        try:
            problems = ray.get(ref)
        except retryable as e:
            self.lost(worker, e)
            return
        if problems:  # drained: named once, and no actor is placed on that node again
            self.drained[worker.node] = problems
            print("node drained, not ready to run trials:\n  " + "\n  ".join(problems), file=sys.stderr)
            self.lost(worker, RuntimeError("failed its self-check"))
            return
        worker.ready = True

    def returned(self, ref: Any, retryable: tuple[type[BaseException], ...]) -> None:
        import ray

        spec, attempt, worker = self.pending.pop(ref)
        worker.in_flight -= 1
        try:
            record = ray.get(ref)
        except retryable as e:
            what = f"attempt {attempt + 1} on node {worker.node[:12]}: {type(e).__name__}: {str(e)[:300]}"
            self.events.setdefault(id(spec), []).append(what)
            if isinstance(e, ray.exceptions.RayActorError | ray.exceptions.NodeDiedError):
                self.lost(worker, e)
            if attempt < self.x.max_retries:
                self.queue.append((spec, attempt + 1))  # next in line, on a live worker
            else:
                message = f"its worker was lost {attempt + 1}× ({what})"
                lost = TrialRecord.unrun(spec["task_id"], spec["cell"], TrialStatus.INFRA_ERROR, message, "worker")
                self.finish(lost, spec)
            return
        self.finish(record, spec)

    def lost(self, worker: _Worker, error: BaseException) -> None:
        """A worker is gone (dead, or drained): its locks are freed and a replacement placed on a live node."""
        import ray

        if self.workers.pop(worker.holder, None) is None:
            return
        self.suspect.add(worker.node)
        with contextlib.suppress(Exception):
            ray.kill(worker.handle)
        for helper in self.holders:
            helper.release_holder.remote(worker.holder)
        self.lost_workers += 1
        if self.lost_workers > (self.x.max_retries + 1) * self.want:  # a cluster that kills every actor
            fix = "check the nodes' logs (ray logs) and memory (executor.worker_memory_gb)"
            raise EnvironmentSetupError(f"trial workers keep dying ({self.lost_workers} lost; last: {error})", fix)
        self.start_workers()

    def submit_more(self) -> None:
        live = [w for w in self.workers.values() if w.ready]
        while self.queue and live and not self.budget.exhausted:
            worker = min(live, key=lambda w: w.in_flight)
            # A fair share, counting workers still starting: the first ready one must not take the whole grid.
            share = -(-(len(self.queue) + len(self.pending)) // len(self.workers))
            if worker.in_flight >= min(self.x.max_concurrency, max(1, share)):
                return
            spec, attempt = self.queue.pop()
            if attempt == 0:
                self.on_start(spec)
            worker.in_flight += 1
            ref = worker.handle.run.remote(spec, self.archives[spec["task_dir"]])
            self.pending[ref] = (spec, attempt, worker)

    def finish(self, record: TrialRecord, spec: dict[str, Any]) -> None:
        record.infra_events = self.events.pop(id(spec), [])
        self.budget.charge(record)
        self.records.append(record)
        self.on_result(record)


def _on_driver_node() -> Any:
    """Helpers (locks, endpoint slots) live on the driver's node: they must outlive any worker node."""
    import ray

    return _node_affinity(ray.get_runtime_context().get_node_id())


def _node_affinity(node: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node, soft=False)


def _place(n: int, need: dict[str, float], drained: set[str], placed: list[str]) -> list[str]:
    """Nodes for ``n`` more actors, spread: each goes to the live node with the fewest of this run's actors
    that still has room (by its total resources), so a grid is not piled onto one node."""
    import ray

    room: dict[str, int] = {}
    for node in ray.nodes():
        if not node["Alive"] or node["NodeID"] in drained:
            continue
        have = node["Resources"]
        fits = [int(have.get(k, 0) // v) for k, v in need.items() if v > 0]
        room[node["NodeID"]] = (min(fits) if fits else 1_000) - placed.count(node["NodeID"])
    chosen: list[str] = []
    for _ in range(n):
        free = [node for node, left in room.items() if left > 0]
        if not free:
            break
        node = min(free, key=lambda nd: (placed.count(nd) + chosen.count(nd), nd))
        chosen.append(node)
        room[node] -= 1
    return chosen


def _no_room(need: dict[str, float]) -> tuple[str, str]:
    import ray

    have = ray.cluster_resources()
    nodes = [n["Resources"] for n in ray.nodes() if n["Alive"]]
    short = [f"{k} (an actor needs {v:g}, the largest node has {max((n.get(k, 0) for n in nodes), default=0):g})"
             for k, v in need.items() if v > 0]  # fmt: skip
    return (
        "no Ray node has room for one trial actor: " + "; ".join(short) + f" (cluster: {have})",
        f"start nodes with a {BROWSER} resource (python -m codesign.cluster start, or ray start "
        f"--resources='{{\"{BROWSER}\": 2}}'), or lower executor.worker_num_cpus / worker_memory_gb / resources",
    )


def _pack_tasks(specs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each task folder once into Ray's object store: workers on any node unpack it by content."""
    import ray

    from codesign.tasks.archive import pack

    return {d: ray.put(pack(Path(d))) for d in sorted({s["task_dir"] for s in specs})}


def _remove_store_token(store_uri: str, token_path: str) -> None:
    from codesign.store import Store

    with contextlib.suppress(Exception):
        Store(store_uri).delete(token_path)
