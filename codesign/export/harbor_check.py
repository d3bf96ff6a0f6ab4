"""Check Harbor task folders with Harbor's own code: a script run by the Python that has ``harbor`` installed
(codesign.export.harbor_image's image; Harbor needs Python 3.12+), never imported by codesign.

    python harbor_check.py TASK_DIR…

Prints one JSON object per task folder: Harbor's loader (``harbor.models.task.task.Task``) and its validity
check (``Task.is_valid_dir``), the parsed config (``TaskConfig``), and the findings of ``harbor lint``'s default
rules (``harbor.lint.lint_task``). Only the standard library and harbor are imported here.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path


def check(task_dir: Path) -> dict[str, object]:
    from harbor.lint import lint_task
    from harbor.lint.models import DEFAULT_RULES
    from harbor.models.task.task import Task
    from harbor.models.task.verifier_mode import resolve_task_verifier_mode

    report: dict[str, object] = {"dir": str(task_dir), "valid_dir": Task.is_valid_dir(task_dir)}
    try:
        task = Task(task_dir)
        report |= {
            "name": task.name,
            "instruction": task.instruction,
            "config": task.config.model_dump(mode="json"),
            "verifier_mode": resolve_task_verifier_mode(task.config).value,
            "test_script": str(task.paths.discovered_test_path),
            "solve_script": str(task.paths.discovered_solve_path),
        }
    except Exception as e:
        report["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    try:
        findings = lint_task(task_dir, selected_rules=set(DEFAULT_RULES))
        report["findings"] = [f.model_dump(mode="json") for f in findings]
    except Exception as e:
        report["lint_error"] = f"{type(e).__name__}: {e}"
    return report


def main(argv: list[str]) -> int:
    from importlib.metadata import version

    for arg in argv:
        print(json.dumps({"harbor": version("harbor"), **check(Path(arg))}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
