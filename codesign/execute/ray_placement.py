"""Where a run's actors go: spread over the live nodes with room for them, helpers on the driver's node."""

from __future__ import annotations

from typing import Any

from codesign.execute.ray_connect import BROWSER


def on_driver_node() -> Any:
    """Helpers (locks, endpoint slots) live on the driver's node: they must outlive any worker node."""
    import ray

    return node_affinity(ray.get_runtime_context().get_node_id())


def node_affinity(node: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node, soft=False)


def place(n: int, need: dict[str, float], drained: set[str], placed: list[str]) -> list[str]:
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


def no_room(need: dict[str, float]) -> tuple[str, str]:
    import ray

    have = ray.cluster_resources()
    nodes = [n["Resources"] for n in ray.nodes() if n["Alive"]]
    short = [
        f"{k} (an actor needs {v:g}, the largest node has {max((n.get(k, 0) for n in nodes), default=0):g})"
        for k, v in need.items()
        if v > 0
    ]
    return (
        "no Ray node has room for one trial actor: " + "; ".join(short) + f" (cluster: {have})",
        f"start nodes with a {BROWSER} resource (python -m codesign.cluster start, or ray start "
        f"--resources='{{\"{BROWSER}\": 2}}'), or lower executor.worker_num_cpus / worker_memory_gb / resources",
    )
