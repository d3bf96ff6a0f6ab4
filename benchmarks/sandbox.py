"""What confinement costs, measured side by side in one run.

    python benchmarks/sandbox.py [--repeats 20] [--docker]

1. One trivial command (``true``): unconfined bash vs bubblewrap (allowlisted view, no network, own
   namespaces) vs ``docker exec`` in a running container.
2. The build of an RE app (``npm run build``, Vite): unconfined on the host vs a candidate sandbox
   (bubblewrap, shared dependencies read-only) vs a candidate container (copy in, build, copy out).
Medians; ratios to the unconfined run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from codesign.config import bundled_suite
from codesign.sandbox.candidate import BUILD_CACHES, FROZEN, NODE_BUILD
from codesign.sandbox.dependencies import cached_node_modules, hydrate_node_modules
from codesign.sandbox.local import LocalSandbox
from codesign.tasks.loader import load_task
from codesign.workspace import copy_tree

TASK = "re-team-directory-favorites"


def median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(repeats: int, docker: bool) -> None:
    node_cache = Path("~/.cache/codesign/node_modules").expanduser()
    task = load_task(bundled_suite() / TASK)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        copy_tree(task.app_dir, ws)
        hydrate_node_modules(ws, cached_node_modules(ws, node_cache), hardlink=True)
        plain = LocalSandbox(ws, Path(tmp) / "home")
        confined = plain.for_candidate(ws, Path(tmp) / "home", FROZEN, BUILD_CACHES)
        boxes = {"unconfined": plain, "bubblewrap": confined}
        if docker:
            from codesign.sandbox import engine
            from codesign.sandbox.docker import DockerSandbox

            engine.docker()
            boxes["docker"] = DockerSandbox(ws, Path(tmp) / "home", image=engine.node_image()).for_candidate(
                ws, Path(tmp) / "home"
            )
        print(f"{'':14} {'command ms':>10} {'ratio':>6} {'build s':>8} {'ratio':>6}")
        base_cmd = base_build = None
        for name, box in boxes.items():
            box.execute("true")  # warm-up (a container starts here)
            cmd = median_s(lambda box=box: box.execute("true"), repeats)

            def build(box=box, name=name) -> None:
                result = box.execute(NODE_BUILD, timeout=600)
                assert result.returncode == 0, result.output[-2000:]
                if name == "docker":  # copy out and start over, as an evaluation does
                    box.close()

            b = median_s(build, max(3, repeats // 5))
            base_cmd, base_build = base_cmd or cmd, base_build or b
            print(f"{name:14} {cmd * 1000:>10.1f} {cmd / base_cmd:>6.1f} {b:>8.2f} {b / base_build:>6.2f}")
            box.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--docker", action="store_true", help="also a container (starts an engine, builds the image)")
    args = parser.parse_args()
    main(args.repeats, args.docker)
