"""Set up what codesign needs outside Python, idempotently: ``python -m codesign.install browser``.

Each step returns at once when its part is already there, so ``make run`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from codesign.runtime.browser import find_chromium


def _run(argv: list[str]) -> None:
    print("+ " + " ".join(argv), flush=True)
    subprocess.run(argv, check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def browser() -> str:
    """A headless Chromium: an existing one, else Debian's package (root), else Playwright's own download."""
    found = find_chromium()
    if found:
        return found
    if shutil.which("apt-get") and os.geteuid() == 0:
        _run(["apt-get", "update", "-qq"])
        _run(["apt-get", "install", "-y", "-qq", "chromium"])
    else:
        # On a machine that can reach Playwright's download host this is the conventional choice.
        _run([sys.executable, "-m", "playwright", "install", "chromium"])
    return find_chromium() or "playwright-bundled chromium"


STEPS = {"browser": browser}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m codesign.install", description=__doc__)
    parser.add_argument("steps", nargs="+", choices=sorted(STEPS))
    for step in parser.parse_args().steps:
        print(f"{step}: {STEPS[step]()}")


if __name__ == "__main__":
    main()
