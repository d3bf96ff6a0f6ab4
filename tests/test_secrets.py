"""Secrets never land in what codesign stores, and retries never wait longer than their cap."""

from __future__ import annotations

import pytest

from codesign.redact import MARK, redact, redact_data
from codesign.runner import run
from tests.helpers import compose_config

SHAPED = "sk-proj-" + "Ab3" * 10  # an API key's shape, from anywhere
VALUE = "zz-unique-value-4f2c9a"  # no known shape: caught because an environment variable holds it


def test_redaction_catches_secret_values_and_secret_shapes(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", VALUE)
    monkeypatch.setenv("FEATURE_FLAG", "true")  # not secret-named: ordinary words stay
    text = f"key={SHAPED} token={VALUE} AKIAABCDEFGHIJKLMNOP Bearer abcdefghijklmnopqrstuvwxyz012345 true"
    out = redact(text)
    assert SHAPED not in out and VALUE not in out and "AKIA" not in out and "abcdefghijklmnopqrstuvwxyz" not in out
    assert out.count(MARK) == 4 and out.endswith("true")
    assert redact_data({"a": [VALUE, {"b": SHAPED}], VALUE: 1}) == {"a": [MARK, {"b": MARK}], MARK: 1}


@pytest.mark.browser
@pytest.mark.slow
def test_nothing_stored_shows_a_secret_the_app_displays(tmp_path, suite_copy, monkeypatch):
    """An app that prints a key (as a leaky build could) is graded; its evidence, verdicts, tables and
    report are stored with the key redacted."""
    monkeypatch.setenv("MY_SERVICE_TOKEN", VALUE)
    root = suite_copy("me-bakery-header-mockup")
    page = root / "me-bakery-header-mockup" / "app" / "index.html"
    page.write_text(page.read_text().replace("</body>", f"<p id='leak'>{SHAPED} {VALUE}</p></body>"))
    out = tmp_path / "run"
    out.mkdir()
    tables = run(compose_config("tasks=all", f"tasks.root={root}", "executor=inline", "tracker=none",
                                f"store.root={tmp_path / 'store'}", "attribution.below=null"), out)  # fmt: skip
    assert tables["tasks"].row(0, named=True)["status"] == "ok"
    stored = [p for p in [*tmp_path.joinpath("store").rglob("*"), *out.rglob("*")] if p.is_file()]
    texts = {p: p.read_bytes().decode("utf-8", "replace") for p in stored if p.suffix not in (".png", ".jpg")}
    assert any(MARK in t for t in texts.values())  # the DOM evidence had it, redacted
    leaking = [str(p) for p, t in texts.items() if SHAPED in t or VALUE in t]
    assert not leaking, leaking


def test_backoff_never_exceeds_its_cap():
    from codesign.solve.models.litellm_model import backoff_delay

    delays = [backoff_delay(2.0, 60.0, attempt) for attempt in range(12) for _ in range(50)]
    assert max(delays) <= 60.0 and min(delays) >= 1.0
    assert max(backoff_delay(2.0, 60.0, 10) for _ in range(50)) > 30.0  # the cap is reached, with jitter below it
