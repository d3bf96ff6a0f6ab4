"""The gate on thousands of drafts: chunks of drafts travel by content through Ray's object store (no shared
disk needed), each chunk is gated on whichever node has a CPU free, in one browser there, and the reports come
back by draft id. The same gate as inline (``codesign.curate.validation``), the same reports."""

from __future__ import annotations

import asyncio
import math
import tempfile
from pathlib import Path
from typing import Any

from codesign.curate.drafts import Draft


def gate_on_ray(drafts: list[Draft], node_cache: Path, concurrency: int, executable: str | None,
                address: str | None = None) -> dict[str, str]:  # fmt: skip
    import ray

    from codesign.execute.ray_connect import ensure_ray
    from codesign.tasks.archive import pack

    if not drafts:
        return {}
    ensure_ray(address)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    size = max(1, math.ceil(len(drafts) / cpus))  # one chunk per CPU of the cluster, each in one browser
    chunks = [drafts[i : i + size] for i in range(0, len(drafts), size)]
    remote = ray.remote(num_cpus=1, max_retries=1)(_gate_chunk)  # a chunk whose worker died runs again
    refs = [remote.remote([ray.put(pack(d.folder)) for d in chunk], str(node_cache), concurrency, executable)
            for chunk in chunks]  # fmt: skip
    reports: dict[str, str] = {}
    for found in ray.get(refs):
        reports.update(found)
    return reports


def _gate_chunk(archives: list[Any], node_cache: str, concurrency: int, executable: str | None) -> dict[str, str]:
    import ray

    from codesign.curate.validation import gate_drafts
    from codesign.tasks.archive import unpack

    with tempfile.TemporaryDirectory(prefix="codesign-curate-gate-") as tmp:
        unpacked = [unpack(ray.get(a) if isinstance(a, ray.ObjectRef) else a, Path(tmp) / "drafts") for a in archives]
        drafts = [Draft(folder.name, folder) for folder in unpacked]
        return asyncio.run(gate_drafts(drafts, Path(node_cache).expanduser(), Path(tmp) / "gate", concurrency,
                                       executable))  # fmt: skip
