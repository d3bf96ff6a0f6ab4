"""Hundreds of trials in flight need more open files than a login's default soft limit (1024)."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2])))
from codesign.execute import open_files_for
print(open_files_for(int(sys.argv[3])), resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def limit_after(soft: int, hard: int, trials: int) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(soft), str(hard), str(trials)], capture_output=True,
                         text=True, check=True).stdout.split()  # fmt: skip
    return int(out[0]), int(out[1])


def test_the_soft_limit_is_raised_for_the_trials_in_flight_and_never_above_the_hard_one():
    assert limit_after(1024, 8000, 256) == (3072, 3072)  # 1024 + 8 per trial in flight
    assert limit_after(1024, 2000, 256) == (2000, 2000)  # the hard limit is the most a process may take
    assert limit_after(5000, 8000, 256) == (5000, 5000)  # already enough: left as it is
