"""Harbor's own code on this machine, to check exported tasks with it: an image with harbor pinned.

Harbor needs Python 3.12+ (it imports ``typing.override``) and codesign runs on 3.11 (Debian bookworm's
Python), so harbor lives in an image of its own, built locally the way codesign builds its node image
(``codesign.sandbox.engine``: no registry is needed): Debian trixie (python3.13) by debootstrap, imported, then
harbor installed from PyPI by a build on the host's network. Docker's CLI with a recent compose plugin is in it
too: ``harbor lint`` reads a task's docker-compose.yaml through ``docker compose config`` (with flags trixie's
compose 2.26 lacks, so the plugin comes from Debian sid), and a Harbor run starts its containers with it.

It also runs Harbor itself on an exported task (``harbor run`` in that image, driving this machine's engine
through its socket), on codesign's worker image built from a checkout (launchers/Dockerfile):

    python -m codesign.export.harbor_image build            # the image (once per Docker Engine)
    python -m codesign.export.harbor_image check OUT/*      # Harbor's loader and lint on exported tasks
    python -m codesign.export.harbor_image worker           # codesign/worker:latest from this checkout
    python -m codesign.export.harbor_image run OUT/TASK AGENT [JOBS]   # a Harbor trial: oracle, nop, …
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from codesign.errors import EnvironmentSetupError
from codesign.export.harbor_tasks import DEFAULT_IMAGE
from codesign.programs import apt_install, run_command
from codesign.sandbox import engine

HARBOR_VERSION = "0.26.0"
TRIXIE_IMAGE = "codesign/debian:trixie"
HARBOR_IMAGE = f"codesign/harbor:{HARBOR_VERSION}"
CHECK_SCRIPT = Path(__file__).with_name("harbor_check.py")
# launchers/Dockerfile's base for a worker image built here: trixie trusting what this machine's pip trusts, for
# Node.js too (a proxy's CA: PyPI, the npm registry), else its pip and npm steps cannot reach their registries.
WORKER_BASE = "codesign/debian:trixie-host-ca"
PACKAGE_FILES = ("pyproject.toml", "README.md", "Makefile", "hydra_plugins", "codesign")  # what the image installs

# Installed on the trixie image: harbor in a venv; the compose plugin from sid (2.26 in trixie lacks
# `config --no-env-resolution`, which harbor lint runs), from the mirror debootstrap used (the image's own
# sources.list). The mirror may serve a dated snapshot of sid, whose Release file has expired: its date is not
# checked (as this machine's own apt does not).
_DOCKERFILE = f"""\
FROM {TRIXIE_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
RUN sed -n 's/^deb \\(\\S*\\) trixie .*/deb \\1 sid main/p' /etc/apt/sources.list > /etc/apt/sources.list.d/sid.list \\
 && test -s /etc/apt/sources.list.d/sid.list \\
 && apt-get -o Acquire::Check-Valid-Until=false update -qq \\
 && apt-get install -y -qq --no-install-recommends docker-compose/sid \\
 && rm /etc/apt/sources.list.d/sid.list && rm -rf /var/lib/apt/lists/*
COPY ca-bundle.crt /etc/ssl/codesign-host-ca.crt
RUN python3 -m venv /opt/harbor \\
 && /opt/harbor/bin/pip install --no-cache-dir --cert /etc/ssl/codesign-host-ca.crt harbor=={HARBOR_VERSION} \\
 && docker compose version && /opt/harbor/bin/harbor --version
ENV PATH=/opt/harbor/bin:$PATH
"""


def _client(timeout: int = 600) -> Any:
    import docker as docker_sdk

    engine.docker()  # started if none answers
    return docker_sdk.DockerClient(base_url=engine.docker_host(), timeout=timeout)


def _ca_bundle() -> Path | None:
    """The CA bundle this machine's pip trusts (a proxy's CA may be in it): the image's pip trusts the same."""
    for candidate in (
        os.environ.get("PIP_CERT"),
        os.environ.get("SSL_CERT_FILE"),
        ssl.get_default_verify_paths().cafile,
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def trixie_image() -> str:
    """Debian trixie minbase with python3 (3.13), venv and Docker's CLI, built once per engine."""
    client = _client()
    if client.images.list(name=TRIXIE_IMAGE):
        return TRIXIE_IMAGE
    if not shutil.which("debootstrap"):
        apt_install(["debootstrap"])
    mirror = engine.debian_mirror()
    with tempfile.TemporaryDirectory(prefix="codesign-trixie-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        run_command(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=python3,python3-venv,ca-certificates,docker-cli",
                "trixie",
                str(rootfs),
                *([mirror] if mirror else []),
            ]
        )
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        repository, tag = TRIXIE_IMAGE.split(":")
        client.api.import_image_from_stream(tar.stdout, repository=repository, tag=tag)
        if tar.wait() != 0:
            raise EnvironmentSetupError(f"tar of {rootfs} failed", "see the output above")
    return TRIXIE_IMAGE


def harbor_image() -> str:
    """The image with harbor==HARBOR_VERSION (Python 3.13) and ``docker compose``, built once per engine."""
    client = _client()
    if client.images.list(name=HARBOR_IMAGE):
        return HARBOR_IMAGE
    trixie_image()
    with tempfile.TemporaryDirectory(prefix="codesign-harbor-image-") as ctx:
        (Path(ctx) / "Dockerfile").write_text(_DOCKERFILE)
        bundle = _ca_bundle()
        (Path(ctx) / "ca-bundle.crt").write_bytes(bundle.read_bytes() if bundle else b"")
        _build(client, Path(ctx), HARBOR_IMAGE)
    return HARBOR_IMAGE


def _build(client: Any, ctx: Path, tag: str, **options: Any) -> None:
    """A legacy-builder build on the host's network (the engine runs without a bridge: a build's RUN steps reach
    registries only so), its log in the error when it fails."""
    import docker as docker_sdk

    try:
        client.images.build(path=str(ctx), tag=tag, network_mode="host", rm=True, forcerm=True, **options)
    except docker_sdk.errors.BuildError as e:
        log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in e.build_log)
        raise EnvironmentSetupError(
            f"building {tag} from {ctx} failed: {e}\n{log[-3000:]}",
            "check that PyPI, the npm registry and the Debian mirror are reachable from this machine",
        ) from None


def source_hash(checkout: Path) -> str:
    """The package files a worker image installs, hashed: the image's tag, so an edit means a new image."""
    h = hashlib.sha256()
    for name in PACKAGE_FILES:
        root = checkout / name
        for p in sorted([root] if root.is_file() else root.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                h.update(str(p.relative_to(checkout)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def worker_image(checkout: Path, tag: str | None = None, again: bool = False) -> str:
    """codesign's worker image (launchers/Dockerfile) with the package files of ``checkout``, built once per
    engine under ``tag`` (default ``codesign/worker:<source hash>``; ``again``: built even if the tag exists), on
    trixie trusting this machine's CAs."""
    import docker as docker_sdk

    if not (checkout / "launchers" / "Dockerfile").is_file():
        raise EnvironmentSetupError(
            f"{checkout} is not a codesign checkout (no launchers/Dockerfile)", "build the worker image in a checkout"
        )
    client = _client(timeout=3600)
    tag = tag or f"codesign/worker:{source_hash(checkout)}"
    if client.images.list(name=tag) and not again:
        return tag
    trixie_image()
    with tempfile.TemporaryDirectory(prefix="codesign-worker-") as tmp:
        if not client.images.list(name=WORKER_BASE):
            base = Path(tmp) / "base"
            base.mkdir()
            bundle = _ca_bundle()
            (base / "host-ca.crt").write_bytes(bundle.read_bytes() if bundle else b"")
            (base / "Dockerfile").write_text(
                f"FROM {TRIXIE_IMAGE}\nCOPY host-ca.crt /usr/local/share/ca-certificates/codesign-host-ca.crt\n"
                "RUN update-ca-certificates\nENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt\n"
            )
            _build(client, base, WORKER_BASE)
        ctx = Path(tmp) / "worker"
        ctx.mkdir()
        for name in PACKAGE_FILES:  # what launchers/Dockerfile copies: never .venv/, outputs/ or a key file
            source = checkout / name
            if source.is_dir():
                shutil.copytree(source, ctx / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, ctx / name)
        shutil.copy2(checkout / "launchers" / "Dockerfile", ctx / "Dockerfile")
        _build(client, ctx, tag, buildargs={"BASE": WORKER_BASE, "EXTRAS": "s3"}, timeout=3600)
    # Images of earlier sources are never used again (~1 GB of packages each): an edited checkout replaces them.
    repository = tag.rsplit(":", 1)[0]
    for image in client.images.list(name=repository):
        for old in image.tags:
            if old != tag and old.startswith(f"{repository}:") and len(old.rsplit(":", 1)[1]) == 12:
                with contextlib.suppress(docker_sdk.errors.APIError):  # in use by a container: kept
                    client.images.remove(old)
    return tag


def harbor_run(task_dir: Path, agent: str, jobs_dir: Path) -> dict[str, Any]:
    """``harbor run -p TASK -a AGENT -e docker`` in the harbor image on this machine's engine; the trial's
    ``result.json`` (``verifier_result.rewards.reward``, ``exception_info``) and where the trial is (``trial_dir``).

    The task's environment is built first on the host's network: Harbor's own build (compose, the legacy
    builder, as this engine has no BuildKit network either) then finds its steps cached, RUN npm ci included.
    Harbor's containers mount host paths, so the task and the jobs folder are mounted at the same paths."""
    import docker as docker_sdk

    client = _client(timeout=3600)
    image = harbor_image()
    task_dir, jobs_dir = Path(task_dir).resolve(), Path(jobs_dir).resolve()
    jobs_dir.mkdir(parents=True, exist_ok=True)
    env_tag = f"codesign/harbor-env:{task_dir.name}"
    earlier = [i.id for i in client.images.list(name=env_tag)]
    _build(client, task_dir / "environment", env_tag)
    for image_id in earlier:  # an earlier build of this task's environment, now untagged: removed
        if image_id not in {i.id for i in client.images.list(name=env_tag)}:
            with contextlib.suppress(docker_sdk.errors.APIError):  # still in use, by a container or a child
                client.images.remove(image_id)
    before = set(jobs_dir.iterdir())
    socket = engine.docker_host().removeprefix("unix://")
    try:
        output = client.containers.run(
            image,
            ["harbor", "run", "-p", str(task_dir), "-a", agent, "-e", "docker", "-o", str(jobs_dir)],
            volumes={
                socket: {"bind": "/var/run/docker.sock", "mode": "rw"},
                str(task_dir): {"bind": str(task_dir), "mode": "ro"},
                str(jobs_dir): {"bind": str(jobs_dir), "mode": "rw"},
            },
            network_mode="host",
            environment={"DOCKER_BUILDKIT": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            remove=True,
            stderr=True,
        )
    except docker_sdk.errors.ContainerError as e:  # the trial's own result still says what happened
        output = e.stderr or b""
    jobs = sorted(set(jobs_dir.iterdir()) - before)
    trials = [p for job in jobs for p in job.iterdir() if (p / "result.json").is_file() and p.name != "result.json"]
    if len(trials) != 1:
        raise EnvironmentSetupError(f"harbor run wrote {len(trials)} trials in {jobs_dir}:\n{output.decode()[-3000:]}")
    result: dict[str, Any] = json.loads((trials[0] / "result.json").read_text())
    return {**result, "trial_dir": str(trials[0])}


def check_tasks(task_dirs: list[Path]) -> list[dict[str, Any]]:
    """Harbor's loader and lint on each task folder (codesign.export.harbor_check), in the harbor image, each
    folder mounted read-only, offline: one report per folder, in order."""
    client = _client()
    image = harbor_image()
    volumes = {str(CHECK_SCRIPT.parent.resolve()): {"bind": "/check", "mode": "ro"}}
    inside = []
    for i, task_dir in enumerate(task_dirs):
        # Mounted under its own name: Harbor names a task without [task] after its folder.
        target = f"/tasks/{i}/{Path(task_dir).resolve().name}"
        volumes[str(Path(task_dir).resolve())] = {"bind": target, "mode": "ro"}
        inside.append(target)
    output = client.containers.run(
        image,
        ["python", f"/check/{CHECK_SCRIPT.name}", *inside],
        volumes=volumes,
        network_mode="none",
        remove=True,
        stderr=True,
    )
    reports = [json.loads(line) for line in output.decode().splitlines() if line.startswith("{")]
    for report, task_dir in zip(reports, task_dirs, strict=True):
        report["dir"] = str(task_dir)
    return reports


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    needs = {"build": 1, "worker": 1, "check": 2, "run": 3}
    if not args or args[0] not in needs or len(args) < needs[args[0]]:
        print(__doc__, file=sys.stderr)
        return 2
    if args[0] == "build":
        print(harbor_image())
        return 0
    if args[0] == "worker":  # under the name exported tasks build on
        print(worker_image(Path(__file__).resolve().parents[2], DEFAULT_IMAGE, again=True))
        return 0
    if args[0] == "run":
        result = harbor_run(Path(args[1]), args[2], Path(args[3] if len(args) > 3 else "jobs"))
        print(json.dumps({k: result.get(k) for k in ("trial_dir", "verifier_result", "exception_info")}, indent=1))
        return 0 if result.get("verifier_result") else 1
    failed = 0
    for report in check_tasks([Path(a) for a in args[1:]]):
        problems = [f"{f['rule']}: {f['message']}" for f in report.get("findings", [])]
        problems += [report[k] for k in ("error", "lint_error") if k in report]
        failed += bool(problems) or not report["valid_dir"]
        print(f"{'ok  ' if not problems and report['valid_dir'] else 'FAIL'} {report['dir']}")
        for problem in problems:
            print(f"    {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
