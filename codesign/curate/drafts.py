"""Draft task folders in codesign's format, for an expert to finish: the normalized request and its history,
the packaged attachments, the recovered app, inferred labels (marked as drafts), the session's own change as a
candidate reference, no criteria yet — and a checklist of what the expert decides."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from codesign.curate.normalize import Packaged
from codesign.curate.recover import Recovered
from codesign.curate.scores import Scores
from codesign.curate.select import Interval
from codesign.redact import redact

CHECKLIST = """\
# DRAFT from a real session ({source}). It is not a task until an expert writes its hidden criteria.
# Checklist (docs/curation.md):
# [ ] The request stands alone: a solver sees only task.yaml's request, history and attachments.
# [ ] The labels in task.yaml were inferred (track, capability, edit_types, difficulty): check each.
# [ ] Each criterion names one observable behaviour of the revised app; give it a probe, a script or a spec
#     where one can decide it, and add `preserve: true` criteria for what the revision must not break.
# [ ] solution/solution.patch is the session's own change ({patch_note}): make it a correct, minimal
#     reference — the user may have reformulated the request or rolled the change back ({signals}).
# [ ] Environment: {environment}.{repairs}
# [ ] Run `python -m codesign.validate tasks.root=<this folder's parent> tasks.include=[{task_id}]`.
criteria: []
"""


@dataclass(frozen=True)
class Draft:
    task_id: str
    folder: Path


def task_id(interval: Interval) -> str:
    words = re.findall(r"[a-z0-9]+", interval.request.text.casefold())[:6]
    digest = hashlib.sha256(interval.id.encode()).hexdigest()[:8]
    return "-".join(["draft", *words, digest])


def title(text: str) -> str:
    first = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0]
    return first if len(first) <= 72 else first[:69].rstrip() + "…"


def track(scores: Scores, patch: str, packaged: list[Packaged]) -> str:
    files = len(re.findall(r"^diff --git ", patch, re.M)) or scores.files
    return "RE" if files >= 3 and not packaged else "ME"


def capabilities(scores: Scores, packaged: list[Packaged]) -> list[str]:
    found = []
    if packaged:
        found.append("grounded_understanding")
    if scores.verifiability >= 2 or "content" in scores.edit_types or "component" in scores.edit_types:
        found.append("ui_transformation")
    if scores.verifiability == 3 or {"state", "data_flow", "route"} & set(scores.edit_types):
        found.append("functional_implementation")
    return found or ["ui_transformation"]


def write_draft(root: Path, interval: Interval, texts: dict[int, str], packaged: list[Packaged], recovered: Recovered,
                scores: Scores, provenance: dict[str, Any]) -> Draft:  # fmt: skip
    """``root/<task id>/``, written whole into a temporary folder and renamed into place; ``texts`` are the
    interval's queries normalized, by turn."""
    request = texts[interval.request.turn]
    tid = task_id(interval)
    final = root / tid
    tmp = root / f".{tid}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copytree(recovered.app, tmp / "app", symlinks=True)
    for env_file in sorted((tmp / "app").rglob(".env*")):  # never packaged: where apps keep keys
        if env_file.is_file():
            env_file.unlink()
            recovered.repairs.append(f"removed {env_file.relative_to(tmp / 'app')} (where apps keep keys)")
    attachments = []
    if packaged:
        (tmp / "attachments").mkdir()
        for p in packaged:
            (tmp / "attachments" / p.name).write_bytes(p.data)
            attachments.append({"path": f"attachments/{p.name}", "modality": p.modality})
    history = []
    for q in interval.history:
        history.append({"role": "user", "content": redact(texts[q.turn])})
        if q.reply:
            history.append({"role": "assistant", "content": redact(q.reply)})
    scores_track = track(scores, recovered.session_patch, packaged)
    manifest = {
        "id": tid,
        "track": scores_track,
        "title": redact(title(request)),
        "request": redact(request),
        "history": history,
        "attachments": attachments,
        "environment": recovered.environment,
        "labels": {
            "capability": capabilities(scores, packaged),
            "categories": ["draft"],  # inferred by codesign.curate: the expert checks every label
            "edit_types": list(scores.edit_types),
            "difficulty": scores.difficulty,
        },
    }
    header = f"# DRAFT labels inferred by codesign.curate from {interval.request.source}: check each.\n"
    (tmp / "task.yaml").write_text(header + yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True, width=110))
    signals = [name for name, on in (("reformulated", scores.reformulated), ("rolled back", scores.rolled_back)) if on]
    repairs = "".join(f"\n#     repair: {r}" for r in recovered.repairs)
    (tmp / "criteria.yaml").write_text(CHECKLIST.format(
        source=interval.request.source, task_id=tid, environment=recovered.how, repairs=repairs,
        patch_note=f"{recovered.session_patch.count('diff --git ')} file(s)" if recovered.session_patch else "empty",
        signals=", ".join(signals) or "no failure signal seen"))  # fmt: skip
    (tmp / "solution").mkdir()
    (tmp / "solution" / "solution.patch").write_text(redact(recovered.session_patch))
    (tmp / "session").mkdir()
    (tmp / "session" / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str) + "\n")
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return Draft(tid, final)
