"""``tracker=none``: logs nothing (the run directory's parquet files are still written)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codesign._types import TrialRecord


class NullTracker:
    def start(self, run_name: str, group: str | None, config: dict[str, Any], out_dir: Path) -> None:
        pass

    def log_trial(self, record: TrialRecord) -> None:
        pass

    def finish(self, tables: dict[str, Any] | None, error: BaseException | None = None) -> None:
        pass
