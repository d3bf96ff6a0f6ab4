"""People's verdicts on graded criteria ("labels"), kept in the store next to what they judged.

One label is one reviewer's verdict on one criterion of one stored evaluation, a file of its own:

    <store>/labels/<trial_key>/<eval_key>/<criterion_id>/<reviewer>.json

so several reviewers never write the same file, a reviewer who changes their mind overwrites only their
own label, and labels survive restarts and travel with the store (local or object storage). A label is
about the candidate's app (the solve ``trial_key``), seen through that evaluation's evidence; agreement
(:mod:`codesign.score.agreement`) compares it with every grader of the same solve and criterion.
``CANT_TELL`` is a reviewer's answer but no verdict: it is counted and left out of every agreement figure.
"""

from __future__ import annotations

import datetime
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from codesign.errors import ConfigError
from codesign.store import Store

LABEL_VERDICTS = ("PASS", "PARTIAL", "FAIL", "CANT_TELL")
# Reviewer names, criterion ids and keys become path segments: nothing that could leave the labels folder.
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
COLUMNS = ["trial_key", "eval_key", "task_id", "criterion_id", "reviewer", "verdict", "note", "at"]
SCHEMA = dict.fromkeys(COLUMNS, pl.String)


@dataclass(frozen=True)
class Label:
    trial_key: str
    eval_key: str
    task_id: str
    criterion_id: str
    reviewer: str
    verdict: str  # one of LABEL_VERDICTS
    note: str = ""
    at: str = ""  # when it was recorded (UTC, ISO 8601)

    def check(self, where: str = "label") -> Label:
        """This label, or a ConfigError naming the field that cannot be stored and where it came from."""
        for name in ("trial_key", "eval_key", "criterion_id", "reviewer"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _SEGMENT.match(value):
                raise ConfigError(
                    f"{where}: {name} {value!r} is not a valid name",
                    "use letters, digits, '.', '_' or '-' (up to 80, starting with a letter or digit)",
                )
        if self.verdict not in LABEL_VERDICTS:
            raise ConfigError(f"{where}: verdict {self.verdict!r} is not one of {', '.join(LABEL_VERDICTS)}")
        return self

    @property
    def path(self) -> str:
        return f"labels/{self.trial_key}/{self.eval_key}/{self.criterion_id}/{self.reviewer}.json"


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def save(store: Store, label: Label) -> Label:
    """Store ``label`` (replacing that reviewer's earlier label on the same criterion of that evaluation)."""
    label = label.check()
    stamped = label if label.at else Label(**{**asdict(label), "at": now()})
    store.write_bytes(stamped.path, json.dumps(asdict(stamped), indent=1).encode())
    return stamped


def load(store: Store) -> pl.DataFrame:
    """Every label in the store, one row each (``COLUMNS``). A file that is not a label is named and skipped."""
    rows = []
    for path in store.glob("labels/*/*/*/*.json"):
        try:
            data = json.loads(store.read_bytes(path) or b"")
            rows.append(asdict(Label(**{k: data.get(k, "") for k in COLUMNS}).check(path)))
        except (ValueError, TypeError, ConfigError) as e:
            print(f"warning: {store.uri}/{path} is not a label, skipped: {e}", file=sys.stderr)
    return pl.DataFrame(rows, schema=SCHEMA)


def export(frame: pl.DataFrame, path: Path) -> None:
    """Labels to ``.csv`` or ``.parquet`` (by the suffix)."""
    frame = frame.select(COLUMNS)
    if path.suffix == ".csv":
        frame.write_csv(path)
    elif path.suffix == ".parquet":
        frame.write_parquet(path)
    else:
        raise ConfigError(f"cannot write labels to {path}", "name a .csv or .parquet file")


def read_file(path: Path) -> list[Label]:
    """Labels made elsewhere (``.csv`` or ``.parquet`` with ``COLUMNS``; ``note`` and ``at`` optional). Every
    row is checked before any is returned: a bad row is an error naming the file and the row."""
    if path.suffix == ".csv":
        frame = pl.read_csv(path, infer_schema=False)  # every column as text: keys are not numbers
    elif path.suffix == ".parquet":
        frame = pl.read_parquet(path)
    else:
        raise ConfigError(f"cannot read labels from {path}", "give a .csv or .parquet file")
    missing = [c for c in COLUMNS[:6] if c not in frame.columns]
    if missing:
        raise ConfigError(f"{path} lacks the column(s) {', '.join(missing)}", f"a label file has {', '.join(COLUMNS)}")
    labels = []
    for i, row in enumerate(frame.iter_rows(named=True), start=2 if path.suffix == ".csv" else 1):
        values = {k: "" if row.get(k) is None else str(row[k]) for k in COLUMNS}
        labels.append(Label(**values).check(f"{path} row {i}"))
    return labels
