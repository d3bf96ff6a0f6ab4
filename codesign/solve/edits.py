"""The single-shot edit format, parsed and applied atomically.

A reply may contain any number of these blocks (everything else is ignored)::

    <file path="src/App.jsx">          full new content (creates or overwrites the file)
    ...
    </file>

    <edit path="index.html">            replace one exact, unique occurrence
    <search>
    old text
    </search>
    <replace>
    new text
    </replace>
    </edit>

    <delete path="src/old.css"/>

    ```diff                             a unified diff, git's or plain (paths a/… b/… or bare, relative to the app)
    ...
    ```

All blocks are checked first; if any cannot be applied, nothing is written and every problem is
reported, so a half-applied revision never reaches the evaluator.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

from codesign._protocols import Sandbox
from codesign.workspace import PatchError, apply_patch, changed_files, plain_diff_strip

_FILE = re.compile(r'<file\s+path="([^"]+)"\s*>\n?(.*?)</file>', re.S)
# Search and replace texts lose the one newline after their opening tag and the one before their closing tag.
_EDIT = re.compile(
    r'<edit\s+path="([^"]+)"\s*>\s*<search>\n?(.*?)\n?</search>\s*<replace>\n?(.*?)\n?</replace>\s*</edit>', re.S
)
_DELETE = re.compile(r'<delete\s+path="([^"]+)"\s*/>')
_DIFF = re.compile(r"```(?:diff|patch)\n(.*?)```", re.S)


@dataclass
class Edit:
    kind: str  # file | edit | delete | diff
    path: str
    content: str = ""
    search: str = ""


class EditError(Exception):
    """Edits that could not be applied; nothing was written."""


def parse_edits(text: str) -> list[Edit]:
    edits = [Edit("file", p, c) for p, c in _FILE.findall(text)]
    edits += [Edit("edit", p, r, s) for p, s, r in _EDIT.findall(text)]
    edits += [Edit("delete", p) for p in _DELETE.findall(text)]
    edits += [Edit("diff", "", d) for d in _DIFF.findall(text)]
    return edits


def _check_path(path: str) -> None:
    if Path(path).is_absolute() or ".." in Path(path).parts or not path.strip():
        raise EditError(f"path {path!r} is not inside the app")


def _read(sandbox: Sandbox, path: str) -> str | None:
    try:
        return sandbox.read_file(path)
    except (FileNotFoundError, IsADirectoryError):
        return None


def apply_edits(sandbox: Sandbox, edits: list[Edit]) -> list[str]:
    """Apply all edits or none; returns the changed paths. Raises :class:`EditError` listing every problem."""
    new: dict[str, str | None] = {}  # path -> content (None: delete)
    problems: list[str] = []

    def current(path: str) -> str | None:
        return new[path] if path in new else _read(sandbox, path)

    for i, e in enumerate(edits, start=1):
        try:
            if e.kind == "diff":
                new.update(_apply_diff(e.content, current))
                continue
            _check_path(e.path)
            if e.kind == "file":
                new[e.path] = e.content
            elif e.kind == "delete":
                if current(e.path) is None:
                    raise EditError(f"{e.path} does not exist")
                new[e.path] = None
            else:
                text = current(e.path)
                if text is None:
                    raise EditError(f"{e.path} does not exist")
                n = text.count(e.search)
                if n != 1:
                    raise EditError(f"search text occurs {n} times in {e.path}; it must occur exactly once")
                new[e.path] = text.replace(e.search, e.content)
        except (EditError, PatchError, PermissionError, UnicodeDecodeError) as err:
            problems.append(f"block {i} ({e.kind} {e.path}): {err}".replace(" )", ")"))
    if problems:
        raise EditError("; ".join(problems))
    for path, content in new.items():
        if content is None:
            sandbox.execute(f"rm -f -- {shlex.quote(path)}")
        else:
            sandbox.write_file(path, content)
    return sorted(new)


def _apply_diff(diff: str, current) -> dict[str, str | None]:
    """Apply a unified diff — git's (``diff --git``) or plain (``---``/``+++`` only, as ``diff -u`` writes
    it) — to the current contents of the files it touches, in a scratch folder."""
    diff = diff if diff.endswith("\n") else diff + "\n"
    paths = changed_files(diff)
    if not paths:
        raise PatchError("no file headers found (`diff --git a/… b/…`, or `--- a/…` followed by `+++ b/…`)")
    for p in paths:
        _check_path(p)
    strip = 1 if diff.lstrip().startswith("diff --git") else plain_diff_strip(diff)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for p in paths:
            text = current(p)
            if text is not None:
                (root / p).parent.mkdir(parents=True, exist_ok=True)
                (root / p).write_text(text)
        apply_patch(root, diff, strip)
        return {p: (root / p).read_text() if (root / p).is_file() else None for p in paths}
