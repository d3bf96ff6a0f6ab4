"""Secrets never land in what codesign stores, and retries never wait longer than their cap."""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from codesign.redact import MARK, redact, redact_data
from codesign.runner import run
from tests.helpers import compose_config

SHAPED = "sk-proj-" + "Ab3" * 10  # an API key's shape, from anywhere
GITHUB = "ghp_" + "Zq7" * 12  # a GitHub token's shape
VALUE = "zz-unique-value-4f2c9a"  # no known shape: caught because an environment variable holds it
SECRETS = (SHAPED, GITHUB, VALUE)
_BLOCK, _HEADER, _FULL, _FIRST, _LAST = 32 * 1024, 7, 1, 2, 4  # LevelDB's log format, which W&B's log uses


def wandb_records(path: Path) -> Iterator[str]:
    """The records of a W&B transaction log (``run-*.wandb``) as protobuf text. The log is framed like LevelDB's
    (32 KiB blocks; a record split into fragments, each behind a 7-byte header), so a string in it need not
    appear in the file's bytes in one piece."""
    from google.protobuf import text_format
    from wandb.proto.wandb_internal_pb2 import Record

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B transaction log"
    pos, pending = _HEADER, b""  # the file header takes a record header's room
    while pos + _HEADER <= len(data):
        if _BLOCK - pos % _BLOCK < _HEADER:  # a block's tail too short for a header is padding
            pos += _BLOCK - pos % _BLOCK
            continue
        length, kind = struct.unpack_from("<HB", data, pos + 4)
        chunk, pos = data[pos + _HEADER : pos + _HEADER + length], pos + _HEADER + length
        pending = chunk if kind == _FIRST else pending + chunk
        if kind in (_FULL, _LAST):
            record = Record()
            record.ParseFromString(pending)
            pending = b""
            yield text_format.MessageToString(record, as_utf8=True)


def readable(path: Path) -> str:
    """What a stored file holds, as text: parquet decoded (it is compressed), W&B logs parsed, archives opened."""
    if path.suffix == ".parquet":
        return json.dumps(pl.read_parquet(path, glob=False).to_dicts(), default=str)
    if path.suffix == ".wandb":
        return "\n".join(wandb_records(path))
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            return "\n".join(z.read(n).decode("utf-8", "replace") for n in z.namelist())
    return path.read_bytes().decode("utf-8", "replace")


def test_redaction_catches_secret_values_and_secret_shapes(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", VALUE)
    monkeypatch.setenv("FEATURE_FLAG", "true")  # not secret-named: ordinary words stay
    text = f"key={SHAPED} gh={GITHUB} token={VALUE} AKIAABCDEFGHIJKLMNOP Bearer abcdefghijklmnopqrstuvwxyz012345 true"
    out = redact(text)
    assert not any(s in out for s in SECRETS) and "AKIA" not in out and "abcdefghijklmnopqrstuvwxyz" not in out
    assert out.count(MARK) == 5 and out.endswith("true")
    assert redact_data({"a": [VALUE, {"b": SHAPED}], VALUE: 1}) == {"a": [MARK, {"b": MARK}], MARK: 1}
    # A secret set later is caught too (the environment is read on every call, the pattern cached by its
    # values), and of two secrets where one starts the other, the longer goes whole (no tail left over).
    monkeypatch.setenv("LATER_API_KEY", VALUE + "-and-more")
    assert redact(f"x {VALUE}-and-more y {VALUE} z") == f"x {MARK} y {MARK} z"


@pytest.mark.browser
@pytest.mark.slow
def test_nothing_stored_shows_a_secret_the_app_displays(tmp_path, suite_copy, monkeypatch):
    """An app that prints keys (as a leaky build could) is graded and tracked in W&B (offline, for real); its
    evidence, verdicts, tables, report and W&B run are stored with the keys redacted — read as what they hold
    (parquet decoded, the W&B log's records parsed), not as bytes a compressed leak would hide in."""
    monkeypatch.setenv("MY_SERVICE_TOKEN", VALUE)
    monkeypatch.setenv("WANDB_MODE", "offline")
    root = suite_copy("me-bakery-header-mockup")
    page = root / "me-bakery-header-mockup" / "app" / "index.html"
    page.write_text(page.read_text().replace("</body>", f"<p id='leak'>{' '.join(SECRETS)}</p></body>"))
    with (page.parent.parent / "criteria.yaml").open("a") as criteria:  # its failure quotes the page's text
        criteria.write("  - id: leak-note\n    text: The page shows no note.\n    kind: content\n"
                       "    probe:\n      expect:\n        - text: {selector: \"#leak\", equals: \"\"}\n")  # fmt: skip
    out = tmp_path / "run"
    out.mkdir()
    tables = run(compose_config("tasks=all", f"tasks.root={root}", "executor=inline", "tracker=wandb",
                                f"store.root={tmp_path / 'store'}", "attribution.below=null"), out)  # fmt: skip
    # run.finish() returns before W&B's service has closed the run's transaction log (its inform_finish is sent,
    # not awaited): under the suite's load the log once read back empty. teardown() waits for the service to
    # exit, as the process's own exit does, so the log read is the whole one.
    import wandb

    wandb.teardown()
    assert tables["tasks"].row(0, named=True)["status"] == "ok"
    stored = [p for p in [*tmp_path.joinpath("store").rglob("*"), *out.rglob("*")] if p.is_file()]
    texts = {p: readable(p) for p in stored if p.suffix not in (".png", ".jpg")}
    leaking = [str(p) for p, t in texts.items() if any(s in t for s in SECRETS)]
    assert not leaking, leaking  # nowhere, whatever the format
    redacted = {p.name for p, t in texts.items() if MARK in t}
    # Each net was tried: the evidence, the verdict (its reason quotes the page), the tables, W&B's copy of them.
    assert {"evidence.json", "verdicts.json", "verdicts.parquet", "report.html"} <= redacted, redacted
    assert any(name.startswith("verdicts_") and name.endswith(".table.json") for name in redacted), redacted
    logs = {p: t for p, t in texts.items() if p.suffix == ".wandb"}
    assert len(logs) == 1, list(logs)
    ((log, text),) = logs.items()  # the W&B log was read, not skipped
    assert "run_id:" in text and "history {" in text, f"{log}: {log.stat().st_size} bytes, records: {text[:300]!r}"


def test_backoff_never_exceeds_its_cap():
    from codesign.solve.models.litellm_model import backoff_delay

    delays = [backoff_delay(2.0, 60.0, attempt) for attempt in range(12) for _ in range(50)]
    assert max(delays) <= 60.0 and min(delays) >= 1.0
    assert max(backoff_delay(2.0, 60.0, 10) for _ in range(50)) > 30.0  # the cap is reached, with jitter below it
