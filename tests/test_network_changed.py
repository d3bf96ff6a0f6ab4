"""A page the machine's network change hit is not the app's: it is loaded again, and a verdict read after a
change the loads could not shake off is ungraded (``infra``), never the app's FAIL or PASS.

Real parts throughout, in a network namespace of the test's own (bubblewrap), so the change reaches no other
test: the app served by codesign, codesign's Chromium, and a veth pair added while an image of the page is
connecting — what creating a container network does to the machine. Chromium fails that request with
``net::ERR_NETWORK_CHANGED``, as it does on a machine where another program changes its network."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codesign.runtime.waiting import NETWORK_CHANGED
from tests.conftest import REPO, unavailable

pytestmark = pytest.mark.browser

# Run inside the namespace: the page fetches /go from a helper, then loads an image from a port whose listener
# never accepts (its backlog full), so the image is connecting when the helper changes the network. Mode
# "never": the image's port serves at once (no change); "once": the first /go changes the network, then the
# port serves; "always": every /go changes it. Prints what the grading saw, as JSON.
CHILD = textwrap.dedent("""
    import asyncio, json, socket, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from pathlib import Path

    from pyroute2 import IPRoute

    from codesign.evaluate import probes
    from codesign.evaluate.evidence import EvidenceSession
    from codesign.evaluate.outcomes import guarded
    from codesign.runtime.browser import Browser
    from codesign.runtime.serve import static_server
    from codesign.tasks.schema import Criterion

    mode, root, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    task_dir = Path(sys.argv[4]) if len(sys.argv) > 4 else None  # a task whose spec grades the page
    hold = socket.socket()
    hold.bind(("127.0.0.1", 0))
    hold.listen(0)
    image_port = hold.getsockname()[1]
    fillers = [socket.socket() for _ in range(4)]
    for f in fillers:
        f.setblocking(False)
        try:
            f.connect(("127.0.0.1", image_port))
        except BlockingIOError:
            pass

    class Image(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "image/svg+xml")
            self.end_headers()
            self.wfile.write(b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')

        def log_message(self, *args):
            pass

    def serve_images():
        hold.close()
        for f in fillers:
            f.close()
        ThreadingHTTPServer.allow_reuse_address = True
        server = ThreadingHTTPServer(("127.0.0.1", image_port), Image)
        threading.Thread(target=server.serve_forever, daemon=True).start()

    changes, hits = [], []

    def change_network():
        time.sleep(0.3)  # the image is connecting by now (its listener never accepts)
        n = len(changes)
        with IPRoute() as ip:
            ip.link("add", ifname=f"cdv{n}a", kind="veth", peer=f"cdv{n}b")
            index = ip.link_lookup(ifname=f"cdv{n}a")[0]
            ip.addr("add", index=index, address=f"10.254.{n}.1", prefixlen=24)
            ip.link("set", index=index, state="up")
        changes.append(n)
        if mode == "once":
            serve_images()

    class Go(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            if mode == "always" or (mode == "once" and len(hits) == 1):
                threading.Thread(target=change_network).start()
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()
            self.wfile.write(b"go")

        def log_message(self, *args):
            pass

    if mode in ("never", "forged"):
        serve_images()
    go = ThreadingHTTPServer(("127.0.0.1", 0), Go)
    threading.Thread(target=go.serve_forever, daemon=True).start()
    # "forged": nothing changes, but the app writes Chromium's words where it can: its console and its page.
    words = "net::ERR_NETWORK_CHANGED"
    shown = "'loaded'" if mode != "forged" else f"'page.goto: {words} at /'; console.error('Failed: {words}')"
    go_url, image_url = f"http://127.0.0.1:{go.server_address[1]}/go", f"http://127.0.0.1:{image_port}/dot.svg"
    (root / "index.html").write_text(
        f"<p id=greeting>hi</p><p id=state>pending</p><script>fetch('{go_url}').then(() => {{"
        f"const i = new Image(); i.onload = () => {{ state.textContent = {shown} }};"
        "i.onerror = () => { state.textContent = 'broken' };"
        f"i.src = '{image_url}'; document.body.append(i) }})</script>")

    async def specs():  # the task's spec run: Playwright's own Chromium session, codesign's flags
        from codesign.evaluate.outcomes import guarded_all
        from codesign.evaluate.specs import grade_specs
        from codesign.tasks.loader import load_task

        browser = Browser()
        await browser.get()
        with static_server(root, spa_fallback=False) as url:
            task = load_task(task_dir)
            session = EvidenceSession(browser, url, out, root, node_cache=Path(sys.argv[5]))
            got = await guarded_all(task.criteria, "spec", grade_specs(task, session), session)
            print(json.dumps({"verdicts": {i: [v.verdict, v.ungraded, v.reason] for i, v in got.items()},
                              "loads": len(hits), "changes": len(changes)}))
        await browser.close()

    async def main():
        browser = Browser()
        await browser.get()
        with static_server(root, spa_fallback=False) as url:
            session = EvidenceSession(browser, url, out, root)
            await session.collect(["/"], ["desktop"], "", "")
            loads = len(hits)
            c = Criterion.model_validate({"id": "greets", "text": "t", "kind": "content", "preserve": False,
                                          "probe": {"expect": [{"text": {"selector": "#greeting", "equals": "hi"}}]}})
            v = await guarded(c, "probe", probes.grade(c, session), session)
            network = session.pages[("/", "desktop")].network
            images = [e.get("status", e.get("failure")) for e in network if e["url"].endswith("/dot.svg")]
            print(json.dumps({"verdict": v.verdict, "ungraded": v.ungraded, "reason": v.reason, "loads": loads,
                              "changes": len(changes), "images": images, "lost": session.network_changed}))
            await session.close()
        await browser.close()

    asyncio.run(specs() if task_dir else main())
""")


def graded(tmp_path: Path, mode: str, *task: str) -> dict:
    """What the grading saw in a namespace of its own (bubblewrap makes it; root inside may change it); with
    ``task`` (its folder and the node cache), what its spec run decided about the app in ``task``'s app folder."""
    app = Path(task[0]) / "app" if task else tmp_path / mode
    app.mkdir(exist_ok=True)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    argv = ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--unshare-user",
            "--uid", "0", "--cap-add", "CAP_NET_ADMIN", "--chdir", str(REPO),
            sys.executable, str(script), mode, str(app), str(tmp_path / f"{mode}-evidence"), *task]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if proc.returncode and "Operation not permitted" in proc.stderr and "bwrap" in proc.stderr:
        unavailable(f"bubblewrap cannot give a network namespace CAP_NET_ADMIN here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.duration(22)
def test_a_load_the_network_change_hit_is_loaded_again_and_one_it_keeps_hitting_is_ungraded(tmp_path):
    # Control: nothing changes the network, the page loads once with its image, the probe passes.
    calm = graded(tmp_path, "never")
    assert (calm["verdict"], calm["loads"], calm["changes"], calm["images"], calm["lost"]) == ("PASS", 1, 0, [200], [])
    # The app writing Chromium's words in its console and page changes nothing: the network log decides.
    forged = graded(tmp_path, "forged")
    assert (forged["verdict"], forged["loads"], forged["lost"]) == ("PASS", 1, []), forged
    # One change while the image connects: that load is not the app's page; the next one is, and decides.
    once = graded(tmp_path, "once")
    assert (once["verdict"], once["loads"], once["changes"], once["images"], once["lost"]) == ("PASS", 2, 1, [200], [])
    # A change at every load: the page kept is the third, still hit; the probe's PASS is not the app's to claim.
    always = graded(tmp_path, "always")
    assert (always["verdict"], always["ungraded"], always["loads"]) == ("UNGRADED", "infra", 3), always
    assert always["images"] == [NETWORK_CHANGED] and len(always["lost"]) == 1, always
    assert always["lost"][0].startswith("GET http://127.0.0.1:") and always["lost"][0].endswith(
        f"/dot.svg: {NETWORK_CHANGED}"
    )
    assert "the machine's network changed under the browser" in always["reason"]
    assert NETWORK_CHANGED in always["reason"] and "/dot.svg" in always["reason"]


SPEC = """const { test, expect } = require('@playwright/test');
test('the dot shows', async ({ page }) => {
  await page.goto('/');
  await page.waitForFunction(() => document.querySelector('#state').textContent !== 'pending');
  expect(await page.locator('#state').textContent()).toBe('loaded');  // a plain assertion: never run again for time
});
"""


@pytest.mark.slow
@pytest.mark.duration(75)
def test_a_spec_test_the_network_change_failed_is_run_again_and_if_it_fails_so_again_ungraded(tmp_path, node_cache):
    from codesign.sandbox.dependencies import cached_node_modules

    def task(mode: str) -> Path:
        folder = tmp_path / f"dot-{mode}"
        shutil.copytree(REPO / "tests" / "fixtures" / "spec_runner", folder / "specs")
        (folder / "specs" / "dot.spec.js").write_text(SPEC)
        (folder / "app").mkdir()
        (folder / "solution").mkdir()
        (folder / "solution" / "solution.patch").write_text("")
        manifest = f"id: dot-{mode}\ntrack: ME\ntitle: Dot\nrequest: Show the dot.\n"
        (folder / "task.yaml").write_text(manifest + "labels: {capability: [ui_transformation]}\n")
        (folder / "criteria.yaml").write_text(
            "spec_runner: {dir: specs, expect_timeout_s: 5}\ncriteria:\n"
            "  - {id: dot, text: The dot shows., kind: content, spec: {file: dot.spec.js, title: the dot shows}}\n"
        )
        cached_node_modules(folder / "specs", node_cache)  # installed here: the namespace has no other network
        return folder

    calm = graded(tmp_path, "never", str(task("never")), str(node_cache))
    assert calm["verdicts"]["dot"][0] == "PASS" and calm["loads"] == 1, calm
    forged = graded(tmp_path, "forged", str(task("forged")), str(node_cache))  # the app's words: its own FAIL
    verdict, ungraded, reason = forged["verdicts"]["dot"]
    assert (verdict, ungraded, forged["loads"]) == ("FAIL", None, 1), forged
    assert 'Received: "page.goto: net::ERR_NETWORK_CHANGED at /"' in reason and "re-run" not in reason, reason
    once = graded(tmp_path, "once", str(task("once")), str(node_cache))  # its run again decides
    verdict, _, reason = once["verdicts"]["dot"]
    assert (verdict, once["loads"], once["changes"]) == ("PASS", 2, 1), once
    assert reason.startswith("re-run alone after the machine's network changed under its page (failed:"), reason
    always = graded(tmp_path, "always", str(task("always")), str(node_cache))
    verdict, ungraded, reason = always["verdicts"]["dot"]
    assert (verdict, ungraded, always["loads"]) == ("UNGRADED", "infra", 2), always
    assert "in its run again after the machine's network changed under its page" in reason
    assert NETWORK_CHANGED in reason
