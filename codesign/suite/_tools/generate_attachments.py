"""Rebuild the bundled suite's attachments with real tools (Pillow, fpdf2; later espeak-ng/sox, ffmpeg).

    python codesign/suite/_tools/generate_attachments.py [task_id ...]

Output is deterministic for a given tool version; the generated files are committed so a run never
needs these tools. Requires the ``authoring`` extra (pip install -e '.[authoring]').
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

SUITE = Path(__file__).resolve().parent.parent
FONT_DIRS = [Path("/usr/share/fonts/truetype/dejavu"), Path("/usr/share/fonts/truetype/liberation")]


def font(size: int, bold: bool = False):
    from PIL import ImageFont

    names = ["DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf",
             "LiberationSans-Bold.ttf" if bold else "LiberationSans-Regular.ttf"]
    for d in FONT_DIRS:
        for n in names:
            if (d / n).is_file():
                return ImageFont.truetype(str(d / n), size)
    return ImageFont.load_default(size)


def me_bakery_header_mockup(out: Path) -> None:
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


def me_expense_receipt_pdf(out: Path) -> None:
    """A hotel receipt whose total must flow into the expense tracker."""
    from fpdf import FPDF

    pdf = FPDF(format=(148, 210))  # A5
    pdf.set_creation_date(__import__("datetime").datetime(2026, 9, 14))  # deterministic bytes
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, "Harbourview Hotel", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    pdf.multi_cell(0, 5, "2 Quay Street, Portsmouth\nReceipt no. HV-20931\nGuest: Dana Whitfield\n"
                         "Stay: 11-13 September 2026 (2 nights)")
    pdf.ln(4)
    rows = [("Room, 2 nights x 178.00", "356.00"), ("Breakfast, 2 x 19.40", "38.80"), ("City tax", "18.00")]
    pdf.set_font("Helvetica", "B", 10)
    pdf.cell(95, 7, "Item", border="B")
    pdf.cell(30, 7, "Amount (USD)", border="B", align="R", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    for item, amount in rows:
        pdf.cell(95, 7, item)
        pdf.cell(30, 7, amount, align="R", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "B", 11)
    pdf.cell(95, 9, "Total charged", border="T")
    pdf.cell(30, 9, "412.80", border="T", align="R", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 8)
    pdf.ln(4)
    pdf.cell(0, 5, "Paid by card ending 4471 on 13/09/2026. Thank you for staying with us.")
    pdf.output(str(out / "hotel-receipt.pdf"))


GENERATORS: dict[str, Callable[[Path], None]] = {
    "me-bakery-header-mockup": me_bakery_header_mockup,
    "me-expense-receipt-pdf": me_expense_receipt_pdf,
}


def main(argv: list[str]) -> None:
    for task_id in argv or list(GENERATORS):
        out = SUITE / task_id / "attachments"
        out.mkdir(parents=True, exist_ok=True)
        GENERATORS[task_id](out)
        print(f"{task_id}: {', '.join(sorted(p.name for p in out.iterdir()))}")


if __name__ == "__main__":
    main(sys.argv[1:])
