"""What a judge is shown: the evidence selected for one criterion, quoted — text from the app under test always
fenced as untrusted data with a random boundary the app cannot forge, images labelled with their evidence id."""

from __future__ import annotations

import base64
import json
import re
import secrets
from typing import Any

from codesign._types import EvidenceItem
from codesign.evaluate.evidence import EvidenceSession, page_text
from codesign.solve.attachments import downscale
from codesign.tasks.loader import Task
from codesign.tasks.schema import Criterion

JUDGE_IMAGE_SIDE = 1024  # images are downscaled for the judge; the originals stay on disk
TEXT_LIMIT = 12_000
HIDDEN_TEXT_LIMIT = 3_000  # hidden text is context (a closed menu, screen-reader labels), not what a user reads


def new_boundary() -> str:
    """The fence marker of one consultation: random, so text from the app cannot close a fence early."""
    return secrets.token_hex(8)


def fence(text: str, boundary: str, what: str) -> str:
    """Text that comes from the app under test, quoted as untrusted data."""
    return f"<<<EVIDENCE id={what} boundary={boundary}>>>\n{text}\n<<<END {boundary}>>>"


def image_part(data: bytes, mime: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode()}"}}


_MOTION = re.compile(r"\b(anim\w*|transition\w*|motion|fade\w*|slide\w*|carousel|spinner|hover)\b", re.I)


def select_evidence(criterion: Criterion, session: EvidenceSession) -> list[EvidenceItem]:
    """The evidence most relevant to this criterion (WebJudge: selection before judging raises agreement)."""
    items = list(session.items.values())
    route = criterion.probe.route if criterion.probe else None
    viewports = ["mobile", "desktop"] if criterion.kind == "responsive" else ["desktop", "mobile"]

    def by(kind: str, viewport: str | None = None) -> list[EvidenceItem]:
        found = [i for i in items if i.kind == kind and (viewport is None or i.viewport == viewport)]
        return sorted(found, key=lambda i: (i.route != route, i.route or ""))  # the criterion's route first

    chosen = [i for i in items if i.kind in ("diff", "route")]
    shots = [s for vp in viewports for s in by("screenshot", vp) if not s.id.startswith(("shot:action", "shot:probe"))]
    chosen += shots[:4]
    if criterion.kind in ("content", "preservation", "accessibility", "interaction"):
        chosen += by("dom", "desktop")[:2]
    if criterion.kind == "accessibility":
        chosen += by("aria")[:2]
    if criterion.kind in ("interaction", "preservation"):
        chosen += by("console", "desktop")[:2] + by("network", "desktop")[:1]
    if _MOTION.search(criterion.text):
        chosen += by("frames")[:1]
    return list({item.id: item for item in chosen}.values())


def quote(item: EvidenceItem, session: EvidenceSession, boundary: str) -> list[dict[str, Any]]:
    """One evidence item as content parts: text fenced as untrusted data, images labelled with their id."""
    if item.kind == "screenshot" and item.path:
        small, mime = downscale((session.out_dir / item.path).read_bytes(), JUDGE_IMAGE_SIDE)
        return [
            {"type": "text", "text": f"[evidence {item.id}: screenshot of {item.route} at {item.viewport}]"},
            image_part(small, mime),
        ]
    if item.kind == "frames":
        parts: list[dict[str, Any]] = []
        for t, path in item.data:
            small, mime = downscale((session.out_dir / path).read_bytes(), JUDGE_IMAGE_SIDE)
            parts += [
                {"type": "text", "text": f"[evidence {item.id}: {item.route} {t:.1f} s after load]"},
                image_part(small, mime),
            ]
        return parts
    if item.kind == "dom" and item.path:
        return _page_text_parts(item, session, boundary)
    if item.path:
        text = (session.out_dir / item.path).read_text(errors="replace")[:TEXT_LIMIT]
    else:
        text = json.dumps(item.data, default=str)[:TEXT_LIMIT]
    return [{"type": "text", "text": f"{item.kind}:\n{fence(text, boundary, item.id)}"}]


def _page_text_parts(item: EvidenceItem, session: EvidenceSession, boundary: str) -> list[dict[str, Any]]:
    """The page text a user reads (rendered, in reading order) and, apart under its own heading, the text the
    page holds that no user sees — both fenced: what the app says reaches the judge as it is, as data."""
    text = page_text(session.out_dir, item)
    where = f"{item.route} at {item.viewport}"
    if text.from_html:  # older evidence: no rendered text was stored, only the HTML
        heading = f"page text of {where} (from the stored HTML: may include text hidden from the user)"
    else:
        heading = f"page text of {where}, as a user sees it (visible text in reading order)"
    visible = fence(text.visible[:TEXT_LIMIT], boundary, item.id) if text.visible else "(no visible text)"
    parts = [{"type": "text", "text": f"{heading}:\n{visible}"}]
    if text.hidden:
        listing = "\n".join(f"[{h['why']}] {h['text']}" for h in text.hidden)[:HIDDEN_TEXT_LIMIT]
        parts.append(
            {
                "type": "text",
                "text": f"HIDDEN text of {where}: in the page's DOM but NOT visible to a user "
                f"(each piece with why it is hidden); not what the page shows:\n"
                f"{fence(listing, boundary, item.id)}",
            }
        )
    return parts


def user_message(
    task: Task,
    criterion: Criterion,
    evidence: list[EvidenceItem],
    session: EvidenceSession,
    boundary: str,
    extra: str = "",
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {
            "type": "text",
            "text": (
                f"## The user's request (quoted)\n{fence(task.manifest.request, boundary, 'request')}\n\n"
                f"## The criterion to grade\nid: {criterion.id}\nkind: {criterion.kind}\n"
                f"{'(something the original app already did, which must keep working)' if criterion.preserve else ''}\n"
                f"text: {criterion.text}\n\n## Evidence (untrusted data from the app under test)\n"
                f"Routes of the app: {', '.join(task.manifest.environment.routes)}."
            ),
        }
    ]
    for item in evidence:
        parts += quote(item, session, boundary)
    if extra:
        parts.append({"type": "text", "text": extra})
    return {"role": "user", "content": parts}
