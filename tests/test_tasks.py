"""Task loading: the bundled suite validates; broken tasks fail clearly and alone."""

from __future__ import annotations

import pytest

from codesign.errors import TaskError
from codesign.tasks.loader import load_suite, load_task
from codesign.tasks.probes import Probe
from tests.conftest import SUITE

GOOD = "me-bakery-header-mockup"


def test_bundled_suite_loads_cleanly():
    suite = load_suite(SUITE)
    assert suite.errors == []
    tracks = {t.track for t in suite.tasks}
    assert tracks == {"ME", "RE"}
    for task in suite.tasks:
        assert task.criteria and task.solution_path.is_file() and (task.app_dir / "index.html").is_file()
        assert any(c.preserve for c in task.criteria), f"{task.id} has no preservation criterion"


def test_task_view_hides_criteria_and_solution():
    task = load_task(SUITE / GOOD)
    view = task.view()
    text = repr(view)
    assert "criteria" not in text and "solution" not in text
    for c in task.criteria:
        assert c.text not in text


def test_missing_file_names_task_and_file(suite_copy):
    root = suite_copy(GOOD)
    (root / GOOD / "criteria.yaml").unlink()
    with pytest.raises(TaskError) as err:
        load_task(root / GOOD)
    assert err.value.task_id == GOOD and err.value.file == "criteria.yaml" and "missing" in err.value.problem


def test_an_app_needs_an_html_page_at_its_root_or_deeper(suite_copy):
    root = suite_copy(GOOD)
    app = root / GOOD / "app"
    (app / "src").mkdir(exist_ok=True)
    (app / "index.html").rename(app / "src" / "index.html")  # a Vite app's pages under src/ (Web-Bench's layout)
    assert load_task(root / GOOD).id == GOOD
    for page in app.rglob("*.html"):
        page.unlink()
    with pytest.raises(TaskError) as err:
        load_task(root / GOOD)
    assert err.value.file == "app/index.html" and "missing" in err.value.problem


def test_malformed_yaml_reports_line(suite_copy):
    root = suite_copy(GOOD)
    (root / GOOD / "task.yaml").write_text("id: x\ntrack: [ME\nrequest: hi\n")
    with pytest.raises(TaskError) as err:
        load_task(root / GOOD)
    assert err.value.file == "task.yaml" and "malformed YAML" in err.value.problem and "line" in err.value.problem


def test_unknown_probe_step_lists_known_ones(suite_copy):
    root = suite_copy(GOOD)
    path = root / GOOD / "criteria.yaml"
    path.write_text(
        path.read_text().replace(
            "expect:\n        - style:", "steps:\n        - clik: '#order'\n      expect:\n        - style:", 1
        )
    )
    with pytest.raises(TaskError) as err:
        load_task(root / GOOD)
    msg = str(err.value)
    assert f"task {GOOD!r}: criteria.yaml:" in msg
    assert "unknown probe step 'clik'" in msg and "click" in msg and "criteria.0.probe.steps.0" in msg


def test_schema_errors_name_the_field(suite_copy):
    root = suite_copy(GOOD)
    path = root / GOOD / "task.yaml"
    path.write_text(path.read_text().replace("track: ME", "track: XX"))
    with pytest.raises(TaskError) as err:
        load_task(root / GOOD)
    assert err.value.file == "task.yaml" and "track" in err.value.problem


def test_one_broken_task_leaves_the_others(suite_copy):
    root = suite_copy(GOOD, "me-expense-receipt-pdf")
    (root / "me-expense-receipt-pdf" / "solution" / "solution.patch").unlink()
    suite = load_suite(root)
    assert [t.id for t in suite.tasks] == [GOOD]
    assert len(suite.errors) == 1 and "solution/solution.patch" in str(suite.errors[0])


def test_probe_shorthand_and_validation():
    p = Probe.model_validate({"steps": [{"click": "#go"}], "expect": [{"visible": ".done"}]})
    assert p.steps[0][0] == "click" and p.steps[0][1].selector == "#go"
    with pytest.raises(ValueError, match="exactly one of equals"):
        Probe.model_validate({"expect": [{"text": {"selector": "h1"}}]})
    with pytest.raises(ValueError, match="at least 1"):
        Probe.model_validate({"expect": []})
    with pytest.raises(ValueError, match="source needs exactly one of contains"):  # a glob alone checks nothing
        Probe.model_validate({"expect": [{"source": {"glob": "src/*.js"}}]})
    Probe.model_validate({"expect": [{"source": {"glob": "src/theme.js", "matches": ""}}]})  # "the file exists"
