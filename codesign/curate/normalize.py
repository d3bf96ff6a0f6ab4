"""Normalization: attachments decoded into files with a modality (by their bytes, never their name alone), and
the request's mentions of local images replaced by references to the packaged files (``attachments/<name>``).

An attachment that cannot be packaged — missing, too large, outside the corpus folder, of a kind no task
carries — is dropped with its reason on the query's problems; the query goes on without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePath

from codesign.curate.records import AttachmentRef, Query

# (magic prefix, offset, modality, suffix)
MAGIC: list[tuple[bytes, int, str, str]] = [
    (b"\x89PNG\r\n\x1a\n", 0, "image", "png"),
    (b"\xff\xd8\xff", 0, "image", "jpg"),
    (b"GIF8", 0, "image", "gif"),
    (b"WEBP", 8, "image", "webp"),
    (b"%PDF-", 0, "document", "pdf"),
    (b"ID3", 0, "audio", "mp3"),
    (b"WAVE", 8, "audio", "wav"),
    (b"OggS", 0, "audio", "ogg"),
    (b"fLaC", 0, "audio", "flac"),
    (b"ftypM4A", 4, "audio", "m4a"),
    (b"\x1a\x45\xdf\xa3", 0, "video", "webm"),
    (b"ftyp", 4, "video", "mp4"),
]
TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".csv", ".json", ".html"}
IMAGE_PATH = re.compile(r"(?:(?<=\s)|^)(['\"]?)((?:[A-Za-z]:)?[~.]?[\w./\\ -]*?[\w-]+\.(?:png|jpe?g|gif|webp))\1",
                        re.I | re.M)  # fmt: skip
IMAGE_PLACEHOLDER = re.compile(r"\[Image #(\d+)\]")


@dataclass(frozen=True)
class Packaged:
    name: str  # file name under attachments/
    modality: str
    data: bytes
    original: str  # the name the source gave it


def sniff(data: bytes, name: str) -> tuple[str, str] | None:
    """(modality, suffix) of a file's bytes; text files by their name, if they decode."""
    for magic, offset, modality, suffix in MAGIC:
        if data[offset : offset + len(magic)] == magic:
            return modality, suffix
    if PurePath(name).suffix.lower() in TEXT_SUFFIXES:
        try:
            data[:65536].decode("utf-8")
        except UnicodeDecodeError:
            return None
        return "document", PurePath(name).suffix.lower().lstrip(".")
    return None


def package(q: Query, root: Path | None, max_bytes: int, prefix: str = "") -> list[Packaged]:
    """The query's attachments as files (``prefix`` before each name: a history turn's own); each one refused is a
    problem on the query."""
    found: list[Packaged] = []
    for k, a in enumerate(q.attachments, 1):
        data = _bytes(a, q, root, max_bytes)
        if data is None:
            continue
        kind = sniff(data, a.name)
        if kind is None:
            q.problems.append(f"attachment {a.name}: not an image, audio, video or document file")
            continue
        stem = prefix + (re.sub(r"[^\w.-]+", "-", PurePath(a.name).stem).strip("-.") or f"attachment-{k}")
        name = f"{stem}.{kind[1]}"
        if any(p.name == name for p in found):
            name = f"{stem}-{k}.{kind[1]}"
        found.append(Packaged(name, kind[0], data, a.name))
    return found


def _bytes(a: AttachmentRef, q: Query, root: Path | None, max_bytes: int) -> bytes | None:
    if a.data is not None:
        if len(a.data) > max_bytes:
            q.problems.append(f"attachment {a.name}: {len(a.data)} bytes, more than {max_bytes}")
            return None
        return a.data
    path = Path(a.path or "")
    resolved = path.resolve()
    if root is not None and not resolved.is_relative_to(root.resolve()):
        q.problems.append(f"attachment {a.name}: {a.path} is outside the corpus folder {root}")
        return None
    if not resolved.is_file():
        q.problems.append(f"attachment {a.name}: {a.path} is missing")
        return None
    size = resolved.stat().st_size
    if size > max_bytes:  # decided before reading: a 2 GB file is never loaded
        q.problems.append(f"attachment {a.name}: {size} bytes, more than {max_bytes}")
        return None
    return resolved.read_bytes()


def normalized_request(q: Query, packaged: list[Packaged]) -> str:
    """The request with ``[Image #N]`` and local image paths naming a packaged file replaced by its reference."""
    by_original = {PurePath(p.original).stem.lower(): p.name for p in packaged}
    by_original.update({PurePath(p.name).stem.lower(): p.name for p in packaged})
    images = [p.name for p in packaged if p.modality == "image"]

    def placeholder(m: re.Match[str]) -> str:
        k = int(m.group(1))
        return f"attachments/{images[k - 1]}" if 0 < k <= len(images) else m.group(0)

    def local_path(m: re.Match[str]) -> str:
        stem = PurePath(m.group(2).replace("\\", "/")).stem.lower()
        if stem in by_original:
            return f"attachments/{by_original[stem]}"
        q.problems.append(f"the request names a local image that was not given: {m.group(2)[:120]}")
        return m.group(0)

    text = IMAGE_PATH.sub(local_path, IMAGE_PLACEHOLDER.sub(placeholder, q.text))
    unnamed = [p.name for p in packaged if f"attachments/{p.name}" not in text]  # pasted without a mention
    return text + "".join(f"\n[attached: attachments/{name}]" for name in unnamed)
