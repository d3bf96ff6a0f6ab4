"""A multi-node Ray cluster on this machine, for tests and benchmarks: real raylets, token authentication on.

Its nodes run under a process of their own (Ray's ``cluster_utils.Cluster``), so the caller's Ray, if any,
is left alone; a node can be killed mid-run, as a lost machine would be.

    with LocalCluster(nodes=2) as cluster:
        subprocess.run([..., "python", "-m", "codesign", ...], env={**os.environ, **cluster.client_env()})
        cluster.kill(1)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

_SCRIPT = """
import json, sys
from ray.cluster_utils import Cluster
cpus, browsers, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
node = {"num_cpus": cpus, "resources": {"browser": browsers} if browsers >= 0 else {}}
cluster = Cluster(initialize_head=True, connect=False, head_node_args={**node, "include_dashboard": False})
nodes = [cluster.head_node] + [cluster.add_node(**node) for _ in range(n - 1)]
cluster.wait_for_nodes()
print(json.dumps({"address": cluster.address, "nodes": [x.node_id for x in nodes]}), flush=True)
for line in sys.stdin:
    index = int(line)
    cluster.remove_node(nodes[index], allow_graceful=False)
    print("killed", flush=True)
cluster.shutdown()
"""


class LocalCluster:
    """``nodes`` Ray nodes, each with ``cpus`` CPUs and room for ``browsers`` trial actors (None: nodes that
    declare no ``browser`` resource, as a plain ``ray start`` makes them)."""

    def __init__(self, nodes: int = 2, cpus: float = 2, browsers: float | None = 1) -> None:
        self.n, self.cpus, self.browsers = nodes, cpus, browsers
        self.address = ""
        self.nodes: list[str] = []  # node ids, the head first
        self._dir = Path(tempfile.mkdtemp(prefix="codesign-cluster-"))
        self.token_path = self._dir / "auth_token"
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> LocalCluster:
        self.token_path.write_text(uuid.uuid4().hex + uuid.uuid4().hex)
        env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(self.token_path),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        browsers = -1 if self.browsers is None else self.browsers
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SCRIPT, str(self.cpus), str(browsers), str(self.n)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the local Ray cluster did not start (exit {self._proc.wait()})")
        info = json.loads(line)
        self.address, self.nodes = info["address"], info["nodes"]
        return self

    def client_env(self) -> dict[str, str]:
        """What a user's shell holds to drive the cluster: its address and token, the auth mode unset."""
        return {"RAY_ADDRESS": self.address, "RAY_AUTH_TOKEN_PATH": str(self.token_path)}

    def kill(self, index: int) -> None:
        """Kill node ``index`` (not the head, 0) at once, its raylet and workers, as a lost machine."""
        assert self._proc and self._proc.stdin and self._proc.stdout and index > 0
        self._proc.stdin.write(f"{index}\n")
        self._proc.stdin.flush()
        if self._proc.stdout.readline().strip() != "killed":
            raise RuntimeError("the local Ray cluster did not kill the node")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()  # the script shuts the cluster down
            try:
                self._proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self.token_path.unlink(missing_ok=True)
        self._dir.rmdir()
