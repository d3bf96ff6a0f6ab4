"""Shared, real test infrastructure: one headless Chromium and one local Ray instance per session."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.pop("WANDB_API_KEY", None)  # tests never reach a W&B server

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "codesign" / "suite"
T = TypeVar("T")


def unavailable(reason: str) -> NoReturn:
    """Skip a test whose machinery cannot exist on this machine — except where everything is required
    (``CI=true`` or ``CODESIGN_REQUIRE=all``): there a skip would hide a broken set-up, so it fails."""
    if os.environ.get("CI", "").lower() == "true" or os.environ.get("CODESIGN_REQUIRE") == "all":
        pytest.fail(f"required here (CI=true / CODESIGN_REQUIRE=all) but unavailable: {reason}", pytrace=False)
    pytest.skip(reason)


class LoopThread:
    """An event loop on a background thread, so a session-wide browser outlives single tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 180) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under ``make test``'s workers, every test that uses the Docker Engine runs on one of them: the
    session fixture starts the engine once and stops it at the end (two would race for its socket). So does
    every test on the session's Ray instance (started once, not per worker). The tests
    of a module that share a module-scoped fixture run on one worker too, so the fixture is built once (split
    over two workers, the report's three runs were built twice: 70 s). Marked as each test is collected, so the
    marks are there before any ``pytest_collection_modifyitems`` (xdist reads them in its own)."""
    fixtures = set(getattr(item, "fixturenames", ()))
    if item.get_closest_marker("xdist_group"):  # the test says (one asking for a fixture only in some cases)
        return
    if {"docker_engine", "busybox_image", "node_image"} & fixtures:
        item.add_marker(pytest.mark.xdist_group("docker"))
    elif "ray_instance" in fixtures:  # one session Ray, not one per worker (an idle one costs ~3 % of a core)
        item.add_marker(pytest.mark.xdist_group("ray"))
    elif _uses_module_fixture(item):
        item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first (``duration`` marks), the rest in their order. pytest-xdist hands out work in
    this order (groups of several tests first): collected in file order, the 230-s whole-suite gate and the
    155-s Web-Bench import started last, 13 and 14 min into a run, and ended it with the other workers idle
    for up to 3 min (a timeline of every test's start and end per worker)."""

    def seconds(item: pytest.Item) -> float:
        mark = item.get_closest_marker("duration")
        return float(mark.args[0]) if mark else 0.0

    items.sort(key=seconds, reverse=True)  # stable: unmarked tests keep their order


def pytest_collection_finish(session: pytest.Session) -> None:
    """A worker whose groups did not apply (xdist marks a grouped test by renaming it ``id@group``; with pytest
    9.2 the rename is lost) would start the Docker Engine twice and build module fixtures once per worker."""
    if not getattr(session.config.option, "loadgroup", False):  # set on the workers of `--dist loadgroup`
        return
    lost = [i.nodeid for i in session.items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(
            f"pytest-xdist did not apply the xdist_group of {len(lost)} test(s), e.g. {lost[0]}: "
            "install the pytest and pytest-xdist that pyproject.toml pins (`make setup-test`)"
        )


def _uses_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d[-1].scope == "module" for d in defs if d)


@pytest.fixture(scope="session")
def loop() -> Iterator[LoopThread]:
    lt = LoopThread()
    yield lt
    lt.stop()


@pytest.fixture(scope="session")
def browser(loop: LoopThread):
    from codesign.runtime.browser import Browser

    b = Browser()
    loop.run(b.get())
    yield b
    loop.run(b.close())


@pytest.fixture(scope="session")
def ray_instance() -> Iterator[None]:
    """One local Ray for the whole session; the executor's ensure_ray() reuses it."""
    import ray

    # Ray's workers inherit the environment as it is now: the key variable the scripted servers' configs name.
    os.environ.setdefault("CODESIGN_JUDGE_KEY", "sk-judge")
    ray.init(address="local", include_dashboard=False, num_cpus=2, resources={"browser": 8}, logging_level="WARNING")
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """One moto S3 server on loopback for the session (its URL): the object store of every store test."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


S3_BUCKET = "codesign-test"


@pytest.fixture
def s3(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The session's S3 server emptied, with one bucket (``S3_BUCKET``); its settings in this process's
    environment (and returned, for subprocesses and Ray workers)."""
    import boto3
    import requests
    import s3fs

    env = {"AWS_ENDPOINT_URL": s3_server, "AWS_ACCESS_KEY_ID": "codesign-test",
           "AWS_SECRET_ACCESS_KEY": "codesign-test-secret", "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    requests.post(s3_server + "/moto-api/reset", timeout=30)  # one test's buckets never leak into the next
    s3fs.S3FileSystem.clear_instance_cache()  # fsspec caches filesystems by arguments, not by endpoint
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=S3_BUCKET)
    yield env
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def node_cache() -> Path:
    """Installed node_modules are shared across tests and runs, like in real use."""
    return Path(os.environ.get("CODESIGN_CACHE", "~/.cache/codesign")).expanduser() / "node_modules"


@pytest.fixture
def suite_copy(tmp_path: Path):
    """Copy bundled tasks into a temporary root, to break them on purpose."""

    def make(*task_ids: str) -> Path:
        root = tmp_path / "suite"
        for t in task_ids:
            shutil.copytree(SUITE / t, root / t, ignore=shutil.ignore_patterns("node_modules", "dist"))
        return root

    return make


@pytest.fixture
def outside_service() -> Iterator[tuple[str, list[str]]]:
    """An HTTP service on this machine's own non-loopback address, recording the path of every request: what a
    network "cut" check tries to reach (and a control outside the sandbox reaches). Never a foreign address."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tests.helpers import host_address

    address = host_address()
    if address is None:
        unavailable("this machine has no network address besides loopback")
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b"outside service answered"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((address, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="outside-service").start()
    yield f"http://{address}:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[None]:
    """A real Docker Engine, started by the project's own set-up. Skipped only where no engine can be
    started here (``EngineUnavailable``); any other set-up failure is a test error."""
    from codesign.sandbox import engine

    # Whether an engine answers, not whether a pidfile exists: a killed run leaves its pidfile, and the engine
    # started over it here was then never stopped (found running after the suite).
    started_here = not engine.answers()
    try:
        engine.docker()
    except engine.EngineUnavailable as e:
        unavailable(f"no Docker Engine can be started here: {e}")
    yield
    if started_here:
        engine.stop_docker()


@pytest.fixture(scope="session")
def busybox_image(docker_engine) -> str:
    from codesign.sandbox import engine

    return engine.busybox_image()


@pytest.fixture(scope="session")
def node_image(docker_engine) -> str:
    """The default image of ``sandbox=docker`` (debootstrap + Node.js), built once per machine."""
    from codesign.sandbox import engine

    return engine.node_image()


def gate_in(folder: Path, *overrides: str) -> tuple[int, str, Path]:
    """``python -m codesign.validate`` run in ``folder``: exit code, printed report, the report's folder."""
    import contextlib
    import io

    from codesign import validate

    cwd = Path.cwd()
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)  # the report lands under ./outputs/validate/
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = validate.main(["tasks=all", *overrides])
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), next(folder.glob("outputs/validate/*"))
