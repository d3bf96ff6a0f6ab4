"""Attachments of me-event-schedule-photo."""

from __future__ import annotations

import random
from pathlib import Path

from _common import FONT_DIRS, font

TASK = "me-event-schedule-photo"

BLUE, RED, GREEN, BLACK = (31, 74, 160), (196, 45, 40), (34, 128, 62), (38, 38, 44)


def _hand_font(size: int):
    """An oblique sans as a stand-in for handwriting (falls back to the shared font helper)."""
    from PIL import ImageFont

    for d in FONT_DIRS:
        for name in ("DejaVuSans-Oblique.ttf", "LiberationSans-Italic.ttf"):
            if (d / name).is_file():
                return ImageFont.truetype(str(d / name), size)
    return font(size)


class Marker:
    """Writes marker-style text character by character, each slightly tilted and off the baseline."""

    def __init__(self, board, rng: random.Random):
        self.board, self.rng = board, rng

    def write(self, x: float, y: float, text: str, size: int, color, stroke: int = 1) -> float:
        from PIL import Image, ImageDraw

        for ch in text:
            f = _hand_font(size + self.rng.randint(-2, 2))
            w = f.getbbox(ch)[2] if ch.strip() else size * 0.38
            if ch.strip():
                tile = Image.new("RGBA", (size * 2, size * 2), (0, 0, 0, 0))
                ImageDraw.Draw(tile).text(
                    (size // 2, size // 3),
                    ch,
                    font=f,
                    fill=(*color, 235),
                    stroke_width=stroke,
                    stroke_fill=(*color, 235),
                )
                tile = tile.rotate(self.rng.uniform(-7, 7), resample=Image.BICUBIC)
                self.board.alpha_composite(tile, (int(x - size // 2), int(y - size // 3 + self.rng.uniform(-2, 2))))
            x += w * self.rng.uniform(0.92, 1.04) + stroke
        return x

    def line(self, points, color, width: int = 4) -> None:
        from PIL import ImageDraw

        jittered = [(px + self.rng.uniform(-1.5, 1.5), py + self.rng.uniform(-1.5, 1.5)) for px, py in points]
        ImageDraw.Draw(self.board).line(jittered, fill=(*color, 230), width=width, joint="curve")

    def arrow(self, x1: float, y: float, x2: float, color, both: bool = False) -> None:
        self.line([(x1, y), ((x1 + x2) / 2, y + 2), (x2, y)], color)
        self.line([(x2 - 14, y - 9), (x2, y), (x2 - 14, y + 9)], color)
        if both:
            self.line([(x1 + 14, y - 9), (x1, y), (x1 + 14, y + 9)], color)


def generate(out: Path) -> None:
    """A phone photo of the organisers' whiteboard listing the day's schedule changes."""
    from PIL import Image, ImageDraw, ImageFilter

    rng = random.Random(514)
    W, H = 1500, 1000
    photo = Image.new("RGB", (W, H), (120, 112, 100))
    wall = ImageDraw.Draw(photo)
    for i in range(H):  # warm wall with a light falloff
        shade = int(118 + 22 * (1 - abs(i - H / 2) / (H / 2)))
        wall.line([(0, i), (W, i)], fill=(shade, shade - 8, shade - 20))
    # Aluminium frame and the board.
    wall.rectangle([60, 50, W - 60, H - 70], fill=(176, 178, 182))
    board = Image.new("RGBA", (W - 150, H - 150), (244, 243, 237, 255))
    bd = ImageDraw.Draw(board)
    for i in range(board.width):  # the ceiling light's glare towards the upper right
        g = int(8 * (i / board.width))
        bd.line([(i, 0), (i, board.height)], fill=(238 + g, 237 + g, 231 + g, 255))
    # Ghosts of older, wiped writing.
    ghost = Marker(board, rng)
    ghost.write(1010, 272, "sponsor tables??", 34, (214, 214, 212), stroke=0)
    ghost.write(90, 655, "wifi poster x3", 30, (218, 217, 214), stroke=0)

    m = Marker(board, rng)
    # Title.
    end = m.write(60, 36, "DAY 1 (Thu 14 May) - SCHEDULE CHANGES", 44, BLACK, stroke=2)
    m.line([(60, 100), (end * 0.6, 104), (end, 98)], BLACK, width=5)

    # 1) Swap two Main Hall talks.
    m.write(60, 140, "1) SWAP slots (both Main Hall):", 36, BLUE, stroke=1)
    x = m.write(110, 200, "A11y Audits (Marcus)  11:45", 34, BLUE, stroke=1)
    m.arrow(x + 20, 222, x + 110, BLUE, both=True)
    m.write(x + 130, 200, "Flaky UIs (Leila)  14:45", 34, BLUE, stroke=1)
    m.write(110, 256, "Marcus's train gets in late, Leila is fine with the morning", 26, BLUE, stroke=0)

    # 2) Room change.
    m.write(60, 320, "2) Observability on a Budget (Tom)", 36, RED, stroke=1)
    x = m.write(110, 380, "Studio 2", 34, RED, stroke=1)
    m.line([(104, 402), (x + 4, 396)], RED, width=4)  # struck through
    m.arrow(x + 20, 400, x + 100, RED)
    x = m.write(x + 120, 380, "MAIN HALL", 36, RED, stroke=2)
    m.write(x + 30, 386, "(180 RSVPs - too big for Studio 2!)", 26, RED, stroke=0)

    # 3) A new lightning talk, with a corrected start time.
    m.write(60, 460, "3) + NEW lightning talk", 36, GREEN, stroke=1)
    x = m.write(110, 520, "15:15", 34, GREEN, stroke=1)
    m.line([(104, 540), (x + 4, 536)], GREEN, width=4)
    x = m.write(x + 22, 520, "15:30 - 15:45   Main Hall", 34, GREEN, stroke=1)
    m.write(110, 578, '"Feature Flags in 5 Minutes" - Priya Nair', 34, GREEN, stroke=1)

    # Not a schedule change: an organisers-only reminder in the corner.
    m.write(860, 690, "Speakers' dinner 19:30 @ Pier 4", 28, BLACK, stroke=0)
    m.write(860, 728, "(NOT on the public site!)", 28, BLACK, stroke=0)

    # Marker tray shadow, then mount the board in the frame.
    photo.paste(board.convert("RGB"), (75, 65))
    wall.rectangle([75, H - 88, W - 75, H - 72], fill=(150, 152, 156))
    for i, c in enumerate([BLUE, RED, GREEN, BLACK]):
        wall.rounded_rectangle([300 + i * 90, H - 100, 370 + i * 90, H - 84], radius=6, fill=c)

    # Handheld photo: slight tilt, soft focus, sensor noise, a little vignetting; crop and shrink.
    photo = photo.rotate(-1.6, resample=Image.BICUBIC, expand=False, fillcolor=(120, 112, 100))
    photo = photo.filter(ImageFilter.GaussianBlur(0.8))
    noise = Image.frombytes("L", (W, H), rng.randbytes(W * H)).filter(ImageFilter.GaussianBlur(0.6))
    photo = Image.blend(photo, Image.merge("RGB", [noise] * 3), 0.05)
    photo = photo.crop((30, 20, W - 30, H - 20)).resize((1200, 768), Image.LANCZOS)
    photo.save(out / "whiteboard.jpg", quality=80, optimize=True)
