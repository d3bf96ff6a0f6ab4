"""Only the candidate decides a verdict: when the machinery under a grader fails — the browser is killed
mid-probe, the evaluation runs out of time with no sign of the app — the criteria are ungraded with that
cause, the trial is a grading error (never a zero), it is not stored as finished, and the next run grades it
again. (Scripts, specs and judges that fail: tests/test_scripts.py, test_specs.py, test_judge*.py.)"""

from __future__ import annotations

import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest

from tests.test_statuses import make_task, run_suite

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _parent(pid: int) -> int:
    try:  # /proc/<pid>/stat: "pid (name) state ppid ..."; the name may hold spaces, so split after it
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _descends_from_this_test(pid: int) -> bool:
    while pid > 1:
        pid = _parent(pid)
        if pid == os.getpid():
            return True
    return False


def browser_processes() -> set[int]:
    """The Chromium browsers this test process started (the main process of each, not its renderers): never
    another process's."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        main = b"--remote-debugging-pipe" in args and not any(a.startswith(b"--type=") for a in args)
        if (
            main
            and "chrom" in Path(args[0].decode(errors="replace")).name
            and _descends_from_this_test(int(entry.name))
        ):
            found.add(int(entry.name))
    return found


class BrowserKiller:
    """A loopback endpoint the app under test calls from its button: the first call SIGKILLs the browsers this
    process started after this object (the run's own Chromium; not the session's, never another process's)."""

    def __init__(self) -> None:
        self.spared, self.killed = browser_processes(), set[int]()
        killer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not killer.killed:
                    killer.killed = browser_processes() - killer.spared
                    for pid in killer.killed:
                        os.kill(pid, signal.SIGKILL)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/kill"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_browser_killed_mid_probe_leaves_the_trial_ungraded_and_the_next_run_grades_it(tmp_path):
    killer = BrowserKiller()
    try:
        page = ("<h1>page</h1><p id='note' hidden>shown</p><button id='go' onclick=\"fetch('" + killer.url
                + "', {mode: 'no-cors'}); document.getElementById('note').hidden = false\">go</button>\n")  # fmt: skip
        root = tmp_path / "suite"
        make_task(root, "crash", page)
        first = run_suite(tmp_path, root, "model=noop", "evaluator.max_retries=0")
        assert killer.killed  # the browser really died, during the probe's click
        trial = first["tasks"].row(0, named=True)
        assert trial["status"] == "grading_error" and trial["strict"] is None, trial["message"]
        verdict = first["verdicts"].filter(pl.col("criterion_id") == "button-works").row(0, named=True)
        assert verdict["verdict"] == "UNGRADED" and verdict["ungraded"] == "infra", verdict["reason"]
        assert "browser" in verdict["reason"]
        assert first["denominators"]["grading_error_infra"][0] == 1 and first["summary"]["scored"][0] == 0
        assert not list((tmp_path / "store").glob("trials/*/evals/*/evaluation.json"))  # not stored as finished

        second = run_suite(tmp_path, root, "model=noop", "evaluator.max_retries=0")  # the browser lives now
        trial = second["tasks"].row(0, named=True)
        assert trial["status"] == "ok" and not trial["n_grading_failed"]  # graded again, not reused
        verdicts = {r["criterion_id"]: r["verdict"] for r in second["verdicts"].iter_rows(named=True)}
        assert verdicts == {"heading": "FAIL", "button-works": "PASS"}  # the noop's own verdicts
        assert len(list((tmp_path / "store").glob("trials/*/evals/*/evaluation.json"))) == 1
    finally:
        killer.close()


def test_an_evaluation_out_of_time_with_no_sign_of_the_app_is_undecided_not_a_fail(tmp_path):
    page = '<h1>page</h1><button id="go" onclick="document.getElementById(\'note\').hidden=false">go</button>\n'
    root = tmp_path / "suite"
    make_task(root, "slow", page)
    # A deadline no evaluation meets (the bundled default is 30 min); the app answers throughout.
    tables = run_suite(tmp_path, root, "model=oracle", "evaluator.timeout_s=0.2", "evaluator.max_retries=0")
    trial = tables["tasks"].row(0, named=True)
    assert trial["status"] == "grading_error" and trial["bucket"] == "grading_error:undecided_timeout"
    assert set(tables["verdicts"]["ungraded"]) == {"undecided_timeout"}
    assert set(tables["verdicts"]["verdict"]) == {"UNGRADED"} and tables["verdicts"]["score"].null_count() == 2
