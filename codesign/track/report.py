"""A self-contained HTML report of one run: scores, breakdowns, and every trial's verdicts with evidence.

Screenshots are embedded (downscaled), so the file can be mailed or attached to a W&B run as is.
"""

from __future__ import annotations

import base64
import functools
import io
import os
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl
from jinja2 import Environment, Template, select_autoescape

from codesign._types import TrialRecord
from codesign.redact import redact
from codesign.store import Store


def html_table(frame: pl.DataFrame) -> str:
    head = "".join(f"<th>{c}</th>" for c in frame.columns)
    rows = []
    for row in frame.iter_rows():
        cells = []
        for v in row:
            if isinstance(v, float):
                cells.append(f'<td class="num">{v:.3f}</td>')
            elif isinstance(v, int) and not isinstance(v, bool):
                cells.append(f'<td class="num">{v}</td>')
            else:
                cells.append(f"<td>{'' if v is None else _escape(str(v))}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


@functools.lru_cache(maxsize=4)
def _compiled(source: str) -> Template:
    """The report template compiled once per process (~50 ms each time: the cells of a sweep share it)."""
    return Environment(autoescape=select_autoescape(default=True)).from_string(source)


def _one_per_line(counts: pl.DataFrame) -> pl.DataFrame:
    """A run's one row of denominators as one line per count (a row of 30 columns is unreadable)."""
    if counts.height != 1:
        return counts
    row = counts.row(0, named=True)
    return pl.DataFrame(
        {
            "count": [k for k in row if not isinstance(row[k], str)],
            "value": [row[k] for k in row if not isinstance(row[k], str)],
        }
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _thumbnail(data: bytes | None) -> str | None:
    from PIL import Image

    if data is None:
        return None
    with Image.open(io.BytesIO(data)) as opened:
        img = opened.convert("RGB")
        img.thumbnail((640, 1200))
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=72)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def write_report(
    out_dir: Path, tables: dict[str, pl.DataFrame], records: list[TrialRecord], store: Store, title: str
) -> Path:
    """Screenshots are read from the store (local or object storage) into the page; traces are linked: by
    a path relative to the report for a local store, by their URI in object storage."""
    trials: list[dict[str, Any]] = []
    for r in sorted(records, key=lambda r: (r.task_id, str(r.cell))):
        verdicts = r.evaluation.verdicts if r.evaluation else []
        evidence = r.evaluation.evidence if r.evaluation else []
        shot = next(
            (e for e in evidence if e.kind == "screenshot" and e.id.startswith("shot:/") and e.viewport == "desktop"),
            None,
        )
        image = None
        if shot is not None and shot.path and r.eval_key:
            image = _thumbnail(store.read_bytes(f"trials/{r.trial_key}/evals/{r.eval_key}/{shot.path}"))
        n_pass = sum(v.verdict == "PASS" for v in verdicts)
        # Traces and screenshots of scripts and spec tests: linked (relative to this report), not embedded.
        kept = {
            e.id: e for e in evidence if e.kind in ("trace", "screenshot") and e.path and not e.id.startswith("shot:/")
        }
        files: dict[str, list[tuple[str, str]]] = {}
        if r.eval_key:
            folder = f"trials/{r.trial_key}/evals/{r.eval_key}"
            for v in verdicts:
                for eid in v.evidence_ids:
                    if eid in kept:
                        where = f"{folder}/{kept[eid].path}"
                        href = (
                            f"{store.uri.rstrip('/')}/{where}"
                            if store.remote
                            else os.path.relpath(store.root / where, out_dir)
                        )
                        files.setdefault(v.criterion_id, []).append((kept[eid].kind, href))
        t = r.telemetry
        trials.append(
            {
                "task_id": r.task_id,
                "cell": " · ".join(f"{k}={v}" for k, v in r.cell.items() if k != "run" and not k.endswith("_family")),
                "headline": f"{n_pass}/{len(verdicts)} PASS" if r.status == "ok" else f"{r.status}: {r.message[:200]}",
                "verdicts": verdicts,
                "image": image,
                "attribution": r.attribution,
                "files": files,
                "telemetry": (
                    f"exit {t.exit_status} · {t.turns} turns · {sum(t.tool_calls.values())} tool calls · "
                    f"{t.input_tokens + t.output_tokens} tokens · ${t.cost_usd:.4f} ({t.cost_source}) · "
                    f"{t.wall_s:.1f} s"
                )
                if t
                else "",
            }
        )
    summary = tables["summary"]
    breakdowns = html_table(tables["breakdowns"]) if tables["breakdowns"].height else ""
    adjusted = tables.get("adjusted")
    adjusted_html = html_table(adjusted) if adjusted is not None and adjusted["left_out"].sum() else ""
    template = resources.files("codesign.track").joinpath("templates/report.html").read_text()
    html = _compiled(template).render(
        title=title,
        subtitle=f"{len(records)} trials · {summary.height} score rows",
        trials=trials,
        summary=html_table(summary),
        denominators=html_table(_one_per_line(tables["denominators"])),
        breakdowns=breakdowns,
        adjusted=adjusted_html,
    )
    path = out_dir / "report.html"
    path.write_text(redact(html))
    return path
