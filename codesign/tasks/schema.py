"""The task contract: ``task.yaml`` (what the solver sees) and ``criteria.yaml`` (hidden).

A task folder::

    <task_id>/
      task.yaml          manifest: request, history, attachments, environment, labels
      criteria.yaml      hidden acceptance criteria, optionally with deterministic probes
      app/               the runnable pre-edit application (the baseline)
      attachments/       files referenced by the manifest
      solution/solution.patch   reference minimal patch (unified diff, paths relative to app/)

``docs/tasks.md`` documents every field.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from codesign.tasks.probes import Probe, Viewport

Track = Literal["ME", "RE"]
Modality = Literal["image", "audio", "video", "document"]
EditType = Literal["component", "route", "state", "data_flow", "content"]
CriterionKind = Literal["visual", "interaction", "content", "source", "responsive", "accessibility", "preservation"]
CapabilityDimension = Literal["grounded_understanding", "ui_transformation", "functional_implementation"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Attachment(_Strict):
    path: str = Field(description="relative to the task folder, e.g. attachments/mockup.png")
    modality: Modality
    description: str | None = Field(default=None, description="what a user would say the file is")


class Turn(_Strict):
    role: Literal["user", "assistant"]
    content: str


class Serve(_Strict):
    """How the built app is served: a static folder (in-process server) or the task's own command."""

    static_dir: str = "."
    spa_fallback: bool = False  # unknown paths get index.html (client-side routing)
    command: str | None = None  # e.g. "npm run preview -- --port {port} --host 127.0.0.1"
    ready_path: str = "/"
    ready_timeout_s: float = 60.0


class Environment(_Strict):
    kind: Literal["static", "node"] = "static"
    install: str | None = None  # node default: npm ci (cached by lockfile hash)
    build: str | Literal[False] | None = None  # node default: npm run build; false: nothing to build (a dev server)
    build_timeout_s: float = 300.0
    serve: Serve = Serve()
    routes: list[str] = Field(default_factory=lambda: ["/"], min_length=1)
    ignore: list[str] = Field(default_factory=list, description="extra paths left out of the source diff")
    # The starting app shows nothing on purpose (Web-Bench starts many projects from an empty root): the gate
    # warns about a blank page instead of failing, unless the page threw.
    starts_blank: bool = False

    @field_validator("routes")
    @classmethod
    def _routes_absolute(cls, routes: list[str]) -> list[str]:
        bad = [r for r in routes if not r.startswith("/")]
        if bad:
            raise ValueError(f"routes must start with '/': {bad}")
        return routes


class Labels(_Strict):
    capability: list[CapabilityDimension] = Field(min_length=1)
    categories: list[str] = Field(default_factory=list)
    edit_types: list[EditType] = Field(default_factory=list)
    difficulty: int = Field(default=2, ge=1, le=5)


class TaskManifest(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    track: Track
    title: str
    request: str = Field(min_length=1)
    history: list[Turn] = Field(default_factory=list)
    attachments: list[Attachment] = Field(default_factory=list)
    environment: Environment = Environment()
    labels: Labels

    @property
    def modality(self) -> str:
        """Primary attachment modality, as the paper groups ME tasks; ``text`` when there is none."""
        return self.attachments[0].modality if self.attachments else "text"


class ScriptCheck(_Strict):
    """A criterion graded by the task author's own Playwright code: an async Python function in a file kept
    with the hidden material (never under app/). It is called with the keyword arguments it names among
    ``page`` (loaded at ``route``), ``context``, ``base_url`` and ``expect`` (Playwright's assertions), and
    holds unless it raises ``AssertionError`` (what ``expect`` raises) or returns False / ``(False, why)``."""

    file: str = Field(pattern=r"^[^/].*\.py$")  # relative to the task folder, e.g. checks/theme.py
    function: str = Field(default="check", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    route: str = "/"
    viewport: Viewport = "desktop"
    color_scheme: Literal["light", "dark"] | None = None
    timeout_s: float = Field(default=60.0, gt=0, le=600)  # generous: a verdict must not depend on load


class SpecRef(_Strict):
    """One Playwright test of the task's spec folder: its file (relative to the folder) and its title (the
    test's own title, or the whole title path joined by `` > ``)."""

    file: str
    title: str


class SpecRunner(_Strict):
    """Playwright test specs kept with the hidden material (``spec:`` criteria): one ``playwright test`` run
    per evaluation grades all of them, on codesign's Chromium, against codesign's served app."""

    dir: str = Field(default="specs", pattern=r"^[^/]")  # in the task folder; package.json + lockfile
    config: str | None = None  # the project's playwright config, relative to dir (its webServer is dropped)
    timeout_s: float = Field(default=30.0, gt=0, le=600)  # per test (Web-Bench's evaluation setting: 30 s)
    expect_timeout_s: float = Field(default=10.0, gt=0, le=120)  # per expect() assertion
    # Tests run at once in the first run (1: one after another). More only for tests that wait rather than
    # compute: the Web-Bench importer's starting-app grading, where nearly every test waits out its bounds.
    workers: int = Field(default=1, ge=1, le=16)
    # Tests that timed out waiting for an element that never appeared are run again (with longer bounds) at most
    # this many at once; any other timeout is run again alone. 1: every one alone. A suite whose tests fail on a
    # starting app by waiting for elements it lacks (Web-Bench's) may set more: they wait, they do not compute.
    rerun_workers: int = Field(default=1, ge=1, le=16)
    # false: a timeout stands, nothing is run again — only for bounds that already hold what a run again would
    # give (the Web-Bench importer grades a starting app so, with 4× the bounds from the start: nearly every
    # test fails on it, and a second run of each would double the import's cost for the same verdicts).
    run_again: bool = True
    # Environment of the run; values may name {workspace} (the candidate's final source tree, for specs that
    # check files), {specs} (the spec folder's copy) and {base_url}: e.g. NODE_PATH: "{specs}/libraries".
    env: dict[str, str] = Field(default_factory=dict)
    # Packages kept in the spec folder (name -> folder relative to dir), linked into node_modules beside the
    # installed ones so both `require` and `import` find them (ES modules ignore NODE_PATH), e.g.
    # {"@web-bench/test-util": "libraries/test-util"}.
    packages: dict[str, str] = Field(default_factory=dict)

    @field_validator("packages")
    @classmethod
    def _package_names(cls, packages: dict[str, str]) -> dict[str, str]:
        for name, folder in packages.items():
            if not re.fullmatch(r"(@[a-z0-9][\w.~-]*/)?[a-z0-9][\w.~-]*", name):
                raise ValueError(f"{name!r} is not an npm package name")
            if folder.startswith("/") or ".." in Path(folder).parts or Path(folder).parts[:1] == ("node_modules",):
                raise ValueError(f"package {name}: {folder!r} must be a folder inside the spec folder")
        return packages


class CommandCheck(_Strict):
    """A criterion graded by a command run on the candidate's final workspace, in the candidate sandbox
    (confined, offline, the app built), e.g. the repository's own unit tests: ``npm test -- -t 'cart total'``.
    Its exit status (``exit_zero``) or the reward it writes to ``$REWARD_DIR/reward.txt`` (``reward_file``,
    Harbor's convention) decides; its output is evidence. ``files`` names a folder of the hidden material
    copied in at grading only (as ``$CRITERION_FILES``): test files the solver never sees."""

    run: str = Field(min_length=1)  # a bash command; its working folder is the final workspace
    timeout_s: float = Field(default=300.0, gt=0, le=3600)  # generous: a verdict must not depend on load
    pass_if: Literal["exit_zero", "reward_file"] = "exit_zero"
    min_reward: float = 1.0  # pass_if reward_file: the reward at or above which the criterion holds
    files: str | None = Field(default=None, pattern=r"^[^/]")  # relative to the task folder, e.g. tests


class Criterion(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_\-.]+$")
    text: str = Field(min_length=1)
    kind: CriterionKind
    preserve: bool = False  # True: the unmodified app already satisfies it and must keep doing so
    probe: Probe | None = None
    script: ScriptCheck | None = None  # a Playwright script of the task author's (instead of a probe)
    spec: SpecRef | None = None  # a test of the task's Playwright spec files (criteria.yaml's spec_runner)
    command: CommandCheck | None = None  # a command run on the final workspace (the repository's own tests)

    @model_validator(mode="after")
    def _one_grader(self) -> Criterion:
        if sum(g is not None for g in (self.probe, self.script, self.spec, self.command)) > 1:
            raise ValueError("a criterion has one of probe, script, spec or command")
        return self

    @property
    def deterministic(self) -> bool:
        """Graded exactly (a probe, a script, a spec test or a command), without an LLM."""
        return any(g is not None for g in (self.probe, self.script, self.spec, self.command))


class NearMissFile(_Strict):
    """``solution/near-misses/<name>.yaml``: a wrong or partial solution's expected verdicts (its patch is
    ``<name>.patch`` beside it). The gate checks the deterministic graders give exactly these; calibration
    compares an LLM judge with them."""

    why: str = Field(min_length=1)  # one line: what the solver got wrong
    verdicts: dict[str, Literal["PASS", "PARTIAL", "FAIL"]]  # every criterion's expected verdict


class CriteriaFile(_Strict):
    criteria: list[Criterion] = Field(min_length=1)
    spec_runner: SpecRunner | None = None  # required when a criterion names a spec test

    @model_validator(mode="after")
    def _runner_for_specs(self) -> CriteriaFile:
        if self.spec_runner is None and any(c.spec for c in self.criteria):
            raise ValueError("criteria name spec tests but there is no spec_runner block (its dir, config)")
        return self

    @field_validator("criteria")
    @classmethod
    def _unique_ids(cls, criteria: list[Criterion]) -> list[Criterion]:
        counts = collections.Counter(c.id for c in criteria)
        dupes = {i for i, n in counts.items() if n > 1}
        if dupes:
            raise ValueError(f"duplicate criterion ids: {sorted(dupes)}")
        return criteria
