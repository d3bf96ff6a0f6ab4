"""One run's trial actors and trials: workers placed and self-checked, trials fed to them fairly as results stream
back, dead workers replaced on live nodes and the trials they lost run again (bounded by ``max_retries``)."""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codesign._types import TrialRecord, TrialStatus
from codesign.errors import ConfigError, EnvironmentSetupError
from codesign.execute import Budget
from codesign.execute.prerequisites import NodeRequirements
from codesign.execute.ray_actors import TrialWorker
from codesign.execute.ray_connect import BROWSER, CORES_PER_BROWSER
from codesign.execute.ray_placement import browsers_from_cpus, no_room, node_affinity, place, without_browser_resource

if TYPE_CHECKING:
    from codesign.execute.ray_pool import RayExecutor


def retryable_errors() -> tuple[type[BaseException], ...]:
    """Failures of the infrastructure under a trial (never of the trial itself): the trial runs again."""
    from ray import exceptions as rx

    return (rx.RayActorError, rx.WorkerCrashedError, rx.ObjectLostError, rx.NodeDiedError, rx.RaySystemError)


@dataclass
class PooledWorker:
    handle: Any
    node: str
    holder: str  # the name its stage locks are held under
    in_flight: int = 0
    ready: bool = False  # passed its node's self-check


class TrialPool:
    """One run's actors and trials: places workers, feeds them, replaces the dead, re-runs what they lost."""

    def __init__(
        self,
        executor: RayExecutor,
        specs: list[dict[str, Any]],
        holders: list[Any],
        requirements: NodeRequirements,
        budget: Budget,
        on_result: Callable[[TrialRecord], None],
        on_start: Callable[[dict[str, Any]], None] | None = None,
        lease_s: float | None = None,
    ):
        import ray

        self.lease_s = lease_s
        self.x, self.requirements, self.budget, self.on_result = executor, requirements, budget, on_result
        self.on_start = on_start or (lambda spec: None)
        # The stage locks first, then the endpoint slot keepers: each frees what a dead worker held.
        self.locks, self.holders = holders[0], holders
        self.actor = ray.remote(TrialWorker)
        self.options = executor.actor_options(specs)
        self.want = max(1, min(executor.num_workers or len(specs), len(specs)))
        self.archives = pack_tasks(specs)
        self.workers: dict[str, PooledWorker] = {}
        self.checks: dict[Any, PooledWorker] = {}
        self.pending: dict[Any, tuple[dict[str, Any], int, PooledWorker]] = {}
        self.queue = [(spec, 0) for spec in reversed(specs)]  # (spec, attempt), taken from the end
        self.events: dict[int, list[str]] = {}  # id(spec) -> infrastructure events of its lost attempts
        self.drained: dict[str, list[str]] = {}  # node id -> its self-check's problems
        self.suspect: set[str] = set()  # nodes where a worker died
        self.lost_workers = 0
        self.announced = False  # the notice on nodes without the browser resource
        self.placed_said = False  # the line naming where the run's actors are
        self.records: list[TrialRecord] = []

    def run(self) -> list[TrialRecord]:
        import ray

        retryable = retryable_errors()
        self.start_workers()
        if not self.checks:
            raise ConfigError(*no_room(self.x._need()))
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
        nodes = place(missing, self.x._need(), set(self.drained) | self.suspect, placed)
        nodes += place(missing - len(nodes), self.x._need(), set(self.drained), placed + nodes)
        plain = without_browser_resource(nodes) if BROWSER in (self.x.resources or {}) else set()
        self.announce_plain_nodes(plain, sum(node in plain for node in nodes))
        for node in nodes:
            holder = uuid.uuid4().hex
            x = self.x
            options = self.options
            if node in plain:  # Ray would wait forever for a resource the node does not have
                resources = {k: v for k, v in (options["resources"] or {}).items() if k != BROWSER}
                options = {**options, "resources": resources or None}
            handle = self.actor.options(**options, scheduling_strategy=node_affinity(node)).remote(
                x.browser_executable, x.max_concurrency, x.browser_slots, self.locks, holder, self.lease_s
            )
            worker = self.workers[holder] = PooledWorker(handle, node, holder)
            self.checks[handle.check.remote(vars(self.requirements))] = worker

    def announce_plain_nodes(self, plain: set[str], actors: int) -> None:
        """Said once per run: actors on nodes without the ``browser`` resource, and how their number is set."""
        if not plain or self.announced:
            return
        self.announced = True
        import ray

        cpus = {n["NodeID"]: n["Resources"].get("CPU", 0) for n in ray.nodes() if n["NodeID"] in plain}
        each = ", ".join(f"{browsers_from_cpus(c)} on a {c:g}-CPU node" for c in sorted(set(cpus.values())))
        print(
            f"{len(plain)} node(s) declare no `{BROWSER}` resource (a plain `ray start`): {actors} trial actor(s) "
            f"placed there by CPU and memory, at most one per {CORES_PER_BROWSER} CPUs ({each}); start nodes with "
            f"`--resources='{{\"{BROWSER}\": N}}'` (python -m codesign.cluster does) to set N yourself",
            file=sys.stderr,
        )

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
        self.say_placement()

    def say_placement(self) -> None:
        """Said once, when the run's first actors are all ready: how many on which nodes. Which trials each one
        ran is decided by load (a free actor takes the next trial), where the actors are is not."""
        ready = [w.node for w in self.workers.values() if w.ready]
        if self.placed_said or len(ready) < self.want:
            return
        self.placed_said = True
        nodes = sorted(set(ready))
        where = ", ".join(f"{ready.count(n)} on {n[:12]}" for n in nodes)
        print(f"{len(ready)} trial actor(s) ready on {len(nodes)} node(s): {where}", file=sys.stderr)

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

    def lost(self, worker: PooledWorker, error: BaseException) -> None:
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


def pack_tasks(specs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each task folder once into Ray's object store: workers on any node unpack it by content."""
    import ray

    from codesign.tasks.archive import pack

    return {d: ray.put(pack(Path(d))) for d in sorted({s["task_dir"] for s in specs})}
