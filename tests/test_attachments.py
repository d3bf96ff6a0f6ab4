"""Attachments as model input, built from the bundled suite's real files."""

from __future__ import annotations

import base64
import io

from PIL import Image

from codesign.solve.attachments import content_parts
from codesign.tasks.loader import load_task
from tests.conftest import SUITE


def attachment(task_id: str) -> dict:
    return load_task(SUITE / task_id).view().attachments[0]


def images(parts: list[dict]) -> list[Image.Image]:
    out = []
    for p in parts:
        if p["type"] == "image_url":
            data = p["image_url"]["url"].split(",", 1)[1]
            out.append(Image.open(io.BytesIO(base64.b64decode(data))))
    return out


def texts(parts: list[dict]) -> str:
    return "\n".join(p["text"] for p in parts if p["type"] == "text")


def test_image_is_sent_downscaled():
    parts = content_parts(attachment("me-bakery-header-mockup"))
    [img] = images(parts)
    assert max(img.size) <= 1568 and "`header-mockup.png` (image)" in texts(parts)


def test_image_without_vision_is_described_not_sent():
    parts = content_parts(attachment("me-bakery-header-mockup"), vision=False)
    assert images(parts) == [] and "cannot view images" in texts(parts)


def test_video_becomes_timestamped_keyframes():
    parts = content_parts(attachment("me-product-video-card"))
    frames = images(parts)
    assert len(frames) == 6
    stamps = [float(t.split()[2]) for t in texts(parts).splitlines() if t.startswith("frame at")]
    assert stamps == sorted(stamps) and len(stamps) == 6 and 0 < stamps[0] < stamps[-1] < 10.5
    assert "Video, 10.0 s" in texts(parts)


def test_pdf_becomes_text_and_page_images():
    parts = content_parts(attachment("me-expense-receipt-pdf"))
    assert "Total charged" in texts(parts) and "412.80" in texts(parts)
    assert len(images(parts)) == 1  # one page


def test_audio_for_a_model_that_cannot_listen_is_a_documented_fallback():
    parts = content_parts(attachment("me-podcast-audio-chapters"), audio=False)
    text = texts(parts)
    assert "cannot listen" in text and "_attachments/" in text and " s)" in text
    assert not any(p["type"] == "input_audio" for p in parts)


def test_audio_for_a_model_that_can_listen_is_input_audio():
    parts = content_parts(attachment("me-podcast-audio-chapters"), audio=True)
    [audio] = [p for p in parts if p["type"] == "input_audio"]
    assert audio["input_audio"]["format"] == "mp3" and len(base64.b64decode(audio["input_audio"]["data"])) > 1000


def test_a_missing_media_library_stops_the_run_before_any_trial_naming_tasks_and_fix(monkeypatch, tmp_path):
    import sys

    import pytest

    from codesign.errors import EnvironmentSetupError
    from codesign.runner import prepare
    from tests.helpers import compose_config

    monkeypatch.setitem(sys.modules, "av", None)  # `import av` now fails, as on a broken install
    cfg = compose_config("tasks=sample", "tracker=none", "executor=inline")
    with pytest.raises(EnvironmentSetupError) as err:
        prepare(cfg, tmp_path)
    message = str(err.value)
    assert "av (video: me-product-video-card)" in message and "make setup" in message
    assert "me-bakery-header-mockup" not in message  # an image task needs no video library
