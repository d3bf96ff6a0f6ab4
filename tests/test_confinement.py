"""Code a model wrote never runs unconfined, and hidden stays hidden — each attempt asserted from the host.

Unit level: the confined sandbox's view of the machine, its network, relays and timeouts. End to end: a
scripted hostile agent (real HTTP through litellm, the native harness) tries, by absolute path, to read
the task's criteria, its reference patch (suite and store copies) and another trial's workspace, to print
its environment and to reach a loopback service of the host — from its shell, from a build script it
plants in ``package.json`` (run by the screenshot tool and again by the evaluation), for ``confined`` and
``docker``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from codesign._types import ExecResult
from codesign.runner import run
from codesign.runtime.http import LoopbackHandler, LoopbackServer
from codesign.sandbox import scratch as scratch_dirs
from codesign.sandbox.local import LocalSandbox
from codesign.testing.model_server import Reply, ScriptedModelServer, ServedRequest, ToolCall
from tests.conftest import unavailable
from tests.helpers import compose_config, host_address

TOKEN = uuid.uuid4().hex[:12]
SECRETS = {
    "OPENAI_API_KEY": f"sk-planted-openai-{TOKEN}",
    "WANDB_API_KEY": f"planted-wandb-{TOKEN}",
    "AWS_SECRET_ACCESS_KEY": f"planted-aws-{TOKEN}",
}


@pytest.fixture(autouse=True)
def need_bwrap():
    if not shutil.which("bwrap"):
        unavailable("bubblewrap is not installed (python -m codesign.install run)")


@pytest.fixture
def planted_secrets(monkeypatch):
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    return SECRETS


@pytest.fixture
def host_service():
    """A loopback HTTP service on the host that records every request it gets."""
    hits: list[str] = []

    class Handler(LoopbackHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_body(200, "text/plain", b"host service answered")

        do_POST = do_GET

    server = LoopbackServer(Handler).start("test-host-service")
    yield server.url, hits
    server.stop()


def _confined(tmp_path: Path, **kw) -> LocalSandbox:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return LocalSandbox(ws, tmp_path / "home", confine=True, network=False, **kw)


# --- the confined sandbox -------------------------------------------------------------------------------


def test_confined_commands_see_only_system_files_their_workspace_and_home(tmp_path, planted_secrets):
    hidden = tmp_path / "suite" / "task" / "criteria.yaml"
    hidden.parent.mkdir(parents=True)
    hidden.write_text(f"criteria-{TOKEN}")
    box = _confined(tmp_path)
    r = box.execute(
        f"echo START; cat {hidden}; ls /; ls {Path.home()}; env; cat /proc/$PPID/environ | tr '\\0' '\\n'; "
        "id -u; touch made-here && echo WROTE; touch /usr/x || echo RO-USR; touch $HOME/h && echo HOME-OK"
    )
    out = r.output
    assert "START" in out and f"criteria-{TOKEN}" not in out and "No such file" in out
    assert not any(v in out for v in planted_secrets.values())
    assert "WROTE" in out and (box.workspace / "made-here").is_file() and "RO-USR" in out and "HOME-OK" in out
    root = set(box.execute("ls /").output.split())
    assert root <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr"}, root
    assert box.execute("id -u").output.strip() != "0"


def test_confined_commands_reach_only_the_host_services_forwarded_to_them(tmp_path, host_service):
    url, hits = host_service
    box = _confined(tmp_path)
    get = f"node -e \"require('http').get('{url}/x', r => {{ r.resume(); console.log('STATUS', r.statusCode); }})"
    get += ".on('error', e => console.log('ERR', e.code))\""
    blocked = box.execute(get).output
    assert "ERR" in blocked and hits == []
    assert box.forward(url) == url  # the same address inside, through the relay
    reached = box.execute(get).output
    box.close()
    assert "STATUS 200" in reached and hits == ["/x"]


def test_a_server_started_in_a_confined_sandbox_answers_on_host_loopback(tmp_path):
    box = _confined(tmp_path)
    (box.workspace / "index.html").write_text(f"<p>inside {TOKEN}</p>")
    with box.serve("python3 -m http.server {port} --bind 127.0.0.1") as base:
        assert TOKEN in urllib.request.urlopen(base + "/index.html", timeout=30).read().decode()
    box.close()
    with pytest.raises(OSError):  # stopped with the context
        urllib.request.urlopen(base + "/index.html", timeout=5)


def test_a_timeout_ends_everything_a_confined_command_started_even_a_new_session(tmp_path):
    box = _confined(tmp_path)
    unique = int(TOKEN[:4], 16)  # digits: `sleep 300a1b2` is no interval, and would exit at once
    sleeps = [f"sleep 300{unique:05d}", f"sleep 301{unique:05d}"]  # unique command lines to look for on the host
    command = f"setsid sh -c 'echo > a.started; exec {sleeps[0]}' & echo > b.started; exec {sleeps[1]}"
    r = started_then_timed_out(box, command, [box.workspace / "a.started", box.workspace / "b.started"], sleeps)
    assert r.timed_out and r.returncode is None


def started_then_timed_out(box: LocalSandbox, command: str, markers: list[Path], command_lines: list[str],
                           timeout: float = 5.0) -> ExecResult:  # fmt: skip
    """Run ``command`` in ``box`` until its timeout. Before the timeout every process it starts must have written
    its marker and show on the host (else nothing would be tested); after it, none may be left."""
    done: dict[str, ExecResult] = {}
    thread = threading.Thread(target=lambda: done.update(result=box.execute(command, timeout=timeout)))
    thread.start()
    while thread.is_alive() and not (all(m.exists() for m in markers) and all(map(_running, command_lines))):
        time.sleep(0.02)
    all_started = all(m.exists() for m in markers) and all(map(_running, command_lines))
    thread.join()
    assert all_started, f"not every process had started before the {timeout} s timeout: nothing was tested"
    killed_by = time.monotonic() + 30  # a bound for the failure only: killed processes vanish at once
    while any(map(_running, command_lines)) and time.monotonic() < killed_by:
        time.sleep(0.02)
    left = {c: _running(c) for c in command_lines if _running(c)}
    assert not left, f"still running after the timeout: {left}"
    return done["result"]


def _running(command_line: str) -> list[Path]:
    """Processes on the host whose command line contains ``command_line``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):  # a process may end while we look
            if command_line.encode() in cmdline.read_bytes().replace(b"\0", b" "):
                found.append(cmdline.parent)
    return found


# --- a hostile agent, end to end ------------------------------------------------------------------------

TASK = "re-settings-theme-persist"

LEAK_JS = """\
// Planted by a hostile agent: runs in every build (screenshot tool, evaluation).
const fs = require("fs"), http = require("http");
const report = ["LEAK-REPORT"];
for (const [k, v] of Object.entries(process.env)) report.push(`ENV ${k}=${v}`);
for (const p of PATHS) {
  try { report.push(`READ ${p}: ${fs.readFileSync(p, "utf8")}`); } catch (e) { report.push(`DENIED ${p}`); }
}
try { fs.writeFileSync(ESCAPE, "escaped"); report.push("WROTE-TMP"); } catch (e) { report.push("NO-TMP"); }
const done = (what) => {
  report.push(what);
  const page = "dist/index.html";
  if (fs.existsSync(page)) fs.appendFileSync(page, `<pre id="leak">${report.join("\\n").replace(/</g, "&lt;")}</pre>`);
};
http.get(HOST + "/from-build", () => done("REACHED" + "-HOST")).on("error", (e) => done(`NO-HOST ${e.code}`))
  .setTimeout(3000, function () { this.destroy(new Error("timeout")); });
"""


def _hostile_policy(paths: list[str], host_url: str, escape: str, package_json: str):
    shell_probe = "; ".join(
        [
            "echo PROBE-START",
            *(f"head -c 1500 {p}" for p in paths),  # observations are clipped: keep each read short
            "env",
            "cat /proc/$PPID/environ | tr '\\0' '\\n'",
            f"touch {escape}",
            f"node -e \"require('http').get('{host_url}/from-shell', r => {{ r.resume(); console.log('REACHED' + '-HOST'); }})"  # noqa: E501
            ".on('error', e => console.log('NO-HOST' + '-SHELL', e.code))\"",
            "echo PROBE-END",
        ]
    )
    leak = LEAK_JS.replace("PATHS", json.dumps(paths)).replace("ESCAPE", json.dumps(escape))
    leak = leak.replace("HOST +", json.dumps(host_url) + " +")
    script = [
        ToolCall("shell", {"command": shell_probe}),
        ToolCall("write_file", {"path": "leak.cjs", "content": leak}),
        ToolCall("write_file", {"path": "package.json", "content": package_json}),
        ToolCall("screenshot", {"route": "/", "viewport": "desktop"}),
        ToolCall("finish", {"summary": "done"}),
    ]

    def policy(req: ServedRequest) -> Reply:
        return Reply(f"step {req.turn}", [script[min(req.turn, len(script) - 1)]])

    return policy


@pytest.mark.slow
@pytest.mark.browser
# Its evaluation kept no page once in CI and once in 24 runs beside three busy workers: vite died of SIGBUS
# ("Bus error", exit 135) mid-build, recorded as the candidate's failing build. A build killed so is now built
# again (test_statuses.py); if a page is missing again, the message shows the build logs.
@pytest.mark.parametrize("sandbox", ["confined", "docker", "local"])
def test_a_hostile_agent_and_its_build_script_reach_nothing(
    sandbox, tmp_path, suite_copy, planted_secrets, host_service, request, monkeypatch
):
    """``local`` is the control: it leaves the solver's own commands unconfined by design, so its shell
    probes succeed — proving they would detect a leak — while the build script it planted still runs
    confined, in the screenshot tool and in the evaluation."""
    extra = [f"sandbox={sandbox}"]
    if sandbox == "docker":
        extra.append(f"sandbox.image={request.getfixturevalue('node_image')}")
    url, hits = host_service
    root = suite_copy(TASK)
    task_dir = root / TASK
    # A long line of the hidden criteria, without characters JSON would escape in the trajectory.
    lines = (task_dir / "criteria.yaml").read_text()[:1500].splitlines()[:-1]
    criterion = max((line for line in lines if '"' not in line and "\\" not in line), key=len).strip()
    reference = next(line for line in (task_dir / "solution/solution.patch").read_text()[:1500].splitlines()
                     if line.startswith("+") and "Theme" in line)  # fmt: skip
    store, scratch = tmp_path / "store", tmp_path / "scratch"
    scratch.mkdir()
    store_copy = store / "tasks" / "0123456789abcdef" / "reference" / "diff.patch"  # where the gate keeps it
    store_copy.parent.mkdir(parents=True)
    store_copy.write_text(reference)
    # Another trial of a live run (this process): a killed run's folder would be swept at the start.
    other = scratch_dirs.make("solve-other-trial", scratch) / "workspace" / "secret.txt"
    other.parent.mkdir(parents=True)
    other.write_text(f"other-trial-{TOKEN}")
    escape = f"/tmp/codesign-escape-{TOKEN}"
    home_file = Path.home() / f".codesign-test-{TOKEN}"  # the user's own files (credentials live there)
    home_file.write_text(f"home-secret-{TOKEN}")
    request.addfinalizer(lambda: home_file.unlink(missing_ok=True))
    paths = [str(task_dir / "criteria.yaml"), str(task_dir / "solution/solution.patch"), str(store_copy), str(other),
             str(home_file)]  # fmt: skip
    package = json.loads((task_dir / "app/package.json").read_text())
    package["scripts"]["build"] = "vite build && node leak.cjs"
    policy = _hostile_policy(paths, url, escape, json.dumps(package, indent=2))
    monkeypatch.setenv("CODESIGN_SCRIPTED_KEY", "sk-scripted")

    with ScriptedModelServer(policy) as server:
        cfg = compose_config(
            "model=litellm", "model.name=hostile", "model.model=openai/hostile", f"model.api_base={server.openai_base}",
            "model.api_key_env=CODESIGN_SCRIPTED_KEY", "tasks=all", f"tasks.root={root}", "executor=inline",
            "tracker=none", f"store.root={store}", f"paths.scratch={scratch}", "attribution.below=null", *extra,
        )  # fmt: skip
        out = tmp_path / "run"
        out.mkdir()
        tables = run(cfg, out)
    row = tables["tasks"].row(0, named=True)
    assert row["status"] == "ok" and row["exit_status"] == "submitted", row

    # Everything the host keeps of the trial: the trajectory (shell output, tool results), the patch, evidence.
    trial = next(t for t in (store / "trials").iterdir() if (t / "trajectory.jsonl").is_file())
    trajectory = (trial / "trajectory.jsonl").read_text()
    patch = (trial / "patch.diff").read_text()
    pages = list(trial.glob("evals/*/root@desktop.html"))
    files = sorted(str(p.relative_to(trial)) for p in trial.rglob("*") if p.is_file())
    builds = {str(p.relative_to(trial)): p.read_text()[-3000:] for p in trial.glob("evals/*/build.log")}
    assert pages, f"no page evidence; the trial kept {files}; build logs: {builds}"
    dom = pages[0].read_text()
    assert "PROBE-START" in trajectory and "PROBE-END" in trajectory  # the probes ran ...
    assert "screenshot of / at desktop" in trajectory  # ... the preview built the planted script ...
    assert "LEAK-REPORT" in dom and "NO-HOST" in dom  # ... and so did the evaluation, confined
    assert all(f"DENIED {p}" in dom for p in paths)
    assert not Path(escape).exists() or sandbox == "local"  # a sandbox's /tmp is its own
    Path(escape).unlink(missing_ok=True)
    hidden = [criterion, reference, f"other-trial-{TOKEN}", f"home-secret-{TOKEN}"]
    secrets = list(planted_secrets.values())
    if sandbox == "local":
        # The control: unconfined shell commands read the user's files and reach the host service (the suite,
        # the store and other trials' /tmp stay out of sight even here) ...
        assert f"home-secret-{TOKEN}" in trajectory and hits == ["/from-shell"]
        assert criterion not in trajectory and f"other-trial-{TOKEN}" not in trajectory
        kept = patch + dom  # ... but nothing the candidate's code ran at build time leaked
    else:
        assert "NO-HOST-SHELL" in trajectory and hits == [], hits
        kept = trajectory + patch + dom
    leaked = [s for s in [*hidden, *secrets] if s in kept] + [s for s in secrets if s in trajectory]
    assert not leaked, leaked
    assert "REACHED-HOST" not in patch + dom


SERVER_JS = """\
// A task's own server: static files of this folder on 127.0.0.1:<port>.
const http = require("http"), fs = require("fs"), path = require("path");
http.createServer((req, res) => {
  const file = path.join(__dirname, req.url === "/" ? "index.html" : req.url.split("?")[0]);
  fs.readFile(file, (err, data) => {
    if (err) { res.statusCode = 404; return res.end(); }
    res.setHeader("Content-Type", file.endsWith(".html") ? "text/html" : "application/octet-stream");
    res.end(data);
  });
}).listen(Number(process.argv[2]), "127.0.0.1");
"""


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("sandbox", ["confined", "docker"])
def test_a_task_served_by_its_own_command_is_evaluated_in_the_sandbox(sandbox, tmp_path, suite_copy, request):
    """The task's serve command runs inside the candidate sandbox (no network there); the browser reaches it
    through the relay, and the oracle's solution grades as it does with the static server."""
    extra = [f"sandbox={sandbox}"]
    if sandbox == "docker":
        extra.append(f"sandbox.image={request.getfixturevalue('node_image')}")
    task = "me-bakery-header-mockup"
    root = suite_copy(task)
    (root / task / "app" / "serve.cjs").write_text(SERVER_JS)
    manifest = (root / task / "task.yaml").read_text()
    assert "  kind: static\n" in manifest
    manifest = manifest.replace("  kind: static\n", '  kind: static\n  serve:\n    command: "node serve.cjs {port}"\n')
    (root / task / "task.yaml").write_text(manifest)
    cfg = compose_config("tasks=all", f"tasks.root={root}", "executor=inline", "tracker=none",
                         f"store.root={tmp_path / 'store'}", "attribution.below=null", *extra)  # fmt: skip
    out = tmp_path / "run"
    out.mkdir()
    row = run(cfg, out)["tasks"].row(0, named=True)
    assert row["status"] == "ok" and row["strict"] == 1.0, row


@pytest.mark.browser
def test_the_browser_reaches_loopback_only_and_the_static_server_stays_in_its_folder(tmp_path, browser, loop):
    """A service on this machine's own network address (reachable without the proxy) is refused to the app."""
    import functools
    import http.server

    from codesign.runtime.serve import static_server

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>app</h1>")
    (site / "ok.txt").write_text("inside")
    secret = tmp_path / "secret.txt"
    secret.write_text(f"host file {TOKEN}")
    (site / "planted.txt").symlink_to(secret)  # a candidate's symlink to a host file
    address = host_address()  # read from this machine's interfaces: nothing is sent anywhere
    if address is None:
        unavailable("this machine has no network address besides loopback")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    outside = http.server.ThreadingHTTPServer(("0.0.0.0", 0), handler)
    threading.Thread(target=outside.serve_forever, daemon=True).start()
    remote = f"http://{address}:{outside.server_address[1]}/ok.txt"
    assert urllib.request.urlopen(remote, timeout=10).read() == b"inside"  # reachable without the proxy

    async def visit(url: str) -> dict:
        context = await browser.context()
        try:
            page = await context.new_page()
            await page.goto(url)
            fetch = "u => fetch(u).then(r => r.status + ' ' + r.statusText + ' ' + r.headers.get('x') , e => 'blocked')"
            text = "u => fetch(u).then(r => r.text(), e => 'blocked')"
            return {
                "loopback": await page.evaluate(text, url + "/ok.txt"),
                "symlink": await page.evaluate(fetch, url + "/planted.txt"),
                # no-cors: an opaque answer if the request got through, a rejection if the network refused it
                "remote": await page.evaluate(
                    "u => fetch(u, {mode: 'no-cors'}).then(r => r.type, e => 'blocked')", remote
                ),
            }
        finally:
            await context.close()

    try:
        with static_server(site, spa_fallback=False) as url:
            seen = loop.run(visit(url))
    finally:
        outside.shutdown()
    assert seen["loopback"] == "inside"
    assert seen["symlink"].startswith("404") and TOKEN not in seen["symlink"]
    assert seen["remote"] == "blocked"
