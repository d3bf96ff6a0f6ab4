"""The Hydra configs are package data: a wheel built from the repository carries them, and ``python -m codesign``
composes from the installed copy alone — what a Ray worker image or ``runtime_env: {pip: ...}`` has (no checkout)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from tests.helpers import REPO, compose_config

SOURCE_CONF = REPO / "codesign" / "conf"


def test_top_level_conf_is_the_package_folder():
    """The repository's ``conf/`` (the documented layout) is a link to the package data, not a second copy."""
    assert (REPO / "conf").is_symlink()
    assert (REPO / "conf").resolve() == SOURCE_CONF.resolve()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    # Build from a copy of what the build reads: an in-tree build writes build/ and *.egg-info into the checkout,
    # which others may be using at the same time.
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "node_modules")
    for name in ("codesign", "hydra_plugins"):
        shutil.copytree(REPO / name, src / name, ignore=skip)
    # --no-build-isolation: this interpreter's setuptools (the dev extra pins >=77, which reads the SPDX
    # `license`), offline and in seconds; an isolated build would download setuptools on every run.
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"),
         str(src)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n(needs setuptools>=77: pip install -e '.[dev]')"
    (whl,) = (tmp / "dist").glob("codesign-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel: Path) -> tuple[Path, dict[str, str]]:
    """The wheel installed into a bare folder, and an environment that imports it first."""
    site = wheel.parent.parent / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    # This venv also has the checkout installed in editable mode, through a finder on sys.meta_path. PYTHONPATH
    # entries come before site-packages on sys.path, and the path finder (which serves sys.path) runs before
    # the editable finder, so the wheel's regular package wins; the tests assert it by the imported __file__.
    return site, {**os.environ, "PYTHONPATH": str(site)}


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    # cwd outside the checkout, so neither the checkout nor its conf/ is reachable from the working directory
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_wheel_carries_every_config(wheel):
    expected = {"codesign/conf/" + p.relative_to(SOURCE_CONF).as_posix() for p in SOURCE_CONF.rglob("*.yaml")}
    assert {"codesign/conf/config.yaml", "codesign/conf/experiment/main_results.yaml"} <= expected
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert {"codesign/conf/config.yaml", "codesign/conf/experiment/main_results.yaml"} <= names
    assert expected - names == set()


@pytest.mark.slow
def test_installed_wheel_composes_without_the_checkout(installed):
    site, env = installed
    cwd = site.parent
    local = compose_config("model=oracle")  # the checkout's configs, composed in this process
    assert local.model.name == "oracle"

    code = ("import codesign, hydra_plugins.codesign_launcher as launcher; from codesign.config import compose_cli; "
            "cfg = compose_cli(['model=oracle']); print(codesign.__file__); print(launcher.__file__); "
            "print(cfg.model.name, cfg.executor._target_)")  # fmt: skip
    proc = run(["-c", code], cwd, env)
    assert proc.returncode == 0, proc.stderr
    package, launcher, composed = proc.stdout.strip().splitlines()
    assert Path(package).resolve().is_relative_to(site.resolve()), package
    assert Path(launcher).resolve().is_relative_to(site.resolve()), launcher
    assert composed == f"oracle {local.executor._target_}"

    # the CLI: Hydra's primary config folder is the installed package's, and `--cfg job` prints the composed
    # config (without running) — the same as the checkout's
    proc = run(["-m", "codesign", "--info", "searchpath"], cwd, env)
    assert proc.returncode == 0, proc.stderr
    assert f"file://{site.resolve() / 'codesign' / 'conf'} " in proc.stdout
    proc = run(["-m", "codesign", "--cfg", "job", "model=oracle"], cwd, env)
    assert proc.returncode == 0, proc.stderr
    printed = yaml.safe_load(proc.stdout)
    assert printed["model"]["name"] == "oracle"
    assert printed == OmegaConf.to_container(local, resolve=False)
    assert not (cwd / "outputs").exists()  # --cfg composes only: no run folder
