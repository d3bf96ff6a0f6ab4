"""Model calls from many trial threads at once: each thread keeps a connection of its own to the endpoint, none is
closed under another thread's call, and a trial's turns reuse one."""

from __future__ import annotations

import collections
import threading

from codesign.solve.models.litellm_model import LitellmModel
from codesign.testing.model_server import Reply, ScriptedModelServer

THREADS, CALLS = 30, 3


def test_threads_calling_at_once_each_keep_one_connection_for_all_their_calls(monkeypatch):
    """30 threads × 3 calls, every call answered after 0.3 s so each wave is in flight at once. One pool shared by
    every thread keeps at most 20 idle connections and closes the others between waves (more than 30 connections
    in all); with a pool per thread the server sees exactly 30, each carrying its thread's 3 calls."""
    monkeypatch.setenv("CODESIGN_TEST_KEY", "sk-test")
    failures: list[BaseException] = []
    with ScriptedModelServer(lambda request: Reply("ok"), latency_s=0.3) as server:
        model = LitellmModel(
            name="scripted", model="openai/scripted", api_base=server.openai_base, api_key_env="CODESIGN_TEST_KEY",
            max_retries=0,
        )  # fmt: skip
        start = threading.Barrier(THREADS)

        def trial(i: int) -> None:
            start.wait()
            for turn in range(CALLS):
                try:
                    model.complete([{"role": "user", "content": f"thread {i} turn {turn}"}])
                except BaseException as e:
                    failures.append(e)

        threads = [threading.Thread(target=trial, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not failures, failures[:3]
    per_connection = collections.Counter(request.peer for request in server.requests)
    assert len(server.requests) == THREADS * CALLS
    assert len(per_connection) == THREADS, f"{len(per_connection)} connections for {THREADS} threads"
    assert set(per_connection.values()) == {CALLS}
