"""Criteria graded by a command on the candidate's final workspace (``command:`` criteria).

A repository-editing task often has its own tests (``npm test -- -t 'cart total'``); a Harbor task has a
test script that writes a reward. Such a command runs in the candidate sandbox — the sandbox the app was
built in: confined, offline, over the final workspace — after every other criterion is graded (it may write
files; the served app and its evidence are already gathered), one at a time:

- ``pass_if: exit_zero``: exit status 0 → PASS, any other → FAIL with the output's tail;
- ``pass_if: reward_file``: the number in ``$REWARD_DIR/reward.txt`` (or ``reward.json``'s ``reward``) at or
  above ``min_reward`` → PASS, below → FAIL; no reward written, or one that is not a number, is the
  command's own failure: ungraded (``grader_error``), never a FAIL of the app;
- a command that ran out of its ``timeout_s`` may have met a slow machine: it is run again alone (one at a
  time in this process) with ``RERUN_FACTOR`` times the bound, and that run decides; still out of time → FAIL
  ``timeout``;
- a command killed by a crash signal (SIGBUS, SIGKILL, …) was as often killed by the machine: it is run
  again, up to ``ATTEMPTS`` times; only a death on every attempt is the candidate's FAIL.

``files`` (a folder of the hidden material) is copied into the workspace at grading only, as
``$CRITERION_FILES``; the output of every run is kept as evidence (``command_<id>.log``).
"""

from __future__ import annotations

import asyncio
import json
import math
import shlex
import threading
from pathlib import Path
from typing import Any

from codesign._types import CriterionVerdict, EvidenceItem, ExecResult, Ungraded, Verdict
from codesign.evaluate.evidence import EvidenceSession
from codesign.evaluate.specs import RERUN_FACTOR
from codesign.redact import redact
from codesign.sandbox.candidate import crash_signal
from codesign.tasks.loader import GENERATED_DIRS
from codesign.tasks.schema import Criterion

GRADING_DIR = ".codesign-grading"  # in the workspace: each criterion's files and reward folder
ATTEMPTS = 3  # runs of a command killed by a crash signal, as for the candidate's build
OUTPUT_TAIL = 2000  # characters of output in a FAIL's reason (the whole output is evidence)
# A re-run after a timeout runs alone: with nothing else of this process competing, a bound 4× what already
# timed out holds a machine slowed ~4× more than the first run met (the same reasoning as for spec tests).
_ALONE = threading.Lock()


async def grade_commands(criteria: list[Criterion], task_dir: Path, session: EvidenceSession) -> list[CriterionVerdict]:
    """Every command criterion's verdict, one command at a time, in the order given."""
    return [await grade(c, task_dir, session) for c in criteria]


async def grade(criterion: Criterion, task_dir: Path, session: EvidenceSession) -> CriterionVerdict:
    spec = criterion.command
    assert spec is not None
    box = session.sandbox
    if box is None:
        raise RuntimeError("no candidate sandbox in this evaluation: command criteria run in the one the app built in")
    cited: list[str] = []

    def ungraded(reason: str) -> CriterionVerdict:
        return CriterionVerdict.ungraded_by(criterion, "command", Ungraded.GRADER_ERROR, reason, cited)

    def verdict(v: Verdict, reason: str, category: str | None = None) -> CriterionVerdict:
        return CriterionVerdict(
            criterion.id, criterion.kind, criterion.preserve, v.value, "command", reason[:2000], cited, category
        )

    folder = f"{GRADING_DIR}/{criterion.id}"
    if spec.files is not None:
        problem = await asyncio.to_thread(_copy_in, box, task_dir / spec.files, f"{folder}/files")
        if problem:
            return ungraded(f"command files {spec.files}: {problem}")
    command = (
        f'export REWARD_DIR="$PWD/{folder}/reward" CRITERION_FILES="$PWD/{folder}/files"; '
        f'rm -rf "$REWARD_DIR"; mkdir -p "$REWARD_DIR" "$CRITERION_FILES"; {spec.run}'
    )
    log: list[str] = []
    result = await asyncio.to_thread(_run, box, command, spec.timeout_s, log, f"$ {spec.run}")
    if result.timed_out:
        bound = spec.timeout_s * RERUN_FACTOR

        def alone() -> ExecResult:
            with _ALONE:
                return _run(box, command, bound, log, f"(timed out after {spec.timeout_s:g} s: run again alone, "
                                                       f"{RERUN_FACTOR}× the bound: {bound:g} s)")  # fmt: skip

        result = await asyncio.to_thread(alone)
    path = session.write(f"command_{criterion.id}.log", redact("\n".join(log)))
    cited.append(session.add(EvidenceItem(f"command:{criterion.id}", "command", path=path, data={"run": spec.run})))
    tail = redact(result.output[-OUTPUT_TAIL:].strip())
    category = "regressed" if criterion.preserve else "wrong"
    if result.timed_out:
        return verdict(Verdict.FAIL, f"the command ran out of time twice, the second time alone: {tail}", "timeout")
    crash = None if result.returncode is None else crash_signal(result.returncode)
    if crash is not None:
        return verdict(Verdict.FAIL, f"killed by {crash.name} on each of {ATTEMPTS} attempts: {tail}", category)
    if spec.pass_if == "exit_zero":
        if result.returncode == 0:
            return verdict(Verdict.PASS, f"exit code 0: {tail[-300:]}")
        return verdict(Verdict.FAIL, f"exit code {result.returncode}: {tail}", category)
    reward, problem = await asyncio.to_thread(_reward, box, f"{folder}/reward")
    if reward is None:
        return ungraded(f"the command wrote no usable reward ({problem}); exit code {result.returncode}: {tail}")
    if reward >= spec.min_reward:
        return verdict(Verdict.PASS, f"reward {reward:g} ≥ {spec.min_reward:g}")
    return verdict(Verdict.FAIL, f"reward {reward:g} < {spec.min_reward:g}; exit code {result.returncode}: {tail}",
                   category)  # fmt: skip


def _run(box: Any, command: str, timeout: float, log: list[str], header: str) -> ExecResult:
    """Run ``command``, again when a crash signal killed it (up to ``ATTEMPTS``); every run's output is logged."""
    for attempt in range(1, ATTEMPTS + 1):
        result: ExecResult = box.execute(command, timeout=timeout)
        status = "timed out" if result.timed_out else f"exit code {result.returncode}"
        log.append(f"{header}\n{result.output}\n[{status}]")
        crash = None if result.returncode is None else crash_signal(result.returncode)
        if crash is None or attempt == ATTEMPTS:
            return result
        header = f"(killed by {crash.name}: run again, attempt {attempt + 1} of {ATTEMPTS})"
    raise AssertionError("unreachable")


def _copy_in(box: Any, source: Path, dest: str) -> str | None:
    """Copy the folder ``source`` into the workspace at ``dest`` through the sandbox; a problem, or None."""
    if not source.is_dir():
        return "is not a folder"
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if not path.is_file() or set(rel.parts) & set(GENERATED_DIRS):
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            return f"{rel} is not UTF-8 text (command files are copied in as text)"
        box.write_file(f"{dest}/{rel}", text)
    return None


def _reward(box: Any, folder: str) -> tuple[float | None, str]:
    """The reward written to ``folder`` (reward.txt, else reward.json's ``reward``), or None and why not."""
    for name in ("reward.txt", "reward.json"):
        try:
            text = box.read_file(f"{folder}/{name}")
        except (FileNotFoundError, OSError):
            continue
        try:
            value = float(json.loads(text)["reward"]) if name == "reward.json" else float(text.strip())
        except (ValueError, KeyError, TypeError) as e:
            return None, f"{name} holds {shlex.quote(text.strip()[:80])}, not a number ({type(e).__name__})"
        if not math.isfinite(value):
            return None, f"{name} holds {value}, not a finite number"
        return value, ""
    return None, "neither reward.txt nor reward.json in $REWARD_DIR"
