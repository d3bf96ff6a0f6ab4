"""Attachments of me-invoice-rates-pdf."""

from __future__ import annotations

import datetime
from pathlib import Path

TASK = "me-invoice-rates-pdf"

RATES = [  # role, hourly rate in EUR (two roles changed against the previous card RC-2026-01)
    ("Art direction", "95.00"),
    ("UX/UI design", "92.00"),
    ("Front-end development", "96.00"),
    ("Copywriting", "70.00"),
    ("Project management", "60.00"),
    ("Illustration", "80.00"),
]


def generate(out: Path) -> None:
    """The client's countersigned rate card: new hourly rates for two roles and a new VAT rate."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_creation_date(datetime.datetime(2026, 3, 27, 15, 30, tzinfo=datetime.timezone.utc))
    pdf.set_title("Rate card RC-2026-03")
    pdf.set_author("Foxglove Studio")
    pdf.set_margins(22, 20, 22)
    pdf.add_page()

    pdf.set_text_color(194, 83, 61)
    pdf.set_font("Helvetica", "B", 20)
    pdf.cell(0, 10, "Foxglove Studio", new_x="LMARGIN", new_y="NEXT")
    pdf.set_text_color(60, 60, 60)
    pdf.set_font("Helvetica", "", 9)
    pdf.cell(0, 5, "Katendrechtse Lagedijk 40, 3082 GG Rotterdam", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(8)

    pdf.set_text_color(20, 20, 20)
    pdf.set_font("Helvetica", "B", 15)
    pdf.cell(0, 8, "Rate card RC-2026-03", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    pdf.multi_cell(0, 5.5, align="L",
                   text="Client: Harbor & Pine Coffee Co., Oudegracht 118, 3511 AV Utrecht\n"
                        "Effective for all work from 1 April 2026. This card replaces rate card RC-2026-01.")
    pdf.ln(6)

    pdf.set_font("Helvetica", "B", 10)
    pdf.set_fill_color(240, 236, 230)
    pdf.cell(110, 8, "  Role", border="B", fill=True)
    pdf.cell(56, 8, "Hourly rate (EUR)  ", border="B", fill=True, align="R", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    for role, rate in RATES:
        pdf.cell(110, 8, "  " + role, border="B")
        pdf.cell(56, 8, rate + "  ", border="B", align="R", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(5)

    pdf.set_font("Helvetica", "", 10)
    pdf.multi_cell(0, 5.5, align="L",
                   text="All rates are per hour and exclude VAT. VAT is charged on every invoice at 21%.\n"
                        "Time is billed in half-hour steps. A returning-client discount of 10% applies to "
                        "the subtotal of each invoice.")
    pdf.ln(14)

    y = pdf.get_y()
    for x, who, role in ((22, "Lotte van Dijk", "Studio lead, Foxglove Studio"),
                         (112, "Marcus Okonkwo", "Operations lead, Harbor & Pine Coffee Co.")):
        pdf.set_xy(x, y)
        pdf.set_font("Times", "I", 16)
        pdf.set_text_color(30, 50, 120)
        pdf.cell(76, 10, who)
        pdf.set_draw_color(120, 120, 120)
        pdf.line(x, y + 11, x + 76, y + 11)
        pdf.set_xy(x, y + 12)
        pdf.set_font("Helvetica", "", 8.5)
        pdf.set_text_color(60, 60, 60)
        pdf.multi_cell(76, 4.5, f"{who}\n{role}\nSigned 27 March 2026")
    pdf.output(str(out / "rate-card-RC-2026-03.pdf"))
