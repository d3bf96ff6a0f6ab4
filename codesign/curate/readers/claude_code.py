"""Claude Code session transcripts, exactly as the CLI writes them: ``~/.claude/projects/<project>/<session>.jsonl``.

One JSON object per line. A user's query is a ``user`` record whose message is text and images (not a tool's
result, not a slash command's echo, not a sidechain of a subagent); what follows until the next query is the
assistant's turn: its text, its tool calls, and their results — where an ``Edit``/``Write``/``MultiEdit``
result carries the file before the edit (``originalFile``) and what changed (``structuredPatch``). Each record
names the session's ``cwd`` and ``gitBranch``: the workspace. Record types this reader does not use
(``queue-operation``, ``attachment``, ``last-prompt``, ``mode``, ``summary``, …) are passed over; types it does
not know are counted.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codesign.curate.readers.lines import json_lines
from codesign.curate.records import AttachmentRef, FileEdit, Query, Unreadable, WorkspaceRef

KNOWN_TYPES = frozenset({"user", "assistant", "system", "summary", "queue-operation", "attachment", "last-prompt",
                         "mode", "file-history-snapshot", "progress", "custom-title", "tag"})  # fmt: skip
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit"})
INTERRUPTED = "[Request interrupted by user"
COMMAND_ECHO = ("<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-stderr>", "Caveat:")
MEDIA_SUFFIX = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def read_claude_code(path: Path, max_line_bytes: int) -> Iterator[Query | Unreadable]:
    """The queries of one transcript file (one session, or several when sessions were resumed into it)."""
    turns: dict[str, int] = {}
    current: Query | None = None
    tool_names: dict[str, str] = {}  # tool_use id -> tool name
    for number, record in json_lines(path, max_line_bytes):
        if isinstance(record, Unreadable):
            yield record
            continue
        kind = record.get("type")
        where = f"{path}:{number}"
        if kind not in KNOWN_TYPES:
            yield Unreadable(where, f"unknown record type {str(kind)[:40]!r}: passed over")
            continue
        if record.get("isSidechain"):  # a subagent's own conversation: not the user's
            continue
        message: dict[str, Any] = record["message"] if isinstance(record.get("message"), dict) else {}
        content = message.get("content")
        if kind == "assistant" and current is not None:
            if record.get("isApiErrorMessage"):
                current.blocked = current.blocked or f"the model's API failed: {_text(content)[:200]}"
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    current.reply = str(block["text"])
                elif block.get("type") == "tool_use":
                    tool_names[str(block.get("id"))] = str(block.get("name"))
            continue
        if kind != "user" or message.get("role") != "user" or record.get("isMeta"):
            continue
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(
            content, list) else []  # fmt: skip
        if results:
            if current is not None:
                for block in results:
                    _tool_result(current, block, record.get("toolUseResult"), tool_names, where)
            continue
        text = _text(content)
        if text.startswith(INTERRUPTED):
            if current is not None:
                current.blocked = current.blocked or "interrupted by the user"
            continue
        if text.lstrip().startswith(COMMAND_ECHO):  # a slash command and its output, not a request
            continue
        if current is not None:
            yield current
        session = str(record.get("sessionId") or path.stem)
        turn = turns[session] = turns.get(session, -1) + 1
        cwd = record.get("cwd")
        current = Query(
            session=session,
            turn=turn,
            timestamp=str(record.get("timestamp") or ""),
            text=text,
            source=where,
            workspace=WorkspaceRef("git", path=cwd, branch=record.get("gitBranch")) if cwd else WorkspaceRef("none"),
            edits=[],
        )
        current.attachments, current.problems = _images(content, where)
    if current is not None:
        yield current


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        ).strip()
    return ""


def _images(content: Any, where: str) -> tuple[list[AttachmentRef], list[str]]:
    found: list[AttachmentRef] = []
    problems: list[str] = []
    blocks = (
        [b for b in content if isinstance(b, dict) and b.get("type") == "image"] if isinstance(content, list) else []
    )
    for k, block in enumerate(blocks, 1):
        source: dict[str, Any] = block["source"] if isinstance(block.get("source"), dict) else {}
        media = str(source.get("media_type") or "")
        if source.get("type") != "base64":
            problems.append(f"image {k} at {where}: a {source.get('type')!r} source, not inline data")
            continue
        try:
            data = base64.b64decode(str(source.get("data") or ""), validate=True)
        except (binascii.Error, ValueError):
            problems.append(f"image {k} at {where}: its base64 data does not decode")
            continue
        found.append(AttachmentRef(f"image-{k}.{MEDIA_SUFFIX.get(media, 'bin')}", data=data, media_type=media or None))
    return found, problems


def _tool_result(query: Query, block: dict[str, Any], result: Any, tools: dict[str, str], where: str) -> None:
    name = tools.get(str(block.get("tool_use_id")), "")
    text = _text(block.get("content")) if not isinstance(block.get("content"), str) else block["content"]
    if block.get("is_error") and "doesn't want to proceed" in str(text):
        query.blocked = query.blocked or f"the user refused the {name or 'tool'} call"
    if name not in EDIT_TOOLS or block.get("is_error") or not isinstance(result, dict):
        return
    path = result.get("filePath")
    if not isinstance(path, str):
        query.problems.append(f"{name} result at {where} names no file")
        return
    before = result.get("originalFile") if isinstance(result.get("originalFile"), str) else None
    after = _replayed(name, result, before)
    if after is None:
        query.problems.append(f"{name} of {path} at {where} could not be replayed")
    changed = sum(
        1
        for hunk in result.get("structuredPatch") or []
        if isinstance(hunk, dict)
        for line in hunk.get("lines") or []
        if isinstance(line, str) and line[:1] in "+-"
    )
    if not changed and after is not None:
        changed = abs(len((after or "").splitlines()) - len((before or "").splitlines())) or 1
    edit = FileEdit(path, before, after, changed, bool(result.get("userModified")))
    assert query.edits is not None  # transcripts always say what was edited
    query.edits.append(edit)


def _replayed(name: str, result: dict[str, Any], before: str | None) -> str | None:
    """The file's content after the edit: a Write's content, or the Edit's replacements applied to the file
    as it was before."""
    if name == "Write":
        content = result.get("content")
        return content if isinstance(content, str) else None
    if before is None:
        return None
    edits = result.get("edits") if name == "MultiEdit" else [result]
    text = before
    for e in edits if isinstance(edits, list) else []:
        old = e.get("oldString", e.get("old_string"))
        new = e.get("newString", e.get("new_string"))
        if not isinstance(old, str) or not isinstance(new, str) or old not in text:
            return None
        every = e.get("replaceAll", e.get("replace_all"))
        text = text.replace(old, new) if every else text.replace(old, new, 1)
    return text
