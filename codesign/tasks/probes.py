"""The deterministic probe format: browser steps to perform, then assertions to check.

A probe is written in YAML as single-key mappings, so task authors read it like a script::

    probe:
      route: /cart
      viewport: mobile
      steps:
        - click: "button.add"
        - fill: {selector: "#qty", value: "3"}
      expect:
        - text: {selector: ".total", equals: "$36.00"}
        - visible: ".toast"
        - style: {selector: "h1", property: "font-size", equals: "32px", tolerance: 0.05}

Every step and assertion is a pydantic model; an unknown key fails loading with the list of known
ones. The runner that executes probes lives in ``codesign.evaluate.probes``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

NamedViewport = Literal["desktop", "mobile"]
# Which matches of a selector an assertion is about: the first (default), every one (at least one must
# exist), or any one.
Match = Literal["first", "every", "any"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ViewportSize(_Strict):
    """A viewport of any size: ``viewport: {width: 768, height: 1024}`` (``mobile: true`` for touch and the
    mobile meta-viewport handling of the named ``mobile`` viewport)."""

    width: int = Field(ge=200, le=4000)
    height: int = Field(ge=200, le=4000)
    mobile: bool = False


Viewport = NamedViewport | ViewportSize


def viewport_label(viewport: Viewport) -> str:
    """The name evidence ids use: ``desktop``, ``mobile`` or ``768x1024``."""
    return viewport if isinstance(viewport, str) else f"{viewport.width}x{viewport.height}"


def _selector_shorthand(value: Any) -> Any:
    """``click: "#id"`` is shorthand for ``click: {selector: "#id"}``."""
    return {"selector": value} if isinstance(value, str) else value


# --- steps -------------------------------------------------------------------------------------------


class Click(_Strict):
    selector: str


class Fill(_Strict):
    selector: str
    value: str


class Press(_Strict):
    key: str
    selector: str | None = None


class Select(_Strict):
    selector: str
    value: str


class Hover(_Strict):
    selector: str


class Check(_Strict):
    selector: str


class Goto(_Strict):
    route: str


class Scroll(_Strict):
    selector: str | None = None
    y: int | None = None


class SetViewport(_Strict):
    viewport: Viewport


class Wait(_Strict):
    ms: int = Field(ge=0, le=10_000)


class WaitFor(_Strict):
    selector: str
    state: Literal["attached", "visible", "hidden", "detached"] = "visible"


STEPS: dict[str, type[_Strict]] = {
    "click": Click,
    "fill": Fill,
    "press": Press,
    "select": Select,
    "hover": Hover,
    "check": Check,
    "goto": Goto,
    "scroll": Scroll,
    "set_viewport": SetViewport,
    "wait": Wait,
    "wait_for": WaitFor,
}
_SELECTOR_SHORTHAND = {"click", "hover", "check", "wait_for"}


# --- assertions --------------------------------------------------------------------------------------


class Text(_Strict):
    """Text of the first match (whitespace collapsed); exactly one comparison must be given."""

    selector: str
    equals: str | None = None
    contains: str | None = None
    matches: str | None = None
    absent: str | None = None  # the text must NOT contain this
    ignore_case: bool = False
    match: Match = "first"

    @model_validator(mode="after")
    def _one_comparison(self) -> Text:
        given = [k for k in ("equals", "contains", "matches", "absent") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("text needs exactly one of equals / contains / matches / absent")
        return self


class Value(_Strict):
    """The current value of a form field (input, textarea, select); numbers compare numerically."""

    selector: str
    equals: str | None = None
    number: float | None = None
    tolerance: float = Field(default=0.005, ge=0)

    @model_validator(mode="after")
    def _one_comparison(self) -> Value:
        if (self.equals is None) == (self.number is None):
            raise ValueError("value needs exactly one of equals / number")
        return self


class Visible(_Strict):
    selector: str
    match: Match = "first"


class Hidden(_Strict):
    selector: str


class Count(_Strict):
    selector: str
    equals: int | None = None
    min: int | None = None
    max: int | None = None

    @model_validator(mode="after")
    def _some_bound(self) -> Count:
        if self.equals is None and self.min is None and self.max is None:
            raise ValueError("count needs equals, min or max")
        return self


class Style(_Strict):
    """Computed style; numeric values (px, colours' channels) compare with a relative tolerance."""

    selector: str
    property: str
    equals: str | None = None
    not_equals: str | None = None
    tolerance: float = Field(default=0.0, ge=0.0, le=1.0)
    pseudo: str | None = None
    match: Match = "first"

    @model_validator(mode="after")
    def _one_comparison(self) -> Style:
        if (self.equals is None) == (self.not_equals is None):
            raise ValueError("style needs exactly one of equals / not_equals")
        return self


class Attribute(_Strict):
    selector: str
    name: str
    equals: str | None = None
    contains: str | None = None
    exists: bool | None = None
    match: Match = "first"


class Storage(_Strict):
    key: str
    area: Literal["local", "session"] = "local"
    equals: str | None = None
    contains: str | None = None
    exists: bool | None = None


class RouteStatus(_Strict):
    route: str
    status: int = 200


class ConsoleClean(_Strict):
    """No console messages at or above ``level`` and no uncaught page errors."""

    level: Literal["error", "warning"] = "error"


class Position(_Strict):
    """Geometry of an element relative to another one or to the viewport."""

    selector: str
    left_of: str | None = None
    right_of: str | None = None
    above: str | None = None
    below: str | None = None
    within_viewport: bool | None = None


class Role(_Strict):
    """An element reachable by ARIA role and accessible name (accessibility checks)."""

    role: str
    name: str | None = None
    exact: bool = False
    count: int | None = None  # default: at least one


class Box(_Strict):
    """An element's box (first match), in CSS pixels, compared with bounds and with other elements' boxes;
    every comparison allows ``tolerance_px``."""

    selector: str
    inside: str | None = None  # contained in this element's box
    outside: str | None = None  # not overlapping this element's box
    same_width_as: str | None = None
    same_height_as: str | None = None
    min_width: float | None = None
    max_width: float | None = None
    min_height: float | None = None
    max_height: float | None = None
    tolerance_px: float = Field(default=1.0, ge=0)

    @model_validator(mode="after")
    def _some_comparison(self) -> Box:
        if all(v is None for k, v in self.__dict__.items() if k not in ("selector", "tolerance_px")):
            raise ValueError("box needs a comparison: inside, outside, same_width_as, same_height_as or a bound")
        return self


class Url(_Strict):
    """The page's current address after the steps, relative to the app (``/cart?x=1#top``)."""

    equals: str | None = None
    contains: str | None = None
    matches: str | None = None

    @model_validator(mode="after")
    def _one_comparison(self) -> Url:
        if sum(v is not None for v in (self.equals, self.contains, self.matches)) != 1:
            raise ValueError("url needs exactly one of equals / contains / matches")
        return self


class NoHorizontalOverflow(_Strict):
    """The page does not scroll sideways at the current viewport (responsive checks)."""

    tolerance_px: int = 1


class Source(_Strict):
    """A check on the final source tree (files matched by a glob), for source-kind criteria."""

    glob: str
    contains: str | None = None
    matches: str | None = None
    absent: str | None = None

    @model_validator(mode="after")
    def _one_comparison(self) -> Source:
        given = [k for k in ("contains", "matches", "absent") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "source needs exactly one of contains / matches / absent (a file that must exist: matches: '')"
            )
        return self


class Title(_Strict):
    equals: str | None = None
    contains: str | None = None


ASSERTIONS: dict[str, type[_Strict]] = {
    "text": Text,
    "value": Value,
    "visible": Visible,
    "hidden": Hidden,
    "count": Count,
    "style": Style,
    "attribute": Attribute,
    "storage": Storage,
    "route_status": RouteStatus,
    "console_clean": ConsoleClean,
    "position": Position,
    "role": Role,
    "no_horizontal_overflow": NoHorizontalOverflow,
    "source": Source,
    "title": Title,
    "box": Box,
    "url": Url,
}
_ASSERT_SELECTOR_SHORTHAND = {"visible", "hidden"}


def _single_key(kind: str, table: dict[str, type[_Strict]], shorthand: set[str]):
    def parse(value: Any) -> tuple[str, _Strict]:
        if isinstance(value, tuple):  # already parsed (model_copy, re-validation)
            return value
        if not isinstance(value, dict) or len(value) != 1:
            raise ValueError(f"each {kind} is a mapping with exactly one key, got {value!r}")
        ((name, body),) = value.items()
        if name not in table:
            raise ValueError(f"unknown probe {kind} {name!r}; known: {', '.join(sorted(table))}")
        if name in shorthand:
            body = _selector_shorthand(body)
        if name == "expect" and isinstance(body, list):  # the step form: - expect: [assertions]
            body = {"checks": body}
        if body is None:
            body = {}
        return name, table[name].model_validate(body)

    return parse


StepSpec = Annotated[tuple[str, Any], BeforeValidator(_single_key("step", STEPS, _SELECTOR_SHORTHAND))]
AssertionSpec = Annotated[
    tuple[str, Any], BeforeValidator(_single_key("assertion", ASSERTIONS, _ASSERT_SELECTOR_SHORTHAND))
]


class ExpectNow(_Strict):
    """A step that checks assertions between other steps: ``- expect: [{text: ...}]``; when one does not
    hold the probe stops there and FAILs with what was found and what was expected."""

    checks: list[AssertionSpec] = Field(min_length=1)


STEPS["expect"] = ExpectNow


class Probe(_Strict):
    """Steps run in a fresh page (fresh storage) at ``route``/``viewport``, then every assertion is checked.

    Verdict: PASS when every assertion holds; PARTIAL when ``partial`` is set and at least one holds;
    FAIL otherwise. A step that cannot be performed (element never reached) is a FAIL with that category.
    """

    route: str = "/"
    viewport: Viewport = "desktop"
    color_scheme: Literal["light", "dark"] | None = None  # emulated prefers-color-scheme (None: the default)
    steps: list[StepSpec] = Field(default_factory=list)
    expect: list[AssertionSpec] = Field(min_length=1)
    partial: bool = False

    @property
    def needs_browser(self) -> bool:
        return any(name != "source" for name, _ in self.expect) or bool(self.steps)

    @property
    def needs_own_page(self) -> bool:
        """Steps, an emulated colour scheme or a custom viewport: the shared evidence pages will not do."""
        return bool(self.steps) or self.color_scheme is not None or not isinstance(self.viewport, str)
