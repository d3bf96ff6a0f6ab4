"""What curation reads and decides: query records ``q`` with their context ``I = (X, K)`` (attachments X, the
session's history K), where the app was when they were asked (a workspace reference to the bundle B), and
every decision taken on them — each with its stage and reason, so the funnel is counted, never guessed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

WorkspaceKind = Literal["git", "folder", "archive", "none"]


@dataclass(frozen=True)
class AttachmentRef:
    """A file the user gave with a query: inline bytes (a transcript's base64 image) or a path to read."""

    name: str
    data: bytes | None = None
    path: str | None = None  # absolute, or relative to the session file's folder
    media_type: str | None = None


@dataclass(frozen=True)
class FileEdit:
    """One file edit the assistant made after a query, as its transcript records it: enough to replay it
    (the file before, and after) and to size it."""

    path: str  # absolute, as the tool saw it
    before: str | None  # the file's content before this edit (None: it did not exist)
    after: str | None  # its content after (None: could not be replayed)
    changed_lines: int
    user_modified: bool = False  # the user changed the file between the tool's read and its write


@dataclass(frozen=True)
class WorkspaceRef:
    """Where the app was when the query was asked: a git repository (at ``commit``, or at its branch's last
    commit before the query), a folder, an archive, or nothing known."""

    kind: WorkspaceKind
    path: str | None = None
    commit: str | None = None
    branch: str | None = None
    subdir: str = ""  # the app inside the repository (Claude Code's cwd below the repository's root)


@dataclass
class Query:
    """One user query of a session, with what followed it until the next one."""

    session: str
    turn: int  # 0-based among the session's queries
    timestamp: str  # ISO 8601, as the source wrote it
    text: str
    source: str  # file:line it was read from
    attachments: list[AttachmentRef] = field(default_factory=list)
    workspace: WorkspaceRef = field(default_factory=lambda: WorkspaceRef("none"))
    edits: list[FileEdit] | None = None  # None: the source does not say (plain records without an edit list)
    reply: str = ""  # the assistant's last words after the query (history of later queries)
    blocked: str | None = None  # why the turn did not run (interrupted, an API error, permissions refused)
    problems: list[str] = field(default_factory=list)  # what could not be read of it (counted, never fatal)

    @property
    def id(self) -> str:
        return f"{self.session}:{self.turn}"


@dataclass(frozen=True)
class Unreadable:
    """A line or file a reader could not turn into a query: counted in the funnel with its reason."""

    source: str
    reason: str
