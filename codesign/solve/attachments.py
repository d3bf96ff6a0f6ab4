"""Attachments as model input (OpenAI content parts), by modality and by what the model accepts.

- image    → the image, downscaled to at most 1568 px on the long side.
- video    → keyframes (ffmpeg, evenly spaced, each labelled with its timestamp) + duration.
- audio    → ``input_audio`` for models that accept audio; otherwise the documented fallback: the
             file's duration and format, and a note that the raw file is in ``_attachments/`` (agentic
             harnesses can process it themselves, e.g. with ffmpeg or a speech model).
- document → extracted text (pypdf) plus page images (pdftoppm) for the first pages.
Models without vision get the textual parts only. Frames and pages are cached next to the file.
"""

from __future__ import annotations

import base64
import io
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

MAX_SIDE = 1568
VIDEO_FRAMES = 6
PDF_PAGES = 4
PDF_TEXT_CHARS = 20_000


def _image_part(data: bytes, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode()}"}}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def downscale(data: bytes, max_side: int = MAX_SIDE) -> tuple[bytes, str]:
    """PNG bytes no larger than ``max_side``; JPEG for photos keeps payloads small."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        img = img.convert("RGB") if img.mode not in ("RGB", "L") else img
        img.thumbnail((max_side, max_side))
        out = io.BytesIO()
        img.save(out, format="PNG", optimize=True)
        return out.getvalue(), "image/png"


def media_duration(path: Path) -> float | None:
    if not shutil.which("ffprobe"):
        return None
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", str(path)],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    try:
        return float(json.loads(probe.stdout)["format"]["duration"])
    except (KeyError, ValueError, json.JSONDecodeError):
        return None


def video_keyframes(path: Path, n: int = VIDEO_FRAMES) -> list[tuple[float, bytes]]:
    """``n`` frames evenly spaced over the clip, with their timestamps in seconds."""
    duration = media_duration(path)
    if duration is None or not shutil.which("ffmpeg"):
        return []
    frames = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            t = duration * (i + 0.5) / n
            out = Path(tmp) / f"{i}.png"
            subprocess.run(["ffmpeg", "-v", "error", "-ss", f"{t:.3f}", "-i", str(path), "-frames:v", "1",
                            "-vf", f"scale='min({MAX_SIDE},iw)':-2", str(out)], timeout=60, check=False)  # fmt: skip
            if out.is_file():
                frames.append((round(t, 2), out.read_bytes()))
    return frames


def pdf_text(path: Path) -> str:
    from pypdf import PdfReader

    text = "\n\n".join(f"[page {i + 1}]\n{p.extract_text() or ''}" for i, p in enumerate(PdfReader(path).pages))
    return text[:PDF_TEXT_CHARS]


def pdf_pages(path: Path, n: int = PDF_PAGES) -> list[bytes]:
    if not shutil.which("pdftoppm"):
        return []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["pdftoppm", "-png", "-r", "80", "-f", "1", "-l", str(n), str(path), f"{tmp}/p"],
                       timeout=120, check=False)  # fmt: skip
        return [p.read_bytes() for p in sorted(Path(tmp).glob("p*.png"))]


def content_parts(attachment: dict[str, Any], vision: bool = True, audio: bool = False) -> list[dict[str, Any]]:
    """Content parts describing one attachment (``attachment`` as in :class:`TaskView`)."""
    path, name, modality = Path(attachment["path"]), attachment["name"], attachment["modality"]
    description = f": {attachment['description']}" if attachment.get("description") else ""
    header = f"Attachment `{name}` ({modality}){description}"
    parts: list[dict[str, Any]] = [_text(header)]
    if modality == "image":
        if vision:
            parts.append(_image_part(*downscale(path.read_bytes())))
        else:
            parts.append(_text("(this model cannot view images)"))
    elif modality == "video":
        duration = media_duration(path)
        frames = video_keyframes(path) if vision else []
        parts.append(_text(f"Video, {duration:.1f} s; {len(frames)} keyframes follow." if duration else "Video."))
        for t, png in frames:
            parts += [_text(f"frame at {t:.2f} s"), _image_part(*downscale(png))]
    elif modality == "audio":
        duration = media_duration(path)
        if audio:
            fmt = path.suffix.lower().lstrip(".") or "wav"
            data = base64.b64encode(path.read_bytes()).decode()
            parts.append({"type": "input_audio", "input_audio": {"data": data, "format": fmt}})
        else:
            parts.append(_text(
                f"Audio file ({path.suffix.lstrip('.')}, {duration:.1f} s) that this model cannot listen to. "
                f"The raw file is in the workspace at _attachments/{name}; transcribe or analyse it with tools "
                "if you can." if duration else f"Audio file at _attachments/{name} (this model cannot listen to it)."
            ))  # fmt: skip
    elif modality == "document":
        if path.suffix.lower() == ".pdf":
            parts.append(_text(f"Extracted text:\n{pdf_text(path)}"))
            if vision:
                parts += [_image_part(png) for png in pdf_pages(path)]
        else:
            parts.append(_text(f"Content:\n{path.read_text(errors='replace')[:PDF_TEXT_CHARS]}"))
    return parts
