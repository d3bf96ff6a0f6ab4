"""codesign's plain session format: one JSON object per query, for any team to export to (docs/curation.md).

    {"session": "s-1", "turn": 0, "timestamp": "2026-11-30T10:00:00Z",
     "text": "Make the header match the mockup",
     "attachments": [{"name": "mockup.png", "path": "files/mockup.png"}, {"name": "note.txt", "base64": "aGk="}],
     "workspace": {"git": "repos/shop", "commit": "3f2a…", "subdir": "web"},  # or {"folder": …}, {"archive": …}
     "reply": "Done: …",                       # optional: the assistant's answer (history of later queries)
     "edits": [{"path": "web/index.html", "before": "…", "after": "…"}],   # optional: what the assistant changed
     "blocked": "interrupted"}                 # optional: why the turn did not run

Relative paths are relative to the JSONL file's folder. ``turn`` orders a session's queries (their order in the
file when absent). Without ``edits`` the non-editing filter cannot judge a query and lets it pass, saying so.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codesign.curate.readers.lines import json_lines
from codesign.curate.records import AttachmentRef, FileEdit, Query, Unreadable, WorkspaceRef


def read_plain(path: Path, max_line_bytes: int) -> Iterator[Query | Unreadable]:
    turns: dict[str, int] = {}
    for number, record in json_lines(path, max_line_bytes):
        if isinstance(record, Unreadable):
            yield record
            continue
        where = f"{path}:{number}"
        session, text = record.get("session"), record.get("text")
        if not isinstance(session, str | int) or not isinstance(text, str):
            yield Unreadable(where, "not a query record: it needs a `session` and a `text` string")
            continue
        session = str(session)
        turn = record.get("turn")
        turn = turn if isinstance(turn, int) and turn >= 0 else turns.get(session, -1) + 1
        turns[session] = max(turns.get(session, -1), turn)
        query = Query(session, turn, str(record.get("timestamp") or ""), text.strip(), where,
                      reply=str(record.get("reply") or ""))  # fmt: skip
        query.workspace = _workspace(record.get("workspace"), path.parent, query)
        query.attachments = _attachments(record.get("attachments"), path.parent, query)
        if isinstance(record.get("blocked"), str) and record["blocked"]:
            query.blocked = record["blocked"]
        if isinstance(record.get("edits"), list):
            query.edits = [e for e in (_edit(raw, query) for raw in record["edits"]) if e is not None]
        yield query


def _workspace(raw: Any, base: Path, query: Query) -> WorkspaceRef:
    if not isinstance(raw, dict):
        if raw is not None:
            query.problems.append("workspace is not an object")
        return WorkspaceRef("none")
    subdir = str(raw.get("subdir") or "")
    for kind in ("git", "folder", "archive"):
        if isinstance(raw.get(kind), str):
            where = str((base / raw[kind]).absolute())
            commit = raw.get("commit") if isinstance(raw.get("commit"), str) else None
            return WorkspaceRef(kind, where, commit, raw.get("branch"), subdir)
    query.problems.append(f"workspace names none of git, folder, archive: {sorted(raw)[:5]}")
    return WorkspaceRef("none")


def _attachments(raw: Any, base: Path, query: Query) -> list[AttachmentRef]:
    found = []
    for k, item in enumerate(raw if isinstance(raw, list) else [], 1):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            query.problems.append(f"attachment {k}: not an object with a `name`")
            continue
        if isinstance(item.get("base64"), str):
            try:
                found.append(AttachmentRef(item["name"], data=base64.b64decode(item["base64"], validate=True)))
            except (binascii.Error, ValueError):
                query.problems.append(f"attachment {item['name']}: its base64 data does not decode")
        elif isinstance(item.get("path"), str):
            found.append(AttachmentRef(item["name"], path=str(base / item["path"])))
        else:
            query.problems.append(f"attachment {item['name']}: neither `path` nor `base64`")
    return found


def _edit(raw: Any, query: Query) -> FileEdit | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
        query.problems.append("an edit without a `path`")
        return None
    before = raw.get("before") if isinstance(raw.get("before"), str) else None
    after = raw.get("after") if isinstance(raw.get("after"), str) else None
    changed = raw.get("changed_lines")
    if not isinstance(changed, int):
        import difflib

        diff = difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(), lineterm="", n=0)
        changed = sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))
    return FileEdit(raw["path"], before, after, changed)
