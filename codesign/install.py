"""Everything codesign runs outside Python, declared once and set up idempotently.

    python -m codesign.install run      # what `make run` needs: Chromium, bubblewrap, git, Node.js
    python -m codesign.install test     # what `make test` needs: + Docker Engine, debootstrap, busybox
    python -m codesign.install docker node-image    # start an engine, build the sandbox image
    python -m codesign.install --list   # every program, what uses it, where it comes from

``PROGRAMS`` (``codesign/programs.py``, below the stages so that they can look programs up) is the single
declaration — among them ``chromium``, ``bwrap``, ``dockerd``, ``shellcheck``, ``ffmpeg`` and this
installer's ``apt-get`` —: a test scans the package for programs it calls and fails on any not declared.
Python-side media decoding (PyAV, pypdfium2) comes from pip wheels in ``pyproject.toml``, so no program is
needed for attachments. Each step returns at once when its part is already there, so ``make run`` stays fast.
"""

from __future__ import annotations

import argparse
import sys

from codesign.errors import EnvironmentSetupError
from codesign.programs import PROGRAMS, browser, require
from codesign.sandbox.engine import busybox_image, docker, node_image

STEPS = {
    "run": lambda: "\n  ".join(["", *require("run")]),
    "test": lambda: "\n  ".join(["", *require("test")]),
    "authoring": lambda: "\n  ".join(["", *require("authoring")]),
    "browser": browser,
    "docker": docker,
    "busybox-image": busybox_image,
    "node-image": node_image,
}


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m codesign.install", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("steps", nargs="*", help=f"any of: {', '.join(STEPS)}")
    parser.add_argument("--list", action="store_true", help="list every program codesign runs")
    args = parser.parse_args()
    unknown = [s for s in args.steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown steps {unknown}; choose from {', '.join(STEPS)}")
    if args.list or not args.steps:
        for p in PROGRAMS:
            where = f"apt {p.apt}" if p.apt else p.source
            print(f"{p.name:12} {where:22} {','.join(p.groups) or '-':18} {p.used_by}")
        return
    try:
        for step in args.steps:
            print(f"{step}: {STEPS[step]()}", flush=True)
    except EnvironmentSetupError as e:
        sys.exit(f"codesign.install: {e}")


if __name__ == "__main__":
    main()
