"""The deterministic filters: a query is rejected when its turn was blocked, when it asks for something
unbounded, when it is not actionable, or when the session made no edit for it. Each rule returns its reason
(None: the query passes), so the candidates table and the funnel say why."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from codesign.curate.records import Query

ACKNOWLEDGEMENTS = re.compile(
    r"^(ok(ay)?|thanks?( you)?|thx|ty|great|perfect|nice|cool|good|yes|yep|no|nope|continue|go on|go ahead|proceed|"
    r"done|lgtm|looks good|sounds good|sure|next|keep going|retry|try again)[\s.!?]*$",
    re.I,
)
QUESTION_START = re.compile(r"^(what|why|how|where|when|which|who|is|are|does|do|can you explain|explain)\b", re.I)
EDIT_VERB = re.compile(
    r"\b(add|make|change|update|fix|remove|delete|replace|move|rename|create|implement|show|hide|use|set|turn|"
    r"put|align|center|resize|style|restyle|refactor|convert|support|allow|let|redesign|match|swap|insert|split|"
    r"merge|enable|disable|increase|decrease|reduce|improve|adjust|modify|edit|wire|connect|display)\b",
    re.I,
)
UNBOUNDED = re.compile(
    r"\b(from scratch|build (me )?(an? )?(entire|whole|complete|full|new) (app|application|website|site|project|"
    r"platform|system)|clone (of )?(facebook|twitter|airbnb|amazon|netflix|youtube|instagram|uber|spotify)|"
    r"(rewrite|redo|rebuild) (the )?(entire|whole) (app|application|site|project|codebase)|everything you can|"
    r"make it production[- ]ready|all (of )?the features)\b",
    re.I,
)


@dataclass(frozen=True)
class FilterSettings:
    min_words: int = 3  # fewer words is rarely a revision request a task can carry ("fix it")
    max_words: int = 600  # a longer request is a specification, not a revision (unbounded)
    require_edits: bool = True  # non-editing turns out (only where the source says what was edited)
    extra_unbounded: list[str] = field(default_factory=list)  # more regular expressions of unbounded asks


def blocked(q: Query, s: FilterSettings) -> str | None:
    return f"blocked: {q.blocked}" if q.blocked else None


def non_actionable(q: Query, s: FilterSettings) -> str | None:
    words = q.text.split()
    if not words and not q.attachments:
        return "non-actionable: empty request"
    if ACKNOWLEDGEMENTS.match(q.text.strip()):
        return f"non-actionable: an acknowledgement ({q.text.strip()[:40]!r})"
    if q.text.lstrip().startswith("/"):
        return "non-actionable: a slash command"
    if len(words) < s.min_words and not q.attachments:
        return f"non-actionable: {len(words)} word(s), fewer than {s.min_words}"
    if QUESTION_START.match(q.text.strip()) and not EDIT_VERB.search(q.text):
        return "non-actionable: a question, no change asked"
    return None


def unbounded(q: Query, s: FilterSettings) -> str | None:
    words = len(q.text.split())
    if words > s.max_words:
        return f"unbounded: {words} words, more than {s.max_words}"
    match = UNBOUNDED.search(q.text) or next((m for p in s.extra_unbounded if (m := re.search(p, q.text, re.I))), None)
    return f"unbounded: asks for {match.group(0)!r}" if match else None


def non_editing(q: Query, s: FilterSettings) -> str | None:
    if not s.require_edits or q.edits is None:  # the source does not say: not judged here
        return None
    return None if q.edits else "non-editing: the session changed no file for it"


# In the order the funnel counts them; a query is rejected by the first that gives a reason.
FILTERS: list[tuple[str, Callable[[Query, FilterSettings], str | None]]] = [
    ("blocked", blocked),
    ("non_actionable", non_actionable),
    ("unbounded", unbounded),
    ("non_editing", non_editing),
]


def first_rejection(q: Query, s: FilterSettings) -> tuple[str, str] | None:
    for name, rule in FILTERS:
        reason = rule(q, s)
        if reason:
            return name, reason
    return None
