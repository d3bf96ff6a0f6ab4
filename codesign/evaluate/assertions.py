"""The probe language's assertions (``codesign.tasks.probes``), checked against a loaded page or the workspace's
source: each gives a :class:`Check` saying whether it holds and what was seen."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

from codesign.evaluate.evidence import EvidenceSession, LoadedPage
from codesign.tasks import probes as P
from codesign.tasks.schema import Criterion

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass
class Check:
    ok: bool
    detail: str
    missing: bool = False  # the selector matched nothing


def _norm(text: str | None) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def _compare_text(actual: str, a: P.Text) -> bool:
    fold = (lambda s: s.casefold()) if a.ignore_case else (lambda s: s)
    actual = fold(actual)
    if a.equals is not None:
        return actual == fold(_norm(a.equals))
    if a.contains is not None:
        return fold(_norm(a.contains)) in actual
    if a.absent is not None:
        return fold(_norm(a.absent)) not in actual
    return re.search(a.matches or "", actual, re.IGNORECASE if a.ignore_case else 0) is not None


def _hex_to_rgb(value: str) -> str:
    m = re.fullmatch(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})", value.strip())
    if not m:
        return value
    h = m.group(1)
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    return f"rgb({int(h[0:2], 16)}, {int(h[2:4], 16)}, {int(h[4:6], 16)})"


def style_matches(actual: str, expected: str, tolerance: float) -> bool:
    """Equal after normalisation; numbers (px, colour channels) within a relative tolerance."""
    actual, expected = _norm(actual).lower(), _norm(_hex_to_rgb(expected)).lower()
    if actual == expected:
        return True
    if _NUMBER.sub("#", actual) != _NUMBER.sub("#", expected):
        return False
    pairs = zip(map(float, _NUMBER.findall(actual)), map(float, _NUMBER.findall(expected)), strict=True)
    return all(abs(a - e) <= tolerance * max(abs(e), 1.0) for a, e in pairs)


async def _first(page: Any, selector: str) -> Any | None:
    loc = page.locator(selector)
    return loc.first if await loc.count() > 0 else None


def expectation(name: str, a: Any) -> str:
    """What an assertion asked for, for a failure's reason (``expected text equals 'Thanks'``)."""
    asked = a.model_dump(exclude_none=True, exclude_unset=True) if hasattr(a, "model_dump") else {}
    where = asked.pop("selector", None)
    return "expected " + " ".join([name, *([repr(where)] if where else []), *(f"{k} {v!r}" for k, v in asked.items())])


async def check(assertion: tuple[str, Any], loaded: LoadedPage | None, session: EvidenceSession) -> Check:
    """Run one assertion; a failure's detail says what was found and what was expected."""
    result = await _check(assertion, loaded, session)
    if not result.ok:
        result.detail = f"{result.detail}; {expectation(*assertion)}"
    return result


async def _check(assertion: tuple[str, Any], loaded: LoadedPage | None, session: EvidenceSession) -> Check:
    name, a = assertion
    if name == "source":
        return _check_source(a, session)
    if loaded is None:  # only source assertions run without a page (Probe.needs_browser)
        raise ValueError(f"the {name} assertion needs a loaded page")
    page = loaded.page
    match name:
        case "text":

            async def text_of(el: Any) -> Check:
                actual = _norm(await el.inner_text())
                return Check(_compare_text(actual, a), f"{a.selector} text is {actual[:160]!r}")

            return await _over_matches(page, a.selector, a.match, text_of)
        case "value":
            el = await _first(page, a.selector)
            if el is None:
                return Check(False, f"no element matches {a.selector!r}", missing=True)
            value = await el.input_value()
            if a.equals is not None:
                return Check(value == a.equals, f"{a.selector} value is {value!r}")
            try:
                ok = abs(float(value) - a.number) <= a.tolerance
            except ValueError:
                ok = False
            return Check(ok, f"{a.selector} value is {value!r}")
        case "visible":

            async def shown_of(el: Any) -> Check:
                shown = await el.is_visible()
                return Check(shown, f"{a.selector} visible={shown}")

            return await _over_matches(page, a.selector, a.match, shown_of)
        case "hidden":
            el = await _first(page, a.selector)
            shown = el is not None and await el.is_visible()
            return Check(not shown, f"{a.selector} visible={shown}")
        case "count":
            n = await page.locator(a.selector).count()
            ok = (a.equals is None or n == a.equals) and (a.min is None or n >= a.min) and (a.max is None or n <= a.max)
            return Check(ok, f"{n} elements match {a.selector!r}", missing=n == 0 and not ok)
        case "style":

            async def style(el: Any) -> Check:
                value = await el.evaluate(
                    "(el, [p, ps]) => getComputedStyle(el, ps).getPropertyValue(p)", [a.property, a.pseudo]
                )
                if a.equals is not None:
                    return Check(style_matches(value, a.equals, a.tolerance), f"{a.selector} {a.property}: {value}")
                return Check(not style_matches(value, a.not_equals, a.tolerance), f"{a.selector} {a.property}: {value}")

            return await _over_matches(page, a.selector, a.match, style)
        case "attribute":

            async def attribute(el: Any) -> Check:
                value = await el.get_attribute(a.name)
                ok = _compare_value(value, a.equals, a.contains, a.exists)
                return Check(ok, f"{a.selector}[{a.name}]={value!r}")

            return await _over_matches(page, a.selector, a.match, attribute)
        case "storage":
            value = await page.evaluate(
                "([area, key]) => (area === 'local' ? localStorage : sessionStorage).getItem(key)", [a.area, a.key]
            )
            return Check(_compare_value(value, a.equals, a.contains, a.exists), f"{a.area}Storage[{a.key!r}]={value!r}")
        case "route_status":
            response = await page.request.get(session.base_url + a.route)
            return Check(response.status == a.status, f"GET {a.route} -> {response.status}")
        case "console_clean":
            levels = {"error"} if a.level == "error" else {"error", "warning"}
            bad = [m["text"] for m in loaded.console if m["type"] in levels] + loaded.errors
            return Check(not bad, f"{len(bad)} console problems" + (f": {bad[0][:160]}" if bad else ""))
        case "position":
            return await _check_position(page, a)
        case "role":
            n = await page.get_by_role(a.role, name=a.name, exact=a.exact).count()
            ok = n == a.count if a.count is not None else n >= 1
            return Check(ok, f"{n} elements with role={a.role} name={a.name!r}", missing=n == 0 and not ok)
        case "no_horizontal_overflow":
            # clientWidth, not innerWidth: mobile emulation widens innerWidth to fit overflowing content.
            overflow = await page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            return Check(overflow <= a.tolerance_px, f"horizontal overflow {overflow}px")
        case "box":
            return await _check_box(page, a)
        case "url":
            here = page.url[len(session.base_url) :] if page.url.startswith(session.base_url) else page.url
            ok = (
                (a.equals is None or here == a.equals)
                and (a.contains is None or a.contains in here)
                and (a.matches is None or re.search(a.matches, here) is not None)
            )
            return Check(ok, f"the address is {here!r}")
        case "title":
            title = _norm(await page.title())
            ok = (a.equals is None or title == a.equals) and (a.contains is None or a.contains in title)
            return Check(ok, f"title is {title!r}")
    raise ValueError(f"no runner for assertion {name!r}")  # the schema makes this unreachable


async def _over_matches(page: Any, selector: str, mode: str, one: Any) -> Check:
    """Check the first match, every match (at least one must exist) or any match of ``selector``."""
    matches = await page.locator(selector).all()
    if not matches:
        return Check(False, f"no element matches {selector!r}", missing=True)
    if mode == "first":
        return await one(matches[0])
    results = [await one(el) for el in matches]
    passed = [r for r in results if r.ok]
    if mode == "every":
        bad = [(i, r) for i, r in enumerate(results, start=1) if not r.ok]
        detail = (
            f"all {len(results)} matches hold"
            if not bad
            else (f"{len(bad)} of {len(results)} matches do not hold, e.g. match {bad[0][0]}: {bad[0][1].detail}")
        )
        return Check(not bad, detail)
    detail = passed[0].detail if passed else f"none of {len(results)} matches holds, e.g. {results[0].detail}"
    return Check(bool(passed), detail)


async def _box(page: Any, selector: str) -> dict[str, float] | None:
    """The first match's bounding box (None: nothing matches, or it is not rendered)."""
    el = await _first(page, selector)
    return await el.bounding_box() if el else None


async def _related(page: Any, relations: dict[str, str | None]) -> dict[str, tuple[str, dict[str, float]]] | str:
    """Each named other element's box (relation → (selector, box)), or the selector of one not rendered."""
    found = {}
    for relation, other in relations.items():
        if other is not None:
            box = await _box(page, other)
            if box is None:
                return other
            found[relation] = (other, box)
    return found


async def _check_box(page: Any, a: P.Box) -> Check:
    box = await _box(page, a.selector)
    if box is None:
        return Check(False, f"{a.selector} is not rendered", missing=True)
    t, ok = a.tolerance_px, True
    details = [f"{a.selector} is {box['width']:.0f}×{box['height']:.0f} at ({box['x']:.0f}, {box['y']:.0f})"]
    for bound, size, is_min in (
        (a.min_width, "width", True),
        (a.max_width, "width", False),
        (a.min_height, "height", True),
        (a.max_height, "height", False),
    ):
        if bound is not None:
            holds = box[size] >= bound - t if is_min else box[size] <= bound + t
            ok &= holds
    others = await _related(
        page,
        {
            "inside": a.inside,
            "outside": a.outside,
            "same_width_as": a.same_width_as,
            "same_height_as": a.same_height_as,
        },
    )
    if isinstance(others, str):
        return Check(False, f"{others} is not rendered", missing=True)
    for relation, (other, ob) in others.items():
        holds = {
            "inside": box["x"] >= ob["x"] - t
            and box["y"] >= ob["y"] - t
            and box["x"] + box["width"] <= ob["x"] + ob["width"] + t
            and box["y"] + box["height"] <= ob["y"] + ob["height"] + t,
            "outside": box["x"] + box["width"] <= ob["x"] + t
            or ob["x"] + ob["width"] <= box["x"] + t
            or box["y"] + box["height"] <= ob["y"] + t
            or ob["y"] + ob["height"] <= box["y"] + t,
            "same_width_as": abs(box["width"] - ob["width"]) <= t,
            "same_height_as": abs(box["height"] - ob["height"]) <= t,
        }[relation]
        ok &= holds
        details.append(
            f"{relation} {other} ({ob['width']:.0f}×{ob['height']:.0f} at ({ob['x']:.0f}, {ob['y']:.0f})): {holds}"
        )
    return Check(ok, "; ".join(details))


def _compare_value(value: str | None, equals: str | None, contains: str | None, exists: bool | None) -> bool:
    if exists is not None and (value is not None) != exists:
        return False
    if equals is not None and value != equals:
        return False
    return contains is None or (value is not None and contains in value)


async def _check_position(page: Any, a: P.Position) -> Check:
    box = await _box(page, a.selector)
    if box is None:
        return Check(False, f"{a.selector} is not rendered", missing=True)
    details, ok = [f"{a.selector} at x={box['x']:.0f} y={box['y']:.0f}"], True
    others = await _related(page, {"left_of": a.left_of, "right_of": a.right_of, "above": a.above, "below": a.below})
    if isinstance(others, str):
        return Check(False, f"{others} is not rendered", missing=True)
    for relation, (other, ob) in others.items():
        holds = {
            "left_of": box["x"] + box["width"] <= ob["x"] + 1,
            "right_of": box["x"] >= ob["x"] + ob["width"] - 1,
            "above": box["y"] + box["height"] <= ob["y"] + 1,
            "below": box["y"] >= ob["y"] + ob["height"] - 1,
        }[relation]
        ok &= holds
        details.append(f"{relation} {other}: {holds}")
    if a.within_viewport is not None:
        width = page.viewport_size["width"]
        inside = box["x"] >= -1 and box["x"] + box["width"] <= width + 1
        ok &= inside == a.within_viewport
        details.append(f"within viewport: {inside}")
    return Check(ok, "; ".join(details))


def _check_source(a: P.Source, session: EvidenceSession) -> Check:
    files = [
        p
        for p in session.workspace.rglob("*")
        if p.is_file()
        and not {"node_modules", "dist", "_attachments"} & set(p.relative_to(session.workspace).parts)
        and fnmatch.fnmatch(str(p.relative_to(session.workspace)), a.glob)
    ]
    if not files:
        return Check(False, f"no source file matches {a.glob!r}", missing=True)
    text = "\n".join(p.read_text(errors="replace") for p in files)
    if a.contains is not None:
        return Check(a.contains in text, f"{len(files)} files matching {a.glob!r} searched for {a.contains!r}")
    if a.matches is not None:
        return Check(re.search(a.matches, text, re.M) is not None, f"{a.glob!r} matched against /{a.matches}/")
    assert a.absent is not None  # the schema requires exactly one of contains, matches, absent
    return Check(a.absent not in text, f"{a.glob!r} checked for absence of {a.absent!r}")


def failure_category(criterion: Criterion, checks: list[Check]) -> str:
    if criterion.preserve:
        return "regressed"
    return "missing" if any(c.missing for c in checks if not c.ok) else "wrong"
