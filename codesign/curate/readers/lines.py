"""JSON lines read safely: a line longer than the limit is skipped without being held in memory (a 2 GB
attachment pasted into a transcript), bytes that are not UTF-8 or JSON are a counted problem, never a crash."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codesign.curate.records import Unreadable

CHUNK = 1 << 20


def json_lines(path: Path, max_line_bytes: int) -> Iterator[tuple[int, dict[str, Any] | Unreadable]]:
    """``(line number, record)`` for each line of ``path``; an :class:`Unreadable` where a line is not a JSON
    object (malformed, truncated, binary, too long)."""
    with open(path, "rb") as f:
        number = 0
        while True:
            line = f.readline(max_line_bytes + 1)
            if not line:
                return
            number += 1
            where = f"{path}:{number}"
            if len(line) > max_line_bytes and not line.endswith(b"\n"):
                size = len(line)
                while line and not line.endswith(b"\n"):  # the rest of the line, dropped as it streams by
                    line = f.readline(CHUNK)
                    size += len(line)
                yield number, Unreadable(where, f"line longer than {max_line_bytes} bytes ({size} bytes): skipped")
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError:
                yield number, Unreadable(where, "not UTF-8 text (binary data)")
                continue
            except json.JSONDecodeError as e:
                cut = "truncated" if not line.endswith(b"\n") else "malformed"
                yield number, Unreadable(where, f"{cut} JSON: {e.msg} at column {e.colno}")
                continue
            if not isinstance(record, dict):
                yield number, Unreadable(where, f"a JSON {type(record).__name__}, not an object")
                continue
            yield number, record
