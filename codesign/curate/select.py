"""Selection and consolidation: sessions whose eligible queries add up to ``question_total_score`` ≥ 10 go on;
in each, at most three queries with ``r(q) > 1`` — ``r(q)`` being ``s(q)`` over the mean ``s`` of the corpus's
eligible queries (above the corpus's average) — are selected, the highest first; then the selected queries of a
session are consolidated into chronological intervals. One interval is one draft task: its last selected query is
the request, the session's queries before it in the interval (with the assistant's answers) its history.

The paper names the thresholds (``question_total_score ≥ 10``, three per session, ``r(q) > 1``) but not the
formulas behind them; these are codesign's, and every one is a setting (docs/curation.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from codesign.curate.records import Query


@dataclass(frozen=True)
class SelectSettings:
    min_session_score: float = 10  # question_total_score of a session: the sum of s(q) over its eligible queries
    min_relative_score: float = 1.0  # r(q) must exceed this
    max_per_session: int = 3  # queries selected per session at most
    max_gap: int = 2  # selected queries at most this many queries apart share one interval
    max_history: int = 6  # queries of history an interval carries at most (the oldest dropped first)


@dataclass
class Interval:
    session: str
    request: Query
    history: list[Query]  # earlier queries of the session in the interval, oldest first
    selected: list[str]  # the selected query ids it consolidates

    @property
    def id(self) -> str:
        return f"{self.session}:{self.history[0].turn if self.history else self.request.turn}-{self.request.turn}"


def relative_scores(totals: dict[str, int]) -> dict[str, float]:
    """r(q) for each eligible query id: its s(q) over the mean of all of them."""
    if not totals:
        return {}
    mean = sum(totals.values()) / len(totals)
    return {qid: round(value / mean, 4) for qid, value in totals.items()}


def session_totals(totals: dict[str, int], queries: Sequence[Query]) -> dict[str, int]:
    by_session: dict[str, int] = defaultdict(int)
    for q in queries:
        if q.id in totals:
            by_session[q.session] += totals[q.id]
    return dict(by_session)


def select(totals: dict[str, int], queries: Sequence[Query], s: SelectSettings) -> dict[str, str]:
    """Why each eligible query was or was not selected: ``"selected"`` or the reason."""
    relative = relative_scores(totals)
    sessions = session_totals(totals, queries)
    verdict: dict[str, str] = {}
    ranked: dict[str, list[Query]] = defaultdict(list)
    for q in queries:
        if q.id not in totals:
            continue
        if sessions[q.session] < s.min_session_score:
            verdict[q.id] = f"session score < {s.min_session_score:g}: {sessions[q.session]}"
        elif relative[q.id] <= s.min_relative_score:
            verdict[q.id] = f"r(q) ≤ {s.min_relative_score:g}: {relative[q.id]:.2f}"
        else:
            ranked[q.session].append(q)
    for candidates in ranked.values():
        candidates.sort(key=lambda q: (-totals[q.id], q.turn))
        for rank, q in enumerate(candidates):
            keep = rank < s.max_per_session
            verdict[q.id] = "selected" if keep else f"the session's {s.max_per_session} best were taken"
    return verdict


def consolidate(selected: Sequence[Query], sessions: dict[str, list[Query]], s: SelectSettings) -> list[Interval]:
    """Selected queries grouped per session into chronological intervals (``max_gap`` apart at most)."""
    by_session: dict[str, list[Query]] = defaultdict(list)
    for q in selected:
        by_session[q.session].append(q)
    intervals = []
    for session, chosen in sorted(by_session.items()):
        chosen.sort(key=lambda q: q.turn)
        groups: list[list[Query]] = [[chosen[0]]]
        for q in chosen[1:]:
            if q.turn - groups[-1][-1].turn <= s.max_gap:
                groups[-1].append(q)
            else:
                groups.append([q])
        turns = sessions[session]
        for group in groups:
            first, last = group[0].turn, group[-1].turn
            history = [t for t in turns if first <= t.turn < last][-s.max_history :] if s.max_history else []
            intervals.append(Interval(session, group[-1], history, [q.id for q in group]))
    return intervals
