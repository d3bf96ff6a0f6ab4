"""Attachments as model input (OpenAI content parts), by modality and by what the model accepts.

- image    → the image, downscaled to at most 1568 px on the long side.
- video    → keyframes (PyAV, evenly spaced, each labelled with its timestamp) + duration.
- audio    → ``input_audio`` for models that accept audio; otherwise the documented fallback: the
             file's duration and format, and a note that the raw file is in ``_attachments/`` (agentic
             harnesses can process it themselves, e.g. with a speech model).
- document → extracted text (pypdf) plus page images (pypdfium2) for the first pages.
Media decoding comes from pip wheels (PyAV bundles FFmpeg's libraries, pypdfium2 bundles PDFium), so no
program outside the virtual environment is needed and a machine cannot silently send fewer frames.
Models without vision get the textual parts only. Frames and pages are cached next to the file.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

# The libraries each modality needs (pip wheels, in pyproject.toml): checked before any trial starts.
MEDIA_LIBRARIES = {"video": ("av",), "audio": ("av",), "document": ("pypdf", "pypdfium2"), "image": ("PIL",)}
MAX_SIDE = 1568
VIDEO_FRAMES = 6
PDF_PAGES = 4
PDF_TEXT_CHARS = 20_000


def check_media_support(needs: dict[str, set[str]]) -> None:
    """Fail before any trial when a library a task's attachments need cannot be imported, naming the tasks
    and the fix — a model must never get fewer frames or pages because of the machine. ``needs`` maps a
    modality to the tasks that use it."""
    import importlib

    from codesign.errors import EnvironmentSetupError

    missing = []
    for modality, tasks in sorted(needs.items()):
        for module in MEDIA_LIBRARIES.get(modality, ()):
            try:
                importlib.import_module(module)
            except ImportError as e:
                missing.append(f"{module} ({modality}: {', '.join(sorted(tasks))}): {e}")
    if missing:
        raise EnvironmentSetupError(
            "attachments cannot be prepared: " + "; ".join(missing),
            "install codesign's dependencies: make setup (or pip install -e .)",
        )


def _image_part(data: bytes, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode()}"}}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def downscale(data: bytes, max_side: int = MAX_SIDE) -> tuple[bytes, str]:
    """PNG bytes no larger than ``max_side``; JPEG for photos keeps payloads small."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as opened:
        img = opened.convert("RGB") if opened.mode not in ("RGB", "L") else opened
        img.thumbnail((max_side, max_side))
        out = io.BytesIO()
        img.save(out, format="PNG", optimize=True)
        return out.getvalue(), "image/png"


def media_duration(path: Path) -> float | None:
    """Duration in seconds of an audio or video file (None when the container does not say)."""
    import av

    with av.open(str(path)) as container:
        if container.duration is not None:
            return container.duration / av.time_base
        stream = (container.streams.video or container.streams.audio)[0]
        return float(stream.duration * stream.time_base) if stream.duration and stream.time_base else None


def video_keyframes(path: Path, n: int = VIDEO_FRAMES) -> list[tuple[float, bytes]]:
    """``n`` frames evenly spaced over the clip (PNG), with their timestamps in seconds."""
    import av

    duration = media_duration(path)
    if not duration:
        raise ValueError(f"{path.name}: the video has no duration")
    frames = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        if stream.time_base is None:
            raise ValueError(f"{path.name}: the video stream has no time base")
        for i in range(n):
            t = duration * (i + 0.5) / n
            # Seek to the keyframe before t, then decode forward to the first frame at or after t.
            container.seek(int(t / stream.time_base), stream=stream, backward=True)
            frame = next((f for f in container.decode(stream) if f.time is not None and f.time >= t - 1e-3), None)
            if frame is not None:
                out = io.BytesIO()
                frame.to_image().save(out, format="PNG")
                frames.append((round(t, 2), out.getvalue()))
    return frames


def pdf_text(path: Path) -> str:
    from pypdf import PdfReader

    text = "\n\n".join(f"[page {i + 1}]\n{p.extract_text() or ''}" for i, p in enumerate(PdfReader(path).pages))
    return text[:PDF_TEXT_CHARS]


def pdf_pages(path: Path, n: int = PDF_PAGES, dpi: int = 80) -> list[bytes]:
    """The first ``n`` pages as PNG images."""
    import pypdfium2

    pages = []
    document = pypdfium2.PdfDocument(str(path))
    try:
        for i in range(min(n, len(document))):
            out = io.BytesIO()
            document[i].render(scale=dpi / 72).to_pil().save(out, format="PNG")
            pages.append(out.getvalue())
    finally:
        document.close()
    return pages


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
            parts.append(
                _text(
                    f"Audio file ({path.suffix.lstrip('.')}, {duration:.1f} s) that this model cannot listen to. "
                    f"The raw file is in the workspace at _attachments/{name}; transcribe or analyse it with tools "
                    "if you can."
                    if duration
                    else f"Audio file at _attachments/{name} (this model cannot listen to it)."
                )
            )
    elif modality == "document":
        if path.suffix.lower() == ".pdf":
            parts.append(_text(f"Extracted text:\n{pdf_text(path)}"))
            if vision:
                parts += [_image_part(png) for png in pdf_pages(path)]
        else:
            parts.append(_text(f"Content:\n{path.read_text(errors='replace')[:PDF_TEXT_CHARS]}"))
    return parts
