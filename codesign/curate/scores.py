"""Deterministic scores of a query (the paper's Appendix I), each from what the session shows:

- structural difficulty ``d`` 1–5: 1 a localized cosmetic edit … 4–5 a multi-component refactor with edge
  cases — from the files and lines the session changed for it, the kinds of change it asks for, and edge-case
  language;
- verifiability ``v`` 1–3: 1 a static diff, 2 a rendered visual property, 3 a dynamic post-interaction
  transition — from what the request asks to see or do;
- historical failure signals ``f`` 0–2: +1 when the user reformulated the request (a later query of the session
  says much the same, or corrects it), +1 when the change was rolled back (a later edit restores a file it
  changed, or the user asks to undo it).

``s(q) = d + v + f`` (2–10) ranks queries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from codesign.curate.dedupe import WORD, jaccard
from codesign.curate.records import Query

COSMETIC = re.compile(r"\b(colou?r|font|bold|italic|size|spacing|padding|margin|border|radius|shadow|background|"
                      r"icon|logo|text|wording|label|title|heading|typo|copy)\b", re.I)  # fmt: skip
VISUAL = re.compile(
    r"\b(colou?r|font|bold|italic|underline|layout|align|center|centre|grid|column|row|size|width|height|spacing|"
    r"padding|margin|border|shadow|background|image|logo|icon|style|look|theme|dark mode|responsive|mobile|mockup|"
    r"screenshot|design|position|visible|hidden|show|display)\b",
    re.I,
)
INTERACTIVE = re.compile(r"\b(click|clicking|clicked|hover|tap|press|submit|toggle|open|close|expand|collapse|drag|"
                         r"drop|type|typing|filter|sort|search|scroll|navigate|modal|dialog|dropdown|menu|tab|form|"
                         r"input|validate|validation|save|persist|undo|cart|checkout|login|when i|after i)\b",
                         re.I)  # fmt: skip
EDGE_CASES = re.compile(
    r"\b(edge case|empty|invalid|error|fails?|failure|limit|overflow|duplicate|negative|zero|offline|race|"
    r"concurrent|unless|otherwise|if the|when the|but only|except)\b",
    re.I,
)
EDIT_KINDS = {
    "component": re.compile(
        r"\b(component|button|card|header|footer|nav|navbar|sidebar|modal|section|widget|page)\b", re.I
    ),
    "route": re.compile(r"\b(route|page|link|url|navigate|navigation|redirect|tab)\b", re.I),
    "state": re.compile(r"\b(state|store|persist|remember|toggle|count|counter|selected|localstorage|session)\b", re.I),
    "data_flow": re.compile(
        r"\b(api|fetch|data|load|save|submit|request|response|json|sync|filter|sort|search)\b", re.I
    ),
    "content": re.compile(r"\b(text|copy|wording|title|heading|label|content|description|image|logo)\b", re.I),
}
CORRECTION = re.compile(r"^\s*(no[,.! ]|nope|still|that'?s (not|wrong)|it'?s (still|not)|not (working|what)|"
                        r"doesn'?t work|didn'?t work|wrong|try again|again[,.]|you (broke|didn'?t))", re.I)  # fmt: skip
UNDO = re.compile(r"\b(undo|revert|roll ?back|put (it|that) back|go back to|restore the (old|previous))\b", re.I)


@dataclass(frozen=True)
class ScoreSettings:
    reformulation_jaccard: float = 0.5  # a later query this similar restates the request
    reformulation_window: int = 3  # ... within this many queries
    cosmetic_max_lines: int = 10  # d = 1 at most: one file, this many changed lines, cosmetic words


@dataclass(frozen=True)
class Scores:
    difficulty: int
    verifiability: int
    reformulated: bool
    rolled_back: bool
    edit_types: tuple[str, ...]
    files: int
    lines: int

    @property
    def failure(self) -> int:
        return int(self.reformulated) + int(self.rolled_back)

    @property
    def total(self) -> int:
        return self.difficulty + self.verifiability + self.failure


def edit_types(text: str) -> tuple[str, ...]:
    return tuple(kind for kind, pattern in EDIT_KINDS.items() if pattern.search(text))


def difficulty(q: Query, kinds: Sequence[str]) -> tuple[int, int, int]:
    """(d, files, changed lines); from the request alone where the source lists no edits."""
    files = len({e.path for e in q.edits or []})
    lines = sum(e.changed_lines for e in q.edits or [])
    edge = bool(EDGE_CASES.search(q.text))
    if q.edits:
        if files <= 1 and lines <= 10 and COSMETIC.search(q.text) and len(kinds) <= 1:
            d = 1
        elif files <= 2 and lines <= 40:
            d = 2
        elif files <= 4 and lines <= 150:
            d = 3
        else:
            d = 4
    else:
        d = 1 if len(kinds) <= 1 and COSMETIC.search(q.text) else min(4, 1 + len(kinds))
    if edge and (d >= 3 or len(kinds) >= 3):
        d += 1
    return min(d, 5), files, lines


def verifiability(q: Query) -> int:
    if INTERACTIVE.search(q.text):
        return 3
    if VISUAL.search(q.text) or q.attachments:
        return 2
    return 1


def signals(session: Sequence[Query], index: int, s: ScoreSettings) -> tuple[bool, bool]:
    """(reformulated, rolled back) for the session's query at ``index`` (queries in session order)."""
    q = session[index]
    mine = frozenset(WORD.findall(q.text.casefold()))
    later = session[index + 1 : index + 1 + s.reformulation_window]
    # A correction ("No, …", "Still …") answers the query just before it; a restatement may come a few turns later.
    corrected = bool(later) and bool(CORRECTION.match(later[0].text))
    reformulated = corrected or any(
        mine and jaccard(mine, frozenset(WORD.findall(n.text.casefold()))) >= s.reformulation_jaccard for n in later
    )
    changed = {e.path: e.before for e in reversed(q.edits or [])}  # each file as it was before the query's edits
    rolled_back = any(UNDO.search(n.text) for n in session[index + 1 : index + 2]) or any(
        e.path in changed and e.after is not None and e.after == changed[e.path]
        for n in session[index + 1 :]
        for e in n.edits or []
    )
    return bool(reformulated), rolled_back


def score(session: Sequence[Query], index: int, s: ScoreSettings) -> Scores:
    q = session[index]
    kinds = edit_types(q.text)
    d, files, lines = difficulty(q, kinds)
    reformulated, rolled_back = signals(session, index, s)
    return Scores(d, verifiability(q), reformulated, rolled_back, kinds, files, lines)
