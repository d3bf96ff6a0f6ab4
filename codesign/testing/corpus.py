"""A generated corpus of coding sessions in codesign's plain format, with what was planted known exactly:
exact and near duplicates, reformulations, rollbacks, blocked, unbounded, non-actionable and non-editing
turns. Curation's counts are checked against it (tests/test_curate_corpus.py, benchmarks/curate.py).

Every query's words are drawn fresh from a large vocabulary of made-up words that no rule of curation
recognizes, so unplanted queries are far apart (tokenized Jaccard below 0.2) and match no filter or signal;
each plant changes exactly one thing, so each count is exact."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from codesign.curate import filters, scores

WORDS_PER_QUERY = 12
RULES = [filters.ACKNOWLEDGEMENTS, filters.QUESTION_START, filters.EDIT_VERB, filters.UNBOUNDED, scores.CORRECTION,
         scores.UNDO]  # fmt: skip


@dataclass
class Planted:
    """The ids (``session:turn``) of what was planted, by kind."""

    queries: int = 0
    sessions: int = 0
    exact: set[str] = field(default_factory=set)
    near: set[str] = field(default_factory=set)
    blocked: set[str] = field(default_factory=set)
    non_actionable: set[str] = field(default_factory=set)
    unbounded: set[str] = field(default_factory=set)
    non_editing: set[str] = field(default_factory=set)
    reformulated: set[str] = field(default_factory=set)
    rolled_back: set[str] = field(default_factory=set)


def vocabulary(rng: random.Random, size: int) -> list[str]:
    """Made-up words of 6–9 letters that none of curation's rules recognizes."""
    letters = "bcdfghjklmnprstvz"
    vowels = "aeiou"
    words: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(letters) + rng.choice(vowels) for _ in range(rng.randint(3, 4)))
        if not any(rule.search(word) for rule in RULES):
            words.add(word)
    return sorted(words)


class _Writer:
    def __init__(self, rng: random.Random, words: list[str]):
        self.rng, self.words = rng, words
        self.lines: list[str] = []
        self.planted = Planted()

    def fresh(self, n: int = WORDS_PER_QUERY) -> list[str]:
        return self.rng.sample(self.words, n)

    def add(self, session: str, turn: int, day: int, text: str, edits: list[dict[str, str]] | None = None,
            **extra: object) -> str:  # fmt: skip
        stamp = f"2026-11-{day:02d}T10:{turn // 60:02d}:{turn % 60:02d}Z"
        record = {"session": session, "turn": turn, "timestamp": stamp, "text": text,
                  "edits": edits if edits is not None else [self.edit(session, turn)], **extra}  # fmt: skip
        self.lines.append(json.dumps(record))
        self.planted.queries += 1
        return f"{session}:{turn}"

    @staticmethod
    def edit(
        session: str, turn: int, before: str | None = None, after: str | None = None, path: str = ""
    ) -> dict[str, str]:
        path = path or f"src/{session}-{turn}.html"
        return {
            "path": path,
            "before": before or f"<p>{session} {turn}</p>\n",
            "after": after or f"<p>{session} {turn}!</p>\n",
        }


def generate(folder: Path, sessions: int = 1000, queries_per_session: int = 4, seed: int = 0,
             share: float = 0.04) -> Planted:  # fmt: skip
    """``folder/sessions.jsonl``; ``share`` of the sessions carries each kind of plant."""
    rng = random.Random(seed)
    w = _Writer(rng, vocabulary(rng, 20000))
    originals: list[str] = []  # texts of clean queries, for duplicates
    kinds = ["exact", "near", "blocked", "non_actionable", "unbounded", "non_editing", "reformulated", "rolled_back"]
    for s in range(sessions):
        session = f"s{s:06d}"
        w.planted.sessions += 1
        roll = rng.random()
        kind = kinds[int(roll / share)] if roll < share * len(kinds) else None
        if kind in ("exact", "near") and originals:  # a session of one query, later than its original
            words = rng.choice(originals).split()
            if kind == "near":  # one word of twelve changed: Jaccard 12/14 with the original
                words[rng.randrange(1, len(words))] = w.fresh(1)[0]
            qid = w.add(session, 0, 20, " ".join(words))
            (w.planted.exact if kind == "exact" else w.planted.near).add(qid)
            continue
        turns = max(2, queries_per_session)
        for t in range(turns):
            text = "Add " + " ".join(w.fresh())
            if t == 0 and kind == "blocked":
                w.planted.blocked.add(w.add(session, t, 10, text, blocked="interrupted by the user"))
            elif t == 0 and kind == "non_actionable":
                w.planted.non_actionable.add(w.add(session, t, 10, "What does " + " ".join(w.fresh(3)) + " mean?"))
            elif t == 0 and kind == "unbounded":
                w.planted.unbounded.add(
                    w.add(session, t, 10, "Build me an entire app from scratch with " + " ".join(w.fresh(6)))
                )
            elif t == 0 and kind == "non_editing":
                w.planted.non_editing.add(w.add(session, t, 10, text, edits=[]))
            elif (
                t == 1 and kind == "reformulated"
            ):  # the next query restates turn 0: corrects it, or repeats most of it
                previous = json.loads(w.lines[-1])["text"].split()
                again = [*previous[:9], *w.fresh(4)] if s % 2 else ["Still", *w.fresh(3), "add", *w.fresh()]
                w.planted.reformulated.add(f"{session}:0")
                w.add(session, t, 10, " ".join(again))
            elif t == 1 and kind == "rolled_back":  # turn 1 puts turn 0's file back as it was
                w.planted.rolled_back.add(f"{session}:0")
                first = json.loads(w.lines[-1])["edits"][0]
                back = w.edit(session, t, before=first["after"], after=first["before"], path=first["path"])
                w.add(session, t, 10, text, edits=[back])
            else:
                w.add(session, t, 10, text)
                if t == 0 and kind is None:
                    originals.append(text)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sessions.jsonl").write_text("\n".join(w.lines) + "\n")
    _check(w.planted, [json.loads(line)["text"] for line in w.lines])
    return w.planted


def _check(planted: Planted, texts: list[str]) -> None:
    """What the plants promise: nothing planted twice."""
    kinds = [planted.exact, planted.near, planted.blocked, planted.non_actionable, planted.unbounded,
             planted.non_editing, planted.reformulated, planted.rolled_back]  # fmt: skip
    every = [q for k in kinds for q in k]
    if len(every) != len(set(every)):
        raise AssertionError("a query was planted twice")
    if len(texts) != planted.queries:
        raise AssertionError("queries miscounted")


def token_set(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", text.casefold()))
