"""Harbor task folders imported as codesign tasks (``python -m codesign.importers.harbor``): the test script
becomes a command criterion, solve.sh the reference patch; what cannot be graded the same way is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from codesign.importers import harbor
from codesign.tasks.loader import load_task
from tests.conftest import gate_in

PAGE = "<!doctype html><html><head><title>Shop</title></head><body><h1>Shop</h1>\n<p class=note>Come again soon</p>\n</body></html>\n"  # noqa: E501
TOML = """schema_version = "1.4"
[task]
name = "acme/shop-note"
[metadata]
difficulty = "easy"
category = "web"
tags = ["html", "copy"]
[verifier]
timeout_sec = 120.0
[agent]
timeout_sec = 600.0
"""
DOCKERFILE = "FROM codesign/worker:latest\nWORKDIR /app\nCOPY app/ /app/\n"
TEST_SH = """#!/bin/bash
# Harbor's convention: tests at /tests, the app at the working folder, the reward in /logs/verifier.
cd /app
if grep -q 'Thanks for visiting' /app/index.html && bash /tests/helper.sh; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""
HELPER = "test -f index.html\n"
SOLVE = "#!/bin/bash\nsed -i 's/Come again soon/Thanks for visiting/' /app/index.html\n"


def harbor_task(root: Path, name: str = "shop-note", **override: str | None) -> Path:
    """A Harbor task folder; ``override`` replaces (or with None removes) a file by its relative path."""
    files = {"task.toml": TOML.replace("shop-note", name), "instruction.md": "# Shop note\n\nSay \"Thanks for "
             "visiting\" instead of \"Come again soon\" on the page.\n", "environment/Dockerfile": DOCKERFILE,
             "environment/app/index.html": PAGE, "tests/test.sh": TEST_SH, "tests/helper.sh": HELPER,
             "solution/solve.sh": SOLVE}  # fmt: skip
    files.update({k.replace("__", "/"): v for k, v in override.items()})  # type: ignore[misc]
    task = root / name
    for rel, text in files.items():
        if text is not None:
            (task / rel).parent.mkdir(parents=True, exist_ok=True)
            (task / rel).write_text(text)
    return task


@pytest.mark.browser
@pytest.mark.slow
def test_a_harbor_task_imports_its_test_script_as_a_command_criterion_and_passes_the_gate(tmp_path):
    harbor_task(tmp_path / "harbor")
    out = tmp_path / "suite"
    done = subprocess.run([sys.executable, "-m", "codesign.importers.harbor", str(tmp_path / "harbor"), str(out)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 imported, 0 skipped" in done.stdout
    task = load_task(out / "harbor-shop-note")
    assert task.manifest.request.startswith("# Shop note") and task.track == "RE"
    assert task.manifest.labels.difficulty == 2 and task.manifest.labels.categories == ["web", "html", "copy"]
    (criterion,) = task.criteria
    assert criterion.command is not None and criterion.command.pass_if == "reward_file"
    assert criterion.command.files == "tests" and criterion.command.timeout_s == 120.0
    script = (out / "harbor-shop-note" / "tests" / "test.sh").read_text()
    assert "${REWARD_DIR}/reward.txt" in script and "bash ${CRITERION_FILES}/helper.sh" in script
    code_lines = "\n".join(line for line in script.splitlines() if not line.startswith("#"))
    assert "cd ${APP_DIR}" in code_lines and "/app" not in code_lines and "/logs" not in code_lines
    assert "tests" not in {p.name for p in (out / "harbor-shop-note" / "app").iterdir()}  # hidden material
    patch = task.reference_patch()
    assert "-<p class=note>Come again soon</p>" in patch and "+<p class=note>Thanks for visiting</p>" in patch
    # The gate: the reference's reward is 1 (PASS), the untouched app's 0 (FAIL): the criterion discriminates.
    code, report, _ = gate_in(tmp_path / "gate", f"tasks.root={out}")
    assert code == 0, report


@pytest.mark.parametrize(
    ("override", "reason"),
    [
        ({"environment__docker-compose.yaml": "services: {}\n"}, "several services"),
        ({"tests__test.sh": "apt-get install -y curl\n" + TEST_SH}, "installs software at verification"),
        ({"environment__app__index.html": None, "environment__app__main.py": "print(1)\n"}, "serves no web app"),
        ({"environment__Dockerfile": "FROM x\nWORKDIR /app\n"}, "copies no app into its working folder"),
        ({"solution__solve.sh": "exit 7\n"}, "solve.sh failed here (exit code 7"),
        ({"solution__solve.sh": "true\n"}, "changed nothing"),
        ({"solution__solve.sh": None}, "no solution/solve.sh"),
        ({"tests__check.py": "open('/app/index.html')\n"}, "tests/check.py names /app"),
        ({"tests__test.sh": "cat '/app/index.html' > /dev/null\n"}, "inside single quotes"),
        ({"tests__test.sh": None}, "no tests/test.sh"),
        ({"task.toml": TOML + "[[steps]]\nname = 'one'\n"}, "multi-step"),
        ({"instruction.md": "  \n"}, "no instruction.md"),
    ],
)
def test_what_cannot_be_graded_the_same_way_is_refused_with_the_reason(tmp_path, override, reason):
    task = harbor_task(tmp_path / "harbor", **override)
    with pytest.raises(harbor.Refused, match=reason.replace("(", r"\(")):
        harbor.import_task(task, tmp_path / "out", tmp_path / "npm")
    assert not [p for p in (tmp_path / "out").iterdir()] if (tmp_path / "out").exists() else True  # nothing left


def test_one_refused_task_never_stops_the_others_and_the_summary_says_why(tmp_path, capsys):
    harbor_task(tmp_path / "harbor", "good")
    harbor_task(tmp_path / "harbor", "compose", **{"environment__docker-compose.yaml": "services: {}\n"})
    (tmp_path / "harbor" / "notes").mkdir()  # a folder without task.toml: not a task, not reported
    code = harbor.main([str(tmp_path / "harbor"), str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert code == 0 and "1 imported, 1 skipped" in printed
    assert f"skip {tmp_path / 'harbor' / 'compose'}: the environment has several services" in printed
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["harbor-good"]
    assert yaml.safe_load((tmp_path / "out" / "harbor-good" / "task.yaml").read_text())["id"] == "harbor-good"
    assert harbor.main([str(tmp_path / "empty-nowhere"), str(tmp_path / "out2")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_the_dockerfile_decides_what_the_app_is():
    parsed = harbor.parse_dockerfile(
        "FROM node:20 AS build\nWORKDIR /src\nCOPY . .\nFROM codesign/worker\nWORKDIR /srv\nWORKDIR web\n"
        'COPY --chown=1000:1000 site/ ./\nCOPY ["conf/a.json", "/etc/a.json"]\nCOPY --from=build /src/x ./x\n'
        "RUN apt-get update && \\\n    apt-get install -y git\n"
    )
    assert parsed.workdir == "/srv/web"
    assert parsed.copied == [("site/", "/srv/web"), ("conf/a.json", "/etc/a.json")]
