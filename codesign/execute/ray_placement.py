"""Where a run's actors go: spread over the live nodes with room for them, helpers on the driver's node."""

from __future__ import annotations

from typing import Any

from codesign.execute.ray_connect import BROWSER, CORES_PER_BROWSER


def on_driver_node() -> Any:
    """Helpers (locks, endpoint slots) live on the driver's node: they must outlive any worker node."""
    import ray

    return node_affinity(ray.get_runtime_context().get_node_id())


def node_affinity(node: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node, soft=False)


def browsers_from_cpus(cpus: float) -> int:
    """Trial actors (Chromiums) a node hosts when it does not say: one per two cores — measured here, more
    browsers than that give no speed-up on 2 cores."""
    return max(1, int(cpus) // CORES_PER_BROWSER)


def declares_browsers(resources: dict[str, float]) -> bool:
    """Whether a node was started with codesign's ``browser`` resource (``python -m codesign.cluster``, or
    ``ray start --resources``); a plain ``ray start`` node, as most managed clusters have, does not."""
    return BROWSER in resources


def place(n: int, need: dict[str, float], drained: set[str], placed: list[str]) -> list[str]:
    """Nodes for ``n`` more actors, spread: each goes to the live node with the fewest of this run's actors
    that still has room (by its total resources), so a grid is not piled onto one node. A node without the
    ``browser`` resource has room by its CPUs and memory, and for :func:`browsers_from_cpus` browsers."""
    import ray

    room: dict[str, int] = {}
    for node in ray.nodes():
        if not node["Alive"] or node["NodeID"] in drained:
            continue
        have = dict(node["Resources"])
        if BROWSER in need and not declares_browsers(have):
            have[BROWSER] = browsers_from_cpus(have.get("CPU", 0))
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


def without_browser_resource(nodes: list[str]) -> set[str]:
    """Those of ``nodes`` that declare no ``browser`` resource: their actors must not ask Ray for one."""
    import ray

    return {n["NodeID"] for n in ray.nodes() if n["NodeID"] in nodes and not declares_browsers(n["Resources"])}


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
        f"add nodes, start them with a {BROWSER} resource (python -m codesign.cluster head/join, or ray start "
        f"--resources='{{\"{BROWSER}\": 2}}'), or lower executor.worker_num_cpus / worker_memory_gb / resources",
    )
