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
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field

from codesign._types import Count, NonNegative, TrialRecord
from codesign.errors import ConfigError
from codesign.execute import Budget
from codesign.execute.prerequisites import NodeRequirements, needed_keys, store_token
from codesign.execute.ray_actors import StageLocks
from codesign.execute.ray_connect import BROWSER, ensure_ray
from codesign.execute.ray_placement import on_driver_node
from codesign.execute.ray_scheduler import PooledWorker, TrialPool
from codesign.leases import lease_seconds
from codesign.solve.models.limits import endpoint_limits, start_slot_keepers


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

    def run(
        self,
        specs: list[dict[str, Any]],
        on_result: Callable[[TrialRecord], None],
        budget: Budget | None = None,
        on_start: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[TrialRecord]:
        import ray

        if not specs:
            return []
        self._check_runtime_env()
        ensure_ray(self.address, self.local_num_cpus, self.runtime_env, self.num_workers)
        store_uri = specs[0]["store_root"]
        token_path, token = store_token(store_uri)
        requirements = NodeRequirements(
            store_uri,
            specs[0].get("scratch_root"),
            specs[0]["node_cache"],
            token_path,
            token,
            sorted(needed_keys(specs)),
            browser=any(spec.get("evaluate", True) for spec in specs),
        )
        here = on_driver_node()
        lease_s = lease_seconds()  # the driver's, for every keeper and worker of the run
        lock_actor = ray.remote(StageLocks).options(num_cpus=0, max_concurrency=1000, scheduling_strategy=here)
        locks = lock_actor.remote(lease_s)
        keepers = start_slot_keepers(endpoint_limits(specs), scheduling_strategy=here, lease_s=lease_s)
        pool: TrialPool | None = None
        try:
            pool = TrialPool(
                self, specs, [locks, *keepers], requirements, budget or Budget(), on_result, on_start, lease_s
            )
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
    def _stop(workers: list[PooledWorker], helpers: list[Any]) -> None:
        import ray

        for w in workers:
            with contextlib.suppress(Exception):  # a dead actor has nothing left to close
                ray.get(w.handle.shutdown.remote(), timeout=10)
            ray.kill(w.handle)
        for h in helpers:
            ray.kill(h)


def _remove_store_token(store_uri: str, token_path: str) -> None:
    from codesign.store import Store

    with contextlib.suppress(Exception):
        Store(store_uri).delete(token_path)
