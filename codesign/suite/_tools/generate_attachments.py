"""Rebuild the bundled suite's attachments with real tools (Pillow, fpdf2, espeak-ng + sox, ffmpeg).

    python codesign/suite/_tools/generate_attachments.py [task_id ...]

Each task's generator is ``_tools/attachments/<task_id with _>.py`` with ``TASK`` and ``generate(out)``.
Generated files are committed, so running tasks never needs these tools. Python packages come from
the ``authoring`` extra (pip install -e '.[authoring]'); espeak-ng, sox and ffmpeg from Debian.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
SUITE = TOOLS.parent
sys.path.insert(0, str(TOOLS / "attachments"))


def generators() -> dict[str, object]:
    mods = [importlib.import_module(p.stem) for p in sorted((TOOLS / "attachments").glob("[!_]*.py"))]
    return {m.TASK: m for m in mods}


def main(argv: list[str]) -> None:
    found = generators()
    unknown = sorted(set(argv) - set(found))
    if unknown:
        raise SystemExit(f"no generator for {unknown}; known: {sorted(found)}")
    for task_id in argv or sorted(found):
        out = SUITE / task_id / "attachments"
        out.mkdir(parents=True, exist_ok=True)
        found[task_id].generate(out)
        print(f"{task_id}: {', '.join(sorted(p.name for p in out.iterdir()))}")


if __name__ == "__main__":
    main(sys.argv[1:])
