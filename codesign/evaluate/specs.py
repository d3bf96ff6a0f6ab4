"""Criteria graded by Playwright test specs (``spec:`` criteria, a task's ``spec_runner`` block).

A benchmark such as Web-Bench checks each task with Playwright test files; codesign runs them as they
are. One ``playwright test`` run per evaluation grades every spec criterion of the task:

- the spec folder (hidden material) is copied to a scratch folder and gets its ``node_modules`` from the
  node cache, installed once per lockfile like an app's (``@playwright/test`` is its dependency);
- a generated config wraps the project's own: ``baseURL`` is codesign's served app, its ``webServer`` is
  dropped, the browser is codesign's Chromium (same flags, loopback only), one Chromium project (with the
  project's own Chromium settings, e.g. a viewport), no retries, one test at a time (``spec_runner.workers``),
  generous timeouts (``spec_runner.timeout_s`` per test), the JSON reporter into a file, traces and
  screenshots kept for failures;
- the report decides: passed → PASS; failed → FAIL with the assertion's message. A test that ran out of
  Playwright's time (it timed out, or a step or an ``expect`` did) may have met a slow machine rather than a
  wrong app: it is run again, alone (a second run with only those tests, one worker; those that waited for an
  element that never appeared up to ``spec_runner.rerun_workers`` at once, in a run of their own), with
  ``RERUN_FACTOR`` times its bounds, and that run decides — passed → PASS; a wait for an element that is
  still not there → FAIL ``element_never_reached``; anything else → FAIL. A plain assertion failure is never
  run again (nor, with ``spec_runner.run_again: false``, anything: bounds that already hold a run again's).
- A test that failed after the machine's network changed under its page (a request failed with
  ``net::ERR_NETWORK_CHANGED``, in its trace's network log) is run again, whatever the bounds; failing so
  in the run that decides, it is no verdict about the app: ungraded (``infra``). A test that did not run, a
  spec folder whose dependencies do not install, a runner that crashed or produced no report is no verdict
  about the app either: the criterion is ungraded (``grader_error``; a runner that had to be stopped at its
  bound is ``undecided_timeout``) and its trial a grading error, graded again.
- A spec file that does not load keeps Playwright from running any test, so the files are then listed one by
  one and the others run without it. Its own tests: FAIL when the error names a file of the candidate's
  workspace (a module the spec imports from the app is missing, does not parse or throws — the gate has shown
  the reference loads it), else ungraded (``grader_error``: the spec folder's own fault, e.g. a package it
  needs).

Each test's steps become an action record (with the first run's outcome when it was run again), and its
failure screenshot and trace and each run's log are evidence.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import time
import zipfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from codesign._types import CriterionVerdict, EvidenceItem, Ungraded, Verdict
from codesign.evaluate.evidence import EvidenceSession
from codesign.runtime.browser import CHROMIUM_ARGS, find_chromium
from codesign.runtime.waiting import NETWORK_CHANGED
from codesign.sandbox import scratch
from codesign.sandbox.dependencies import cached_node_modules, link_node_modules
from codesign.tasks.loader import Task

RUN_BOUND_S = 1800.0  # the whole run; each test has its own timeout, this only stops a runner that hangs
# A test that ran out of time is run again alone with this many times every bound (the test's timeout, each
# expect's, the project's action and navigation timeouts). The first bounds (Web-Bench's: 30 s a test, 10 s
# an assertion) already hold some 10× what an idle machine needs, so a correct app exceeds them only on a
# machine slowed about that much; 4× more holds a ~40× slowdown, with the machine left to one test at a time
# (saturating both cores here slowed Web-Bench-style tests under 2×; heavy shared load, up to ~5×). The price
# is paid by a wait that can never end (a failing candidate's missing element): 4× the bound it ran out of,
# once per such test (40 s for a 10 s expect) — which is why the factor is no larger.
RERUN_FACTOR = 4
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Playwright's words for a wait that ran out: a step's or a poll's ("locator.click: Timeout 30000ms exceeded"),
# the test's ("Test timeout of 30000ms exceeded"), an expect's ("Timeout: 10000ms" in its report since 1.5x,
# "Timed out 10000ms waiting for expect(…)" before).
_TIMED_OUT = re.compile(
    r"Timeout \d+ms exceeded|[Tt]imeout of \d+ms exceeded|Timed out \d+ms waiting for|^Timeout: +\d+ms$", re.MULTILINE
)
_STEP_TIMED_OUT = re.compile(r"\b\w+\.\w+: (?:Test )?[Tt]imeout")  # an API call's own timeout: locator.click: …
_WAITED_FOR_ELEMENT = re.compile(r"waiting for (?:locator|getBy|frameLocator|element|selector)")

CONFIG = """// Generated by codesign: the project's own config, pointed at codesign's app and Chromium.
{import_base}
const base = (typeof imported === 'function' ? imported() : imported) || {{}};
const use = base.use || {{}};
// The project's Chromium project keeps its own settings (a device, a viewport) under codesign's.
const own = (base.projects || []).find((p) => ((p.use || {{}}).browserName || (p.use || {{}}).defaultBrowserType
  || 'chromium') === 'chromium') || {{}};
// A run again after a timeout gives the project's own step bounds the same factor as codesign's.
const scale = {scale};
const scaled = (u) => ({{ ...u,
  ...(u.actionTimeout ? {{ actionTimeout: u.actionTimeout * scale }} : {{}}),
  ...(u.navigationTimeout ? {{ navigationTimeout: u.navigationTimeout * scale }} : {{}}) }});
const ours = {{
  baseURL: {base_url},
  trace: 'retain-on-failure',
  screenshot: 'only-on-failure',
  channel: undefined,
  launchOptions: {{ ...(use.launchOptions || {{}}), executablePath: {chromium}, args: {args} }},
}};
export default {{
  ...base,
  testDir: base.testDir || '.',
  webServer: undefined,
  retries: 0,
  workers: {workers},
  ...({workers} > 1 ? {{ fullyParallel: true }} : {{}}),
  timeout: {timeout_ms},
  ...(base.globalTimeout ? {{ globalTimeout: base.globalTimeout * scale }} : {{}}),
  expect: {{ ...(base.expect || {{}}), timeout: {expect_ms} }},
  reporter: [['json', {{ outputFile: '{report}' }}]],
  outputDir: '{output_dir}',
  use: {{ ...scaled(use), ...ours }},
  projects: [{{ name: 'chromium', use: {{ ...scaled(own.use || {{}}), ...ours, browserName: 'chromium' }} }}],
}};
"""


@dataclass(frozen=True)
class Pass:
    """One ``playwright test`` invocation: its generated config, report, artefacts, log and bounds' factor."""

    config: str
    report: str
    output_dir: str
    log: str
    scale: int = 1


FIRST = Pass("codesign.config.mjs", "codesign-report.json", "codesign-results", "spec-runner.log")
RERUN = Pass(
    "codesign-rerun.config.mjs", "codesign-rerun-report.json", "codesign-rerun-results", "spec-rerun.log", RERUN_FACTOR
)
RERUN_SIDE = Pass(  # the tests that waited for an element, run again side by side (spec_runner.rerun_workers)
    "codesign-rerun-side.config.mjs",
    "codesign-rerun-side-report.json",
    "codesign-rerun-side-results",
    "spec-rerun-side.log",
    RERUN_FACTOR,
)


@dataclass
class SpecResult:
    status: str  # passed | failed | timedOut | skipped | interrupted | missing
    message: str = ""
    steps: list[str] | None = None
    attachments: dict[str, str] | None = None  # name → path (trace, screenshot)
    location: str = ""  # the test's absolute file:line:column, to run it again alone
    title: str = ""  # its whole title path
    # A test of a serial group (``test.describe.configure({mode: 'serial'})``) that Playwright skipped because an
    # earlier test of the group failed: that test's title and message. It did not run, but what kept it from
    # running is the app's failure, not the runner's.
    blocker: SpecResult | None = None

    @property
    def timed_out(self) -> bool:
        """It ran out of Playwright's time (the test's, a step's, an expect's): maybe the machine's doing."""
        return self.status == "timedOut" or (self.status == "failed" and bool(_TIMED_OUT.search(self.message)))

    @cached_property
    def network_changed(self) -> bool:
        """It failed after the machine's network changed under its page: the trace kept for its failure records
        a request that failed with NETWORK_CHANGED (read once: several decisions ask)."""
        trace = (self.attachments or {}).get("trace")
        failed = self.status in ("failed", "timedOut")
        return failed and trace is not None and _request_failed(Path(trace), NETWORK_CHANGED)

    @property
    def element_never_reached(self) -> bool:
        """It timed out waiting for an element: one that never appeared (an expect found none, a wait never
        resolved its locator) or a step's target that never became actionable."""
        if not self.timed_out:
            return False
        if "element(s) not found" in self.message:
            return True
        if not _WAITED_FOR_ELEMENT.search(self.message):
            return False
        return bool(_STEP_TIMED_OUT.search(self.message)) or "resolved to <" not in self.message


def write_config(
    folder: Path, task: Task, base_url: str, chromium: str | None, args: list[str], run: Pass = FIRST, workers: int = 1
) -> Path:
    runner = task.spec_runner
    assert runner is not None
    import_base = f"import imported from './{runner.config}';" if runner.config else "const imported = {};"
    text = CONFIG.format(
        import_base=import_base,
        timeout_ms=int(runner.timeout_s * 1000 * run.scale),
        expect_ms=int(runner.expect_timeout_s * 1000 * run.scale),
        scale=run.scale,
        workers=workers,
        report=run.report,
        output_dir=run.output_dir,
        base_url=json.dumps(base_url),
        chromium=json.dumps(chromium),
        args=json.dumps(args),
    )
    path = folder / run.config
    path.write_text(text)
    return path


def parse_report(report: dict[str, Any]) -> dict[tuple[str, str], SpecResult]:
    """(file, title) → result; each test is also found under its whole title path (``a > b > c``)."""
    found: dict[tuple[str, str], SpecResult] = {}
    root = (report.get("config") or {}).get("rootDir") or ""  # the report names files relative to it
    failed_in_group: dict[str, SpecResult] = {}  # a serial group (where it is configured) → its first failure

    def walk(suite: dict[str, Any], path: list[str]) -> None:
        for spec in suite.get("specs", []):
            for test in spec.get("tests", []):
                results = test.get("results") or []
                last = results[-1] if results else {}
                status = last.get("status") or test.get("status") or "missing"
                errors = [e.get("message", "") for e in last.get("errors", [])] or (
                    [last["error"].get("message", "")] if last.get("error") else []
                )
                file = spec.get("file", "")
                result = SpecResult(
                    status,
                    _ANSI.sub("", "\n".join(errors)).strip(),
                    [s.get("title", "") for s in last.get("steps", [])],
                    {a["name"]: a["path"] for a in last.get("attachments", []) if a.get("path")},
                    f"{Path(root, file)}:{spec.get('line', 0)}:{spec.get('column', 0)}",
                )
                group = next((_place(a) for a in test.get("annotations") or [] if a.get("type") == "serial"), "")
                if group and status in ("failed", "timedOut") and group not in failed_in_group:
                    failed_in_group[group] = result
                elif group in failed_in_group and status == "skipped" and test.get("expectedStatus") == "passed":
                    result.blocker = failed_in_group[group]  # the report lists a group's tests in the order they run
                result.title = " > ".join([*path, spec.get("title", "")])
                found[(file, spec.get("title", ""))] = result
                found[(file, result.title)] = result
        for child in suite.get("suites", []):
            walk(child, [*path, child.get("title", "")] if child.get("title") != child.get("file") else path)

    for top in report.get("suites", []):
        walk(top, [])
    return found


def _runs_again(result: SpecResult) -> bool:
    return result.timed_out or (result.blocker is not None and result.blocker.timed_out)


def _network_changed(result: SpecResult) -> bool:
    """It (or the serial test that kept it from running) failed after the machine's network changed under its
    page (:attr:`SpecResult.network_changed`)."""
    lead = result.blocker if result.status == "skipped" and result.blocker is not None else result
    return lead.network_changed


def _request_failed(trace: Path, failure: str) -> bool:
    """Whether a Playwright trace's network log has a request that failed with ``failure`` — Chromium's own
    record. Never the text anywhere else: the app writes its console, its page and so the assertions' messages,
    and an app that could print its way out of a FAIL would be ungraded, i.e. left out of every score."""
    try:
        with zipfile.ZipFile(trace) as z:
            for name in (n for n in z.namelist() if n.endswith(".network")):
                for line in filter(None, z.read(name).splitlines()):
                    record = json.loads(line)  # {"type": "resource-snapshot", "snapshot": {…, "response": …}}
                    snapshot = record.get("snapshot") if isinstance(record, dict) else None
                    response = snapshot.get("response") if isinstance(snapshot, dict) else None
                    if isinstance(response, dict) and response.get("_failureText") == failure:
                        return True
    except (OSError, ValueError, zipfile.BadZipFile):
        return False
    return False


def _waited_for_element(result: SpecResult) -> bool:
    """It (or the serial test that kept it from running) ran out of time waiting for an element not there."""
    lead = result if result.timed_out else result.blocker
    return lead is not None and lead.element_never_reached


def _place(annotation: dict[str, Any]) -> str:
    where = annotation.get("location") or {}
    return f"{where.get('file', '')}:{where.get('line', 0)}:{where.get('column', 0)}"


def report_errors(report: dict[str, Any]) -> str:
    """What kept tests from running at all (a spec file that does not load), as the report says it."""
    return " ".join(" ".join(_ANSI.sub("", e.get("message", "")).split()[:80]) for e in report.get("errors") or [])


def loading_errors(work: Path, config: str, files: list[str], env: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """The files of ``files`` that do not load, each with the errors Playwright gives when listing it alone.
    One file that does not load keeps Playwright from running any test, and its error need not name the file
    (a syntax error in a module the spec imports names only that module): so each is listed on its own."""
    cli = work / "node_modules" / "@playwright" / "test" / "cli.js"
    out: dict[str, list[dict[str, Any]]] = {}
    for file in files:
        command = ["node", str(cli), "test", "--config", config, "--list", "--reporter=json", file]
        proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=RUN_BOUND_S)
        try:
            errors = json.loads(proc.stdout).get("errors") or []
        except ValueError:
            errors = [{"message": f"playwright --list gave no report: {(proc.stdout + proc.stderr)[-600:]}"}]
        own = [e for e in errors if not e.get("message", "").startswith("Error: No tests found")]
        if errors:  # "No tests found" only follows from the file not loading: the errors that say why
            out[file] = own or errors
    return out


def _said(errors: list[dict[str, Any]], work: Path, workspace: Path) -> str:
    """The errors as a reason: each message and where it was raised, paths relative to the spec folder or the
    workspace."""
    parts = []
    for e in errors:
        where = (e.get("location") or {}).get("file", "")
        text = " ".join(_ANSI.sub("", e.get("message", "")).split())
        parts.append(text + (f" (at {where})" if where and where not in text else ""))
    said = " | ".join(parts).replace(f"{work}/", "")
    return said.replace(f"{workspace}/", "workspace: ")[:600]


def in_workspace(errors: list[dict[str, Any]], workspace: Path) -> bool:
    """Whether the errors name a file of the candidate's workspace (a module the spec imports from the app is
    missing, does not parse or throws): then the app, not the spec folder, keeps the file from loading. A spec's
    own fault (a package it needs, a bug of its own) names only the spec folder; the gate has shown the
    reference loads every spec file."""
    roots = {str(workspace).rstrip("/") + "/", str(workspace.resolve()).rstrip("/") + "/"}
    text = " ".join(
        f"{e.get('message', '')} {e.get('stack', '')} {(e.get('location') or {}).get('file', '')}" for e in errors
    )
    return any(root in text for root in roots)


def _lookup(results: dict[tuple[str, str], SpecResult], file: str, title: str) -> SpecResult:
    """The report names files relative to the config's testDir; criteria name them relative to the spec folder
    (``test/task-1.spec.js``): the report's name is then a suffix of the criterion's."""
    if (file, title) in results:
        return results[(file, title)]
    return next((r for (f, t), r in results.items() if t == title and file.endswith("/" + f)), SpecResult("missing"))


_REGEX_SPECIAL = re.compile(r"[.*+?^${}()|\[\]\\/]")


def alone(location: str) -> str:
    """A command-line filter that selects exactly the test at ``location`` (``/abs/file.spec.js:12:5``):
    Playwright reads the file part as a regular expression over absolute paths."""
    file, line, column = location.rsplit(":", 2)
    return "^" + _REGEX_SPECIAL.sub(lambda m: "\\" + m.group(0), file) + f"$:{line}:{column}"


@dataclass
class RunnerOutput:
    returncode: int | None
    stdout: str
    stopped: bool = False  # killed at its bound
    wall_s: float = 0.0


def _run(
    folder: Path, config: str, filters: list[str], env: dict[str, str], bound_s: float = RUN_BOUND_S
) -> RunnerOutput:
    cli = folder / "node_modules" / "@playwright" / "test" / "cli.js"
    command = ["node", str(cli), "test", "--config", config, *filters]
    start = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=bound_s)
        return RunnerOutput(proc.returncode, out, wall_s=time.monotonic() - start)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and every browser it started
        out, _ = proc.communicate()
        return RunnerOutput(proc.returncode, out, stopped=True, wall_s=time.monotonic() - start)


async def grade_specs(
    task: Task, session: EvidenceSession, scratch_root: str | None = None
) -> dict[str, CriterionVerdict]:
    """Every spec criterion of ``task``, from one ``playwright test`` run (and one more, alone and with
    ``RERUN_FACTOR`` times the bounds, of the tests that ran out of time)."""
    runner = task.spec_runner
    wanted = [c for c in task.criteria if c.spec is not None]
    if runner is None or not wanted:
        return {}
    node_cache = session.node_cache or Path("~/.cache/codesign/node_modules").expanduser()

    def verdict(c: Any, v: Verdict, reason: str, cited: list[str], category: str | None) -> CriterionVerdict:
        return CriterionVerdict(c.id, c.kind, c.preserve, v.value, "spec", reason[:2000], cited, category)

    def ungraded(c: Any, cause: Ungraded, reason: str, cited: list[str]) -> CriterionVerdict:
        return CriterionVerdict.ungraded_by(c, "spec", cause, reason, cited)

    folder = scratch.make(f"specs-{task.id}", scratch_root)
    try:
        source = task.dir / runner.dir
        shutil.copytree(source, folder / "specs", ignore=shutil.ignore_patterns("node_modules", "codesign-*"))
        work = folder / "specs"
        try:
            modules = await asyncio.to_thread(cached_node_modules, source, node_cache)
        except Exception as e:  # the spec folder's dependencies could not be installed: nothing is graded
            reason = f"spec runner not installed: {e}"
            return {c.id: ungraded(c, Ungraded.GRADER_ERROR, reason, []) for c in wanted}
        link_node_modules(work, modules, runner.packages)
        await session.browser.get()  # bound the black-hole proxy port the same way as codesign's own pages
        args = [*CHROMIUM_ARGS, session.browser.proxy_arg()]
        chromium = find_chromium(session.browser.executable)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")} | {"CI": "1"}
        places = {"workspace": str(session.workspace), "specs": str(work), "base_url": session.base_url}
        try:
            env |= {k: v.format(**places) for k, v in runner.env.items()}
        except (KeyError, ValueError) as e:
            reason = f"spec_runner.env: {e!r} is not one of {{workspace}}, {{specs}}, {{base_url}}"
            return {c.id: ungraded(c, Ungraded.GRADER_ERROR, reason, []) for c in wanted}

        async def attempt(
            run: Pass, filters: list[str], criteria: list[Any], bound_s: float, workers: int = 1
        ) -> Attempt:
            write_config(work, task, session.base_url, chromium, args, run, workers)
            proc = await asyncio.to_thread(_run, work, run.config, filters, env, bound_s)
            session.write(run.log, proc.stdout[-20000:])
            log_id = session.add(EvidenceItem(run.log.removesuffix(".log"), "build", None, None, run.log))
            which = "the spec runner" if run is FIRST else "the spec runner's run again of the tests that timed out"
            try:
                report = json.loads((work / run.report).read_text())
            except (OSError, ValueError) as e:
                tail = " ".join(proc.stdout.split()[-60:])
                if proc.stopped:  # the app or the machine: nothing in a killed run says which
                    reason = f"{which} did not finish within {bound_s:.0f} s and was stopped: {tail}"
                    cause = Ungraded.UNDECIDED_TIMEOUT
                else:
                    reason = f"{which} produced no report (exit {proc.returncode}, {type(e).__name__}): {tail}"
                    cause = Ungraded.GRADER_ERROR
                return Attempt(log_id, proc.wall_s, {c.id: ungraded(c, cause, reason, [log_id]) for c in criteria})
            found = parse_report(report)
            results = {c.id: _lookup(found, c.spec.file, c.spec.title) for c in criteria if c.spec}
            return Attempt(log_id, proc.wall_s, {}, results, report_errors(report))

        files = sorted({c.spec.file for c in wanted if c.spec})
        first = await attempt(FIRST, files, wanted, RUN_BOUND_S, runner.workers)
        unloaded: dict[str, CriterionVerdict] = {}  # the tests of spec files that do not load
        if first.load_errors and all(r.status == "missing" for r in first.results.values()):
            broken = await asyncio.to_thread(loading_errors, work, FIRST.config, files, env)
            for c in wanted:
                if c.spec is None or c.spec.file not in broken:
                    continue
                errors = broken[c.spec.file]
                said = _said(errors, work, session.workspace)
                if in_workspace(errors, session.workspace):
                    reason = f"{c.spec.file} does not load with the candidate's app, so {c.spec.title!r} cannot run: "
                    category = "regressed" if c.preserve else "wrong"
                    unloaded[c.id] = verdict(c, Verdict.FAIL, reason + said, [first.log_id], category)
                else:
                    reason = f"{c.spec.file} does not load (the spec folder's own fault): {said}"
                    unloaded[c.id] = ungraded(c, Ungraded.GRADER_ERROR, reason, [first.log_id])
            loading = [f for f in files if f not in broken]
            wanted = [c for c in wanted if c.id not in unloaded]
            if broken and loading:  # the rest run without the files that do not load
                first = await attempt(FIRST, loading, wanted, RUN_BOUND_S, runner.workers)
        if first.failed:
            return unloaded | first.failed
        if not wanted:
            return unloaded
        # Only what ran out of time is run again: a plain assertion's failure does not depend on the machine.
        # A serial group's test that a timed-out one kept from running goes with it: the group runs in order.
        # So is a test the machine's network change failed, whatever its bounds: its page was not the app's.
        again = [c for c in wanted if (runner.run_again and _runs_again(first.results[c.id]))
                 or _network_changed(first.results[c.id])]  # fmt: skip
        # A test that waited for an element that never appeared only waits in its run again: such tests may run
        # side by side (spec_runner.rerun_workers); one that ran out of time otherwise (computing, animating,
        # polling) runs alone, the machine to itself. A serial group's follower goes with the test it followed.
        side = [c for c in again if runner.rerun_workers > 1 and _waited_for_element(first.results[c.id])]
        reruns: dict[str, tuple[Attempt, int]] = {}  # criterion id -> the run again that decided it, its workers
        out: dict[str, CriterionVerdict] = dict(unloaded)
        for run, group, at_once in ((RERUN, [c for c in again if c not in side], 1),
                                    (RERUN_SIDE, side, runner.rerun_workers)):  # fmt: skip
            if not group:
                continue
            locations = sorted({first.results[c.id].location for c in group})
            bound = RUN_BOUND_S + len(locations) * RERUN_FACTOR * runner.timeout_s  # each test's bound, and slack
            workers = min(at_once, len(locations))
            second = await attempt(run, [alone(place) for place in locations], group, bound, workers)
            out |= second.failed
            reruns |= {c.id: (second, workers) for c in group}
        for c in wanted:
            assert c.spec is not None
            if c.id in out:
                continue
            earlier, rerun = first.results[c.id], c.id in reruns
            decided, workers = reruns.get(c.id, (first, 1))  # the run whose result stands
            r = decided.results[c.id]
            record: dict[str, Any] = {
                "step": "spec",
                "args": {"file": c.spec.file, "title": c.spec.title},
                "ok": r.status != "missing",
                "status": r.status,
                "steps": r.steps or [],
                "state_changed": bool(r.steps),
            }
            note = ""
            if rerun:  # what the first run saw, and what the run again cost
                record["rerun"] = {
                    "factor": RERUN_FACTOR,
                    "at_once": workers,
                    "wall_s": round(decided.wall_s, 1),
                    "first": {"status": earlier.status, "message": earlier.message[:1000]},
                }
                seen = " ".join(earlier.message.replace(f"{work}/", "").split())[:300]
                how = "alone" if workers == 1 else f"({workers} at once)"
                why = ("after the machine's network changed under its page" if _network_changed(earlier)
                       else f"with {RERUN_FACTOR}× the bounds after a timeout")  # fmt: skip
                note = f"re-run {how} {why} ({earlier.status}: {seen}): "
            cited = [first.log_id, *([decided.log_id] if rerun else [])]
            cited.append(session.add(EvidenceItem(f"action:{c.id}.1", "action", "/", "desktop", data=record)))
            for name, path in (r.attachments or {}).items():
                if name in ("trace", "screenshot") and Path(path).is_file():
                    kept = f"spec_{c.id}_{name}{Path(path).suffix}"
                    session.write(kept, Path(path).read_bytes())
                    kind = "screenshot" if name == "screenshot" else "trace"
                    cited.append(session.add(EvidenceItem(f"{kind}:spec:{c.id}", kind, "/", "desktop", kept)))
            if r.status == "passed":
                out[c.id] = verdict(c, Verdict.PASS, f"{note}{c.spec.file}: {c.spec.title!r} passed", cited, None)
            elif _network_changed(r):  # in the run that decides: no verdict about the app, graded again
                which = "its run again" if rerun else "the runner"
                reason = (f"{c.spec.title!r} {r.status} in {which} after the machine's network changed under its page "
                          f"({NETWORK_CHANGED}): not the app's doing, graded again")  # fmt: skip
                out[c.id] = ungraded(c, Ungraded.INFRA, reason, cited)
            elif r.status in ("failed", "timedOut"):
                message = (r.message or "no message").replace(f"{work}/", "")  # paths as in the spec folder
                category = (
                    "element_never_reached" if r.element_never_reached else "regressed" if c.preserve else "wrong"
                )
                out[c.id] = verdict(c, Verdict.FAIL, f"{note}{c.spec.title!r} {r.status}: {message}", cited, category)
            elif r.status == "skipped" and r.blocker is not None:  # the app failed the group's earlier test
                message = " ".join((r.blocker.message or "no message").replace(f"{work}/", "").split())[:600]
                reason = (
                    f"{note}{c.spec.title!r} did not run: {r.blocker.title!r}, earlier in its serial group, "
                    f"{r.blocker.status} ({message})"
                )
                out[c.id] = verdict(c, Verdict.FAIL, reason, cited, "regressed" if c.preserve else "wrong")
            else:
                why = f": {decided.load_errors}".replace(f"{work}/", "") if decided.load_errors else ""
                which = "its run again" if rerun else "the runner"
                reason = (
                    f"{c.spec.file}: {c.spec.title!r} did not run in {which} ({r.status}); check the title and file"
                )
                out[c.id] = ungraded(c, Ungraded.GRADER_ERROR, reason + why, cited)
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Attempt:
    """One run's outcome: its log's evidence id and wall time, and either every criterion's ungraded verdict
    (no report) or each criterion's result."""

    log_id: str
    wall_s: float
    failed: dict[str, CriterionVerdict] = field(default_factory=dict)
    results: dict[str, SpecResult] = field(default_factory=dict)
    load_errors: str = ""
