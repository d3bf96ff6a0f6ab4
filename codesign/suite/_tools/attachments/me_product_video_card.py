"""Attachments of me-product-video-card."""

from __future__ import annotations

import subprocess
from pathlib import Path

TASK = "me-product-video-card"

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
SWATCH = "0x6A9FD4"  # "Glacier Blue": only shown as a colour, never written out


def _text(
    text: str,
    x: str,
    y: str,
    size: int,
    start: float,
    end: float,
    color: str = "white",
    bold: bool = False,
    alpha: str = "1",
) -> str:
    font = FONT_DIR / ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf")
    text = text.replace("\\", "\\\\").replace(":", "\\:").replace("'", "\u2019").replace("%", "\\%")
    return (
        f"drawtext=fontfile={font}:text='{text}':x={x}:y={y}:fontsize={size}:fontcolor={color}"
        f":alpha='{alpha}':enable='between(t,{start},{end})'"
    )


def _box(x: int, y: int, w: int, h: int, color: str, start: float, end: float) -> str:
    return f"drawbox=x={x}:y={y}:w={w}:h={h}:color={color}:t=fill:enable='between(t,{start},{end})'"


def generate(out: Path) -> None:
    """A 10 s, 640x360 restock teaser (ffmpeg drawtext/drawbox): name, stock, colourway, new price."""
    fade = "min(1,(t-{s})*4)"  # a quick fade-in per scene
    filters = [
        # Scene 1 (0-2 s): brand card.
        _text("NORTHPEAK", "(w-text_w)/2", "120", 54, 0, 2, bold=True, alpha=fade.format(s=0)),
        _text("Spring restock update", "(w-text_w)/2", "196", 24, 0, 2, color="0xC9D3E0"),
        # Scene 2 (2-4.5 s): the product is back.
        _text("Trail Runner 2", "(w-text_w)/2", "100", 50, 2, 4.5, bold=True, alpha=fade.format(s=2)),
        _box(190, 190, 260, 54, "0x2E9E5B", 2.3, 4.5),
        _text("BACK IN STOCK", "(w-text_w)/2", "203", 28, 2.3, 4.5, bold=True),
        # Scene 3 (4.5-7 s): the new colourway, as a swatch plus its name.
        _text("New colourway", "60", "70", 26, 4.5, 7, color="0xC9D3E0"),
        _box(60, 120, 220, 150, SWATCH, 4.5, 7),
        _text("Glacier Blue", "310", "160", 40, 4.8, 7, bold=True, alpha=fade.format(s=4.8)),
        _text("Trail Runner 2", "310", "216", 24, 4.8, 7, color="0xC9D3E0"),
        # Scene 4 (7-10 s): the new price, the old one struck through.
        _text("Trail Runner 2", "(w-text_w)/2", "64", 34, 7, 10, bold=True),
        _text("was $140.00", "(w-text_w)/2", "128", 26, 7, 10, color="0x8A94A3"),
        _box(234, 139, 172, 3, "0x8A94A3", 7, 10),
        _text("now $118.00", "(w-text_w)/2", "176", 56, 7.3, 10, bold=True, alpha=fade.format(s=7.3)),
        _text("Sizes 6-13  \u00b7  ships today", "(w-text_w)/2", "270", 22, 7.6, 10, color="0xC9D3E0"),
        # Footer on every scene.
        _box(0, 330, 640, 30, "0x0F141C", 0, 10),
        _text("northpeak running  \u00b7  trail & road", "20", "337", 15, 0, 10, color="0x8A94A3"),
    ]
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0x1D2430:s=640x360:d=10:r=24",
         "-vf", ",".join(filters), "-c:v", "libx264", "-preset", "medium", "-crf", "26", "-pix_fmt", "yuv420p",
         "-threads", "1", "-x264-params", "threads=1", "-movflags", "+faststart", "-fflags", "+bitexact",
         "-flags:v", "+bitexact", "-map_metadata", "-1", str(out / "restock-teaser.mp4")],
        check=True, capture_output=True,
    )  # fmt: skip
