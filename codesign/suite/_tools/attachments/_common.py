"""Shared helpers for the attachment generators (fonts, paths)."""

from __future__ import annotations

from pathlib import Path

FONT_DIRS = [Path("/usr/share/fonts/truetype/dejavu"), Path("/usr/share/fonts/truetype/liberation")]


def font(size: int, bold: bool = False):
    """DejaVu or Liberation Sans (Debian's fonts-dejavu / fonts-liberation), else Pillow's default."""
    from PIL import ImageFont

    names = ["DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf",
             "LiberationSans-Bold.ttf" if bold else "LiberationSans-Regular.ttf"]
    for d in FONT_DIRS:
        for n in names:
            if (d / n).is_file():
                return ImageFont.truetype(str(d / n), size)
    return ImageFont.load_default(size)
