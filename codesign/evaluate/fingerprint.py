"""The grading code's fingerprint: part of every evaluation's key, so no stored verdict outlives the code
that graded it.

A stored evaluation is reused only when everything that decided it is the same: the patch, the task's
criteria, probes and script folders, the evaluator's config and prompt files (``codesign.build.behaviour``)
— and the code that gathers evidence, waits on the app, runs probes, scripts, specs and judges. That code is
listed here by module; its source is hashed. A module of the evaluate or runtime packages is either listed
in ``GRADING`` or, when it grades nothing (a command-line tool), in ``NOT_GRADING``: a test keeps the two
lists complete, so a new grading module cannot be forgotten.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
from pathlib import Path

# Modules whose code decides a verdict (their source is hashed into every evaluation's key).
GRADING = (
    "codesign.evaluate.actions",  # how a probe's steps are performed
    "codesign.evaluate.assertions",  # the probe language's assertions
    "codesign.evaluate.audit",
    "codesign.evaluate.commands",
    "codesign.evaluate.evaluators",
    "codesign.evaluate.evidence",
    "codesign.evaluate.judge",
    "codesign.evaluate.judge_tools",
    "codesign.evaluate.outcomes",
    "codesign.evaluate.probes",
    "codesign.evaluate.quoting",
    "codesign.evaluate.run",
    "codesign.evaluate.scripts",
    "codesign.evaluate.specs",
    "codesign.runtime.browser",  # Chromium's flags and viewports
    "codesign.runtime.clock",  # what a judge's time bound counts
    "codesign.runtime.http",
    "codesign.runtime.serve",  # how the candidate is served
    "codesign.runtime.visible",  # what page text a judge reads as visible
    "codesign.runtime.waiting",  # the waiting rules and bounds
    "codesign.sandbox.candidate",  # how the candidate is built
    "codesign.sandbox.dependencies",  # how the candidate's and the specs' dependencies are installed
    "codesign.workspace",  # how the patch is applied
    "codesign.solve.attachments",  # images downscaled for judges
    "codesign.solve.tool_schema",  # the judge's browser tools as the model sees them
    "codesign.tasks.probes",  # the probe language
)
# Modules of those packages that grade nothing: tools and helpers around grading.
NOT_GRADING = (
    "codesign.evaluate",
    "codesign.evaluate.attribution",  # diagnoses low scores, never changes a verdict
    "codesign.evaluate.fingerprint",
    "codesign.evaluate.gate",
    "codesign.evaluate.prompts",  # prompt files are keyed by content, by the evaluator that names them
    "codesign.runtime",
)


@functools.cache
def grading_code() -> str:
    """The digest of this installation's grading code (computed once per process)."""
    return source_digest(Path(__file__).resolve().parents[2])


def source_digest(root: Path) -> str:
    """A digest of the ``GRADING`` modules' source under ``root`` (the folder holding the ``codesign``
    package) and of the Playwright release that drives the browser."""
    h = hashlib.sha256(f"playwright {importlib.metadata.version('playwright')}\0".encode())
    for name in GRADING:
        path = root.joinpath(*name.split("."))
        source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        h.update(name.encode() + b"\0" + source.read_bytes() + b"\0")
    return h.hexdigest()[:16]
