"""Attachments of me-bakery-header-mockup."""

from __future__ import annotations

from pathlib import Path

from _common import font

TASK = "me-bakery-header-mockup"


def generate(out: Path) -> None:
    """A designer's mockup of the restyled header, with a colour callout."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (1200, 420), "#fffaf3")
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, 1200, 150], fill="#2f5d50")
    d.text((40, 30), "Crumb & Co.", font=font(40, True), fill="#ffffff")
    d.text((42, 88), "Fresh bread daily", font=font(22), fill="#d9e8e2")
    for i, label in enumerate(["Menu", "Visit", "About"]):
        d.text((640 + i * 90, 62), label, font=font(20), fill="#ffffff")
    d.rounded_rectangle([960, 48, 1160, 100], radius=24, fill="#f2b33d")
    d.text((992, 62), "Order ahead", font=font(20, True), fill="#2b2b2b")
    # Design notes, as a designer would annotate a mockup.
    d.rectangle([40, 200, 640, 390], outline="#999999", width=2)
    notes = ["DESIGN NOTES", "Header background: #2F5D50", "Tagline under the logo: \"Fresh bread daily\"",
             "Order button: pill shape, 24px corner radius", "Keep nav links and button colour as they are"]
    for i, line in enumerate(notes):
        d.text((60, 215 + i * 34), line, font=font(20, i == 0), fill="#333333")
    img.save(out / "header-mockup.png", optimize=True)
