"""The funnel: how many records remain after each stage, and why the others left (the paper's 39,325 queries →
37,463 after deduplication → …), printed and as an HTML page with a bar chart (inline SVG, no script)."""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Stage:
    name: str
    remaining: int
    removed: Counter[str] = field(default_factory=Counter)  # reason -> count
    unit: str = "queries"


@dataclass
class Funnel:
    stages: list[Stage] = field(default_factory=list)

    def add(self, name: str, remaining: int, removed: Counter[str] | None = None, unit: str = "queries") -> None:
        self.stages.append(Stage(name, remaining, removed or Counter(), unit))

    def as_rows(self) -> list[dict[str, object]]:
        return [
            {
                "stage": s.name,
                "remaining": s.remaining,
                "unit": s.unit,
                "removed": sum(s.removed.values()),
                "reasons": dict(s.removed.most_common()),
            }
            for s in self.stages
        ]

    def text(self) -> str:
        lines = []
        for s in self.stages:
            gone = sum(s.removed.values())
            lines.append(f"{s.name:<28} {s.remaining:>8} {s.unit}" + (f"   (-{gone})" if gone else ""))
            lines += [f"    {n:>8}  {reason}" for reason, n in s.removed.most_common(8)]
            if len(s.removed) > 8:
                lines.append(f"    {sum(n for _, n in s.removed.most_common()[8:]):>8}  other reasons")
        return "\n".join(lines)

    def html(self, title: str) -> str:
        top = max((s.remaining for s in self.stages), default=1) or 1
        width, bar_h, label_w = 900, 26, 260
        rows = []
        for i, s in enumerate(self.stages):
            y = 10 + i * (bar_h + 10)
            w = max(2, int((width - label_w - 90) * s.remaining / top))
            rows.append(
                f'<text x="{label_w - 8}" y="{y + 18}" text-anchor="end">{html.escape(s.name)}</text>'
                f'<rect x="{label_w}" y="{y}" width="{w}" height="{bar_h}" fill="#3b6ea5"/>'
                f'<text x="{label_w + w + 6}" y="{y + 18}">{s.remaining:,} {html.escape(s.unit)}</text>'
            )
        svg_h = 20 + len(self.stages) * (bar_h + 10)
        svg = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{svg_h}" role="img" '
            f'aria-label="curation funnel" font-family="sans-serif" font-size="14">{"".join(rows)}</svg>'
        )
        details = []
        for s in self.stages:
            if not s.removed:
                continue
            items = "".join(f"<tr><td>{n:,}</td><td>{html.escape(r)}</td></tr>" for r, n in s.removed.most_common())
            details.append(f"<h3>{html.escape(s.name)}: {sum(s.removed.values()):,} removed</h3>"
                           f"<table><tr><th>count</th><th>reason</th></tr>{items}</table>")  # fmt: skip
        return (
            "<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:2em;max-width:1000px}}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
            "td:first-child{text-align:right}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p>Records remaining after each stage of curation.</p>{svg}"
            f"<h2>Why records left</h2>{''.join(details) or '<p>none</p>'}</body></html>"
        )
