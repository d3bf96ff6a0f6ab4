"""User-facing errors. Each says what went wrong and how to fix it (Inspect AI's lesson)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


class CodesignError(Exception):
    """Base class: ``str(err)`` is the message a user sees, ending with a hint when there is one."""

    def __init__(self, message: str, hint: str | None = None):
        self.message, self.hint = message, hint
        super().__init__(f"{message}\n  hint: {hint}" if hint else message)


class ConfigError(CodesignError):
    """The composed configuration cannot be run as given."""


class TaskError(CodesignError):
    """A task folder is malformed: names the task, the file and the problem."""

    def __init__(self, task_id: str, file: str, problem: str, hint: str | None = None):
        self.task_id, self.file, self.problem = task_id, file, problem
        super().__init__(f"task {task_id!r}: {file}: {problem}", hint)


class EnvironmentSetupError(CodesignError):
    """Something outside the project is missing (browser, Docker engine, npm)."""


class NothingRan(CodesignError):
    """Not one trial of the command could run (every task failed to load, every trial hit an infrastructure
    error, ...): the results are written, and the command exits non-zero so scripts and CI notice."""


@contextlib.contextmanager
def reported_to_user() -> Iterator[None]:
    """Turn a :class:`CodesignError` into its message and hint on stderr and a non-zero exit (1 when nothing
    ran, 2 for anything the user must fix first), without a traceback: Hydra prints one under any exception
    its job raises. ``HYDRA_FULL_ERROR=1`` lets the exception through, traceback and all, for debugging."""
    try:
        yield
    except CodesignError as e:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        print(f"error: {e}", file=sys.stderr, flush=True)
        raise SystemExit(1 if isinstance(e, NothingRan) else 2) from None
