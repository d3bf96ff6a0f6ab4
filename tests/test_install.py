"""The set-up is complete and declared: every program the package runs is declared in ``codesign.programs``,
and what `make run` / `make test` install is really there."""

from __future__ import annotations

import ast
import os
import re
import shlex
from pathlib import Path

import pytest

from codesign import install, programs
from codesign.errors import EnvironmentSetupError

PACKAGE = Path(install.__file__).resolve().parent
_EXEC_CALLS = {
    "run",
    "Popen",
    "check_output",
    "check_call",
    "call",
    "run_in_group",
    "run_command",
    "execvp",
}  # (a container's exec_run runs the image's programs)
_ARGV_NAMES = {"argv", "cmd", "command", "inner"}


def _program(node: ast.AST) -> str | None:
    """The program an argv literal starts with (``["git", ...]`` → git; ``["bash", "-c", "npm ci"]`` → bash)."""
    if isinstance(node, ast.List | ast.Tuple) and node.elts:
        first = node.elts[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value:
            return Path(first.value.split()[0]).name
    return None


def programs_called(root: Path) -> dict[str, set[str]]:
    """Programs each module runs: argv literals given to subprocess-like calls or assigned to argv-like
    names, names passed to ``shutil.which``, and the first word of module-level shell commands
    (``NODE_INSTALL = "npm ci …"``)."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        where = str(path.relative_to(root))
        for node in ast.walk(tree):
            names: list[str | None] = []
            if isinstance(node, ast.Call):
                func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if func in _EXEC_CALLS and node.args:
                    names.append(_program(node.args[0]))
                if func == "which" and node.args and isinstance(node.args[0], ast.Constant):
                    names.append(str(node.args[0].value))
            elif isinstance(node, ast.Assign):
                targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
                if targets & _ARGV_NAMES:
                    names.append(_program(node.value))
                shell_constant = any(t.isupper() and t.endswith(("_INSTALL", "_BUILD", "_COMMAND")) for t in targets)
                if shell_constant and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    words = shlex.split(node.value.value)  # the program after any VAR=value assignments
                    names.append(next((w for w in words if not re.match(r"^[A-Za-z_]\w*=", w)), ""))
            for name in filter(None, names):
                found.setdefault(name, set()).add(where)
    return found


def test_every_program_the_package_runs_is_declared_in_the_installer():
    called = programs_called(PACKAGE)
    # The scan sees what it must: a scanner that finds nothing would pass vacuously.
    assert {"bwrap", "git", "node", "npm", "dockerd", "debootstrap", "bash"} <= set(called), sorted(called)
    undeclared = {name: sorted(where) for name, where in called.items() if name not in programs.DECLARED}
    assert not undeclared, f"declare these in codesign/programs.py PROGRAMS: {undeclared}"


def test_the_scan_reports_a_program_nobody_declared(tmp_path):
    (tmp_path / "mod.py").write_text(
        "import shutil, subprocess\n"
        "def f(p):\n"
        "    subprocess.run(['imaginary-tool', '-v'])\n"
        "    argv = ['/usr/bin/other-tool', p]\n"
        "    return shutil.which('third-tool')\n"
        "MEDIA_COMMAND = 'fourth-tool --fast'\n"
        'TEST_COMMAND = \'HOME="$PWD" fifth-tool "$X"\'\n'
    )
    called = programs_called(tmp_path)
    assert set(called) == {"imaginary-tool", "other-tool", "third-tool", "fourth-tool", "fifth-tool"}
    assert not set(called) & programs.DECLARED


@pytest.mark.parametrize("group", ["run", "test"])
def test_what_the_make_targets_install_is_present(group):
    """`make run` installs the `run` group and `make test` the `test` group: after either, nothing is missing."""
    missing = [p.name for p in programs.PROGRAMS if group in p.groups and not programs._present(p)]
    assert not missing, f"run `python -m codesign.install {group}`; missing: {missing}"


def test_a_missing_prerequisite_is_a_clear_error_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: git, node, npm, bash are gone
    with pytest.raises(EnvironmentSetupError) as err:
        programs.require("run")
    assert "git" in str(err.value) and "node" in str(err.value) and "apt-get install" in str(err.value)


def test_apt_packages_are_refused_without_root_with_the_command_to_run(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentSetupError, match="apt-get install -y bubblewrap"):
        programs.apt_install(["bubblewrap"])


def test_the_list_names_every_program_with_its_use(capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["codesign.install", "--list"])
    install.main()
    out = capsys.readouterr().out
    for p in programs.PROGRAMS:
        assert p.name in out and p.used_by in out


@pytest.mark.parametrize(("env", "outcome"), [({}, "skipped"), ({"CI": "true"}, "failed"),
                                             ({"CODESIGN_REQUIRE": "all"}, "failed")])  # fmt: skip
def test_missing_machinery_skips_except_where_everything_is_required(tmp_path, env, outcome):
    import subprocess
    import sys

    (tmp_path / "test_needs.py").write_text(
        "from tests.conftest import unavailable\n\ndef test_needs_an_engine():\n    unavailable('no engine here')\n"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "CODESIGN_REQUIRE")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, env={**clean, **env, "PYTHONPATH": str(PACKAGE.parent)},
                          cwd=PACKAGE.parent)  # fmt: skip
    assert f"1 {outcome}" in proc.stdout, proc.stdout[-2000:]


def test_the_installed_browser_is_chromiums_headless_shell_not_the_full_browser(monkeypatch):
    """`make setup` installs Debian's headless shell and codesign drives it even beside a full Chromium: the
    full browser's headless mode costs ~3× the CPU per page (codesign/programs.py), so a set-up that left it in
    use would make every evaluation slower without failing anything else."""
    monkeypatch.delenv("CODESIGN_CHROMIUM", raising=False)
    if not programs.can_apt():
        pytest.skip("without root the set-up uses whatever Chromium it finds")
    assert programs.require("test")  # what `make setup-test` runs
    assert "chromium-headless-shell" in (programs.find_chromium() or "")
