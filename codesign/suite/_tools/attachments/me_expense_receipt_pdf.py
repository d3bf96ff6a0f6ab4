"""Attachments of me-expense-receipt-pdf."""

from __future__ import annotations

from pathlib import Path

TASK = "me-expense-receipt-pdf"


def generate(out: Path) -> None:
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
