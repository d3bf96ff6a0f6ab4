"""What a run shows while it runs: a line per finished trial, or — for a grid in a terminal — one live table
(rich) with, per cell, trials done / running / failed and the spend so far.

The line form stays whenever stdout is not a terminal (logs, CI, a cluster job's output file): every
trial's outcome is kept in the log there; a live table would leave nothing readable behind.
"""

from __future__ import annotations

import sys
import time
from collections import Counter, defaultdict
from typing import Any

from codesign._types import TrialRecord, TrialStatus

LIVE_FROM_CELLS = 2  # a grid of at least this many cells gets the live table (in a terminal)


class Progress:
    def __init__(self, cells: dict[str, int], live: bool | None = None) -> None:
        """``cells``: each cell's name and number of trials."""
        self.total, self.cells, self.done = sum(cells.values()), cells, 0
        self.start = time.monotonic()
        self.prefix = len(cells) > 1
        self.live_mode = (sys.stdout.isatty() and len(cells) >= LIVE_FROM_CELLS) if live is None else live
        self.counts: dict[str, Counter[str]] = {c: Counter() for c in cells}
        self.spend: defaultdict[str, float] = defaultdict(float)
        self._live: Any = None
        if self.live_mode:
            from rich.live import Live

            self._live = Live(self, refresh_per_second=2, transient=False)  # redrawn from __rich__: time runs
            self._live.start()

    def started(self, spec: dict[str, Any]) -> None:
        self.counts.setdefault(spec["cell"].get("run", ""), Counter())["running"] += 1
        self._refresh()

    def finished(self, record: TrialRecord) -> None:
        self.done += 1
        cell = record.cell.get("run", "")
        counts = self.counts.setdefault(cell, Counter())
        counts["running"] = max(0, counts["running"] - 1)
        counts["done"] += 1
        if record.status not in (TrialStatus.OK, TrialStatus.SOLVED):
            counts["failed"] += 1
        if record.telemetry is not None and not record.cached.get("solve"):
            self.spend[cell] += record.telemetry.cost_usd
        if self._live is None:
            print(self._line(record), flush=True)
        self._refresh()

    def close(self) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None

    def _line(self, record: TrialRecord) -> str:
        verdicts = record.evaluation.verdicts if record.evaluation else []
        n_pass = sum(v.verdict == "PASS" for v in verdicts)
        ok = record.status == TrialStatus.OK
        what = f"{n_pass}/{len(verdicts)} PASS" if ok else f"{record.status}: {record.message}"
        reused = "+".join(k for k, v in record.cached.items() if v)
        where = f"{record.cell.get('run')}: " if self.prefix else ""
        notes = (f" (reused {reused})" if reused else "") + (f" on {record.node[:8]}" if record.node else "")
        if record.infra_events:
            notes += f" after {len(record.infra_events)} lost attempt(s)"
        return f"[{self.done}/{self.total} {time.monotonic() - self.start:5.1f}s] {where}{record.task_id} {what}{notes}"

    def _table(self) -> Any:
        from rich.table import Table

        elapsed = time.monotonic() - self.start
        table = Table(title=f"{self.done}/{self.total} trials · {elapsed:.0f} s · ${sum(self.spend.values()):.4f}")
        for column in ("cell", "done", "running", "failed", "spend $"):
            table.add_column(column, justify="left" if column == "cell" else "right")
        for cell, counts in self.counts.items():
            table.add_row(
                cell,
                f"{counts['done']}/{self.cells.get(cell, '?')}",
                str(counts["running"]),
                str(counts["failed"]),
                f"{self.spend[cell]:.4f}",
            )
        return table

    def __rich__(self) -> Any:
        return self._table()

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()
