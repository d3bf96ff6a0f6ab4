"""A seeded synthetic corpus of coding sessions in codesign's plain JSONL format, and exactly what was planted in
it: exact and near duplicates, reformulations, rollbacks, blocked, non-actionable, unbounded and non-editing
turns. Curation's counts are then checked against the plants by id, not against a count it produced itself.

Why every count can be exact:

- every query's words are drawn fresh from a large vocabulary of made-up words that no rule of curation
  recognizes, so two unplanted queries share little more than a template word or two (tokenized Jaccard far
  below the 0.5 of a reformulation, let alone the 0.8 of a near duplicate) and trip no filter or signal;
- the plants are mutually exclusive: one query is one plant at most. Duplicates are otherwise clean (filters
  never see them), filtered turns are otherwise unique (dedupe never removes them), and the queries whose
  failure signals are planted (and the later queries carrying them) are clean, eligible and used once;
- every file content in a session is a new version (a counter), so only a planted rollback ever restores one;
- a correction ("No, ...") flags every query up to three turns before it, so one is only planted at turn 1;
- the generator checks its promises before it returns, with its own tokenizer, not curation's functions: every
  planted pair's Jaccard, each session's signals by the documented rules, every exact key, and the Jaccard of
  every pair of a sample of queries (below 0.5 unless a plant relates them).
"""

from __future__ import annotations

import itertools
import json
import random
import re
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from codesign.curate import filters, scores

TOKEN = re.compile(r"\w+")  # the tokenization of near-dedupe: words, case-folded
NEAR = 0.8  # the paper's near-duplicate threshold
RESTATES = 0.5  # a later query this similar restates an earlier one (ScoreSettings.reformulation_jaccard)
WINDOW = 3  # ... within this many queries (ScoreSettings.reformulation_window)
MAX_WORDS = 600  # a longer request is unbounded (FilterSettings.max_words)
UNPLANTED_MAX = 0.5  # the bound checked on a sample for pairs nothing planted relates: below every threshold
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

# Every rule of curation that reads words: none may recognize a word of the vocabulary.
RULES = [filters.ACKNOWLEDGEMENTS, filters.QUESTION_START, filters.EDIT_VERB, filters.UNBOUNDED, scores.COSMETIC,
         scores.VISUAL, scores.INTERACTIVE, scores.EDGE_CASES, scores.CORRECTION, scores.UNDO,
         *scores.EDIT_KINDS.values()]  # fmt: skip

VERBS = ["Add", "Make", "Change", "Move", "Update", "Replace", "Rename", "Align", "Hide", "Show", "Resize",
         "Restyle", "Swap", "Center", "Enable", "Insert", "Adjust", "Convert", "Split", "Merge"]  # fmt: skip
UI_WORDS = ["header", "footer", "button", "card", "sidebar", "navbar", "banner", "logo", "title", "heading", "price",
            "label", "badge", "avatar", "tooltip", "gallery", "carousel", "table", "chart", "counter", "checkout",
            "cart", "login", "menu", "modal", "dropdown", "form", "input", "search", "filter", "grid", "column",
            "layout", "color", "font", "padding", "margin", "border", "shadow", "spacing"]  # fmt: skip
# Each of these is usable once in a corpus: a second would be a duplicate of the first.
ACKNOWLEDGEMENT_TEXTS = ["thanks", "Thank you!", "ok", "okay", "great", "perfect!", "nice", "cool", "lgtm",
                         "looks good", "sounds good", "sure", "yes", "yep", "continue", "go on", "go ahead", "proceed",
                         "done", "next", "keep going", "retry", "thx", "ty"]  # fmt: skip
SLASH_COMMANDS = ["/compact", "/clear", "/init", "/review", "/cost", "/model", "/help", "/status", "/memory",
                  "/config", "/doctor", "/permissions"]  # fmt: skip
QUESTIONS = ["What does the {ui} {words} do?", "Why is the {ui} {words} like that?", "How does {words} work?",
             "Where is the {ui} {words} defined?", "Which {ui} holds {words}?", "Is the {ui} {words} ready?",
             "Can you explain {words} in the {ui}?"]  # fmt: skip
UNBOUNDED = ["Build me an entire app from scratch for {words}", "Rewrite the whole codebase around {words}",
             "Build a clone of airbnb with {words}", "Make it production-ready with {words}",
             "Implement all the features of {words}", "Start over from scratch and build {words}"]  # fmt: skip
RESTATEMENTS = ["Please", "I meant:", "Let me rephrase:", "To be clear,"]
CORRECTIONS = ["No,", "Still wrong:", "That's not what I asked.", "It's still broken,", "Doesn't work:",
               "You broke the {ui}."]  # fmt: skip
SESSIONS_PER_FILE = 1000


def token_set(text: str) -> frozenset[str]:
    return frozenset(TOKEN.findall(text.casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def exact_key(text: str) -> str:
    """What makes two requests the same one: their words, case and spacing aside."""
    return " ".join(text.strip().casefold().split())


@dataclass(frozen=True)
class Fractions:
    """The chance that a query is each plant (the rest are clean). A plant that needs a partner — an original
    in an earlier session for a duplicate, an earlier clean query of the session to restate or roll back — is a
    clean query when there is none, so the counts in :class:`Planted` are what was realized, not these fractions
    times the size."""

    exact: float = 0.03
    near: float = 0.03
    blocked: float = 0.02
    non_actionable: float = 0.02
    unbounded: float = 0.02
    non_editing: float = 0.02
    reformulated: float = 0.04
    rolled_back: float = 0.03

    def __post_init__(self) -> None:
        shares = [getattr(self, f.name) for f in fields(self)]
        if any(not 0 <= s <= 1 for s in shares) or sum(shares) > 1:
            raise ValueError(f"fractions must each be in [0, 1] and add up to 1 at most: {self}")


@dataclass
class Planted:
    """What the corpus holds, by query id (``session:turn``): every id is in ``ids``, and in at most one of the
    sets of plants (the carriers of reformulations and rollbacks and the originals of duplicates are clean)."""

    folder: Path
    files: list[Path] = field(default_factory=list)
    sessions: int = 0
    ids: list[str] = field(default_factory=list)  # every query, in file order
    exact: set[str] = field(default_factory=set)
    near: set[str] = field(default_factory=set)
    duplicate_of: dict[str, str] = field(default_factory=dict)  # each duplicate's original (an earlier query)
    similarity: dict[str, float] = field(default_factory=dict)  # each near duplicate's Jaccard with its original
    blocked: set[str] = field(default_factory=set)
    non_actionable: set[str] = field(default_factory=set)
    unbounded: set[str] = field(default_factory=set)
    non_editing: set[str] = field(default_factory=set)
    reformulated: set[str] = field(default_factory=set)  # restated (or corrected) by a later query of the session
    rolled_back: set[str] = field(default_factory=set)  # a file it changed is put back by a later query's edit
    restated_by: dict[str, str] = field(default_factory=dict)  # reformulated query -> the later query
    restated_similarity: dict[str, float] = field(default_factory=dict)  # its Jaccard with it (0.5 ≤ J < 0.8)
    undone_by: dict[str, str] = field(default_factory=dict)  # rolled-back query -> the later query
    max_unplanted_jaccard: float = 0.0  # the highest Jaccard of an unplanted pair in the checked sample

    @property
    def queries(self) -> int:
        return len(self.ids)

    @property
    def filtered(self) -> dict[str, set[str]]:
        """Each filter's rejections, in the order curation applies them."""
        return {"blocked": self.blocked, "non_actionable": self.non_actionable, "unbounded": self.unbounded,
                "non_editing": self.non_editing}  # fmt: skip

    @property
    def eligible(self) -> set[str]:
        return set(self.ids).difference(self.exact, self.near, *self.filtered.values())


def vocabulary(rng: random.Random, size: int) -> list[str]:
    """Made-up words of three or four syllables that none of curation's rules recognizes."""
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    words: set[str] = set()
    for _ in range(size * 20):
        if len(words) == size:
            return sorted(words)
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(3, 4)))
        if not any(rule.search(word) for rule in RULES):
            words.add(word)
    raise RuntimeError(f"only {len(words)} of {size} made-up words pass curation's rules: has a rule changed?")


@dataclass
class _Turn:
    id: str
    text: str
    role: str  # clean | carrier | a plant's name
    edits: list[dict[str, str]]
    blocked: str | None = None
    restates: str | None = None  # the id of the query a carrier restates (or corrects)
    undoes: str | None = None  # the id of the query a carrier rolls back


class _Generator:
    def __init__(self, rng: random.Random, words: list[str], fractions: Fractions, planted: Planted):
        self.rng, self.words, self.planted = rng, words, planted
        self.made_up = set(words)
        self.short: set[frozenset[str]] = set()  # two-word requests so far: never the same two words again
        self.roles = [(f.name, getattr(fractions, f.name)) for f in fields(fractions)]
        self.originals: list[_Turn] = []  # unused clean queries of finished sessions, for duplicates
        self.acknowledgements = list(ACKNOWLEDGEMENT_TEXTS)
        self.slash_commands = list(SLASH_COMMANDS)
        self.keys: dict[str, str] = {}  # exact key -> the first query that has it

    def fresh(self, n: int) -> str:
        return " ".join(self.rng.sample(self.words, n))

    def request(self) -> str:
        """A clean revision request: an edit verb, two UI words, and 16–28 words no rule knows."""
        ui = self.rng.sample(UI_WORDS, 2)
        n = self.rng.randint(16, 28)
        k = self.rng.randint(4, n - 4)
        return f"{self.rng.choice(VERBS)} the {ui[0]} {self.fresh(k)} and {ui[1]} {self.fresh(n - k)}"

    def role(self) -> str:
        roll = self.rng.random()
        for name, share in self.roles:
            if roll < share:
                return name
            roll -= share
        return "clean"

    def session(self, index: int, turns: int) -> list[dict[str, Any]]:
        session = f"s{index:06d}"
        ui = self.rng.choice(UI_WORDS).capitalize()
        contents: dict[str, str] = {}
        versions: dict[str, int] = {}
        paths = ["src/App.tsx", f"src/components/{ui}.tsx", "src/styles.css"]
        for path in paths:
            versions[path] = 0
            contents[path] = self.content(session, path, 0)
        done: list[_Turn] = []
        free: list[_Turn] = []  # clean queries of this session with edits, in no plant yet

        def edit(path: str, after: str | None = None) -> dict[str, str]:
            if after is None:
                versions[path] += 1
                after = self.content(session, path, versions[path])
            change = {"path": path, "before": contents[path], "after": after}
            contents[path] = after
            return change

        def normal_edits() -> list[dict[str, str]]:
            return [edit(p) for p in self.rng.sample(paths, self.rng.choice([1, 1, 2]))]

        for t in range(turns):
            qid = f"{session}:{t}"
            role = self.role()
            turn: _Turn | None = None
            if role in ("exact", "near") and self.originals:
                original = self.originals.pop(self.rng.randrange(len(self.originals)))
                text = self.exact_copy(original.text) if role == "exact" else self.near_copy(qid, original.text)
                turn = _Turn(qid, text, role, normal_edits())
                self.planted.duplicate_of[qid] = original.id
            elif role == "blocked":  # whatever was asked (the filters' order decides): a request, mostly
                kind = self.rng.random()
                text = self.request() if kind < 0.7 else self.question() if kind < 0.85 else self.unbounded()
                turn = _Turn(qid, text, role, [], blocked="interrupted")
            elif role == "non_actionable":
                text = self.non_actionable()
                turn = _Turn(qid, text, role, [])
            elif role == "unbounded":
                turn = _Turn(qid, self.unbounded(), role, normal_edits())
            elif role == "non_editing":
                turn = _Turn(qid, self.request(), role, [])
            elif role == "reformulated":
                targets = [q for q in free if t - int(q.id.rsplit(":", 1)[1]) <= WINDOW]
                if targets:
                    target = self.rng.choice(targets)
                    if t == 1 and self.rng.random() < 0.4:  # a correction flags all three before it: turn 1 only
                        prefix = self.rng.choice(CORRECTIONS).format(ui=self.rng.choice(UI_WORDS))
                        request = self.request()
                        text = f"{prefix} {request[0].lower()}{request[1:]}"
                    else:
                        text = self.restatement(target)
                    turn = _Turn(qid, text, "carrier", normal_edits(), restates=target.id)
                    free.remove(target)
                    self.planted.reformulated.add(target.id)
                    self.planted.restated_by[target.id] = qid
            elif role == "rolled_back" and free:
                target = self.rng.choice(free)
                path = target.edits[0]["path"]
                back = edit(path, after=target.edits[0]["before"])
                others = [edit(p) for p in paths if p != path and self.rng.random() < 0.3]
                turn = _Turn(qid, self.request(), "carrier", [back, *others], undoes=target.id)
                free.remove(target)
                self.planted.rolled_back.add(target.id)
                self.planted.undone_by[target.id] = qid
            if turn is None:  # clean, or a plant with no partner available
                turn = _Turn(qid, self.request(), "clean", normal_edits())
                free.append(turn)
            if turn.role in ("exact", "near", "blocked", "non_actionable", "unbounded", "non_editing"):
                getattr(self.planted, turn.role).add(qid)
            done.append(turn)

        self.check_session(done)
        self.originals += free
        records = []
        for t, turn in enumerate(done):
            stamp = START + timedelta(minutes=index * (turns + 1) + t)
            record: dict[str, Any] = {"session": session, "turn": t, "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                      "text": turn.text, "edits": turn.edits}  # fmt: skip
            if turn.blocked:
                record["blocked"] = turn.blocked
            elif turn.edits:
                record["reply"] = f"Done: changed {', '.join(e['path'] for e in turn.edits)}."
            records.append(record)
            self.planted.ids.append(turn.id)
            self.check_key(turn)
        return records

    @staticmethod
    def content(session: str, path: str, version: int) -> str:
        """A file's content at a version: never the same twice, so only a planted rollback restores one."""
        name = path.rsplit("/", 1)[-1].split(".")[0]
        if path.endswith(".css"):
            return f"/* {session} version {version} */\n.{name}-{version} {{\n  padding: {version}px;\n}}\n"
        return (f"// {session} {path} version {version}\nexport const {name} = () => (\n"
                f"  <div className=\"{name.lower()}-{version}\">{name} {version}</div>\n);\n")  # fmt: skip

    def exact_copy(self, text: str) -> str:
        """The same request, pasted again: as is, in other case, or spaced otherwise."""
        how = self.rng.randrange(4)
        if how == 1:
            return text.upper()
        if how == 2:
            return text.replace(" ", "  ", 3)
        if how == 3:
            words = text.split(" ")
            cut = self.rng.randrange(1, len(words))
            return " ".join(words[:cut]) + "\n" + " ".join(words[cut:])
        return text

    def near_copy(self, qid: str, text: str) -> str:
        """The request with a few words replaced, dropped or added: 0.8 ≤ Jaccard < 1 with it (some exactly 0.8,
        the threshold itself)."""
        original = token_set(text)
        words = text.split(" ")
        body = [i for i in range(len(words)) if words[i] in self.made_up]  # the made-up words
        n = len(original)
        for _ in range(50):
            how = self.rng.randrange(4)
            copy = list(words)
            if how == 0:  # one or two words replaced: (n - k) / (n + k)
                for i in self.rng.sample(body, self.rng.choice([1, 2])):
                    copy[i] = self.fresh(1)
            elif how == 1:  # up to a fifth of the words dropped: (n - k) / n
                dropped = set(self.rng.sample(body, self.rng.randint(1, n // 5)))
                copy = [w for i, w in enumerate(copy) if i not in dropped]
            elif how == 2:  # up to a quarter more words: n / (n + k)
                copy += self.fresh(self.rng.randint(1, n // 4)).split()
            elif n % 5 == 0:  # exactly the threshold: a fifth dropped
                dropped = set(self.rng.sample(body, n // 5))
                copy = [w for i, w in enumerate(copy) if i not in dropped]
            elif n % 4 == 0:  # exactly the threshold: a quarter more
                copy += self.fresh(n // 4).split()
            else:
                continue
            similarity = jaccard(original, token_set(" ".join(copy)))
            if NEAR <= similarity < 1:
                self.planted.similarity[qid] = similarity
                return " ".join(copy)
        raise AssertionError(f"no near copy of {text!r}")  # unreachable: a one-word replacement always fits

    def restatement(self, target: _Turn) -> str:
        """The target request said again, in part: 0.5 ≤ Jaccard < 0.8 (a reformulation, not a near duplicate;
        some just under 0.8)."""
        original = token_set(target.text)
        words = target.text.split(" ")
        body = [i for i in range(len(words)) if words[i] in self.made_up]
        for _ in range(50):
            copy = list(words)
            for i in self.rng.sample(body, self.rng.randint(2, len(body) // 2)):
                copy[i] = self.fresh(1)
            text = f"{self.rng.choice(RESTATEMENTS)} {copy[0].lower()} {' '.join(copy[1:])}"
            similarity = jaccard(original, token_set(text))
            if RESTATES <= similarity < NEAR:
                self.planted.restated_similarity[target.id] = similarity
                return text
        raise AssertionError(f"no restatement of {target.text!r}")

    def non_actionable(self) -> str:
        """An acknowledgement or a slash command (each once a corpus), a question that asks for no change, or
        fewer than three words."""
        how = self.rng.randrange(4)
        if how == 0 and self.acknowledgements:
            return self.acknowledgements.pop(self.rng.randrange(len(self.acknowledgements)))
        if how == 1 and self.slash_commands:
            return self.slash_commands.pop(self.rng.randrange(len(self.slash_commands)))
        if how == 3:
            while (pair := frozenset(self.rng.sample(self.words, 2))) in self.short:
                pass
            self.short.add(pair)
            return " ".join(sorted(pair))
        return self.question()

    def question(self) -> str:
        template = self.rng.choice(QUESTIONS)
        return template.format(ui=self.rng.choice(UI_WORDS), words=self.fresh(self.rng.randint(10, 16)))

    def unbounded(self) -> str:
        """A request for everything: in the words of the unbounded rule, or longer than any revision."""
        if self.rng.random() < 0.1:
            return f"Update the {self.rng.choice(UI_WORDS)} so that {self.fresh(self.rng.randint(610, 700))}"
        return self.rng.choice(UNBOUNDED).format(words=self.fresh(self.rng.randint(12, 20)))

    def check_key(self, turn: _Turn) -> None:
        """Only a planted exact duplicate shares its exact key, and with its original."""
        key = exact_key(turn.text)
        first = self.keys.setdefault(key, turn.id)
        if first != turn.id and (turn.role != "exact" or self.planted.duplicate_of[turn.id] != first):
            raise AssertionError(f"{turn.id} repeats {first} unplanned: {turn.text[:80]!r}")
        if turn.role == "exact" and first == turn.id:
            raise AssertionError(f"exact duplicate {turn.id} matches nothing earlier")

    def check_session(self, turns: list[_Turn]) -> None:
        """The session's failure signals, by the documented rules, are exactly those planted; every turn is what
        its role says (independent of curation's own functions, but for its published word patterns)."""
        for i, q in enumerate(turns):
            mine = token_set(q.text)
            later = turns[i + 1 : i + 1 + WINDOW]
            restated = any(scores.CORRECTION.match(n.text) or jaccard(mine, token_set(n.text)) >= RESTATES
                           for n in later)  # fmt: skip
            befores = {e["path"]: e["before"] for e in reversed(q.edits)}
            undone = bool(turns[i + 1 : i + 2] and scores.UNDO.search(turns[i + 1].text)) or any(
                e["path"] in befores and e["after"] == befores[e["path"]] for n in turns[i + 1 :] for e in n.edits
            )
            if restated != (q.id in self.planted.reformulated) or undone != (q.id in self.planted.rolled_back):
                raise AssertionError(f"{q.id}: restated {restated}, rolled back {undone}, not as planted")
            words = q.text.split()
            if q.role in ("clean", "carrier", "exact", "near", "non_editing") and (
                not filters.EDIT_VERB.search(q.text) or filters.UNBOUNDED.search(q.text) or scores.UNDO.search(q.text)
            ):
                raise AssertionError(f"{q.id} is not a clean revision request: {q.text[:80]!r}")
            if q.role in ("clean", "exact", "near") and scores.CORRECTION.match(q.text):
                raise AssertionError(f"{q.id} reads as a correction: {q.text[:80]!r}")
            if q.role == "non_actionable" and not (
                len(words) < 3
                or filters.ACKNOWLEDGEMENTS.match(q.text)
                or q.text.startswith("/")
                or (filters.QUESTION_START.match(q.text) and not filters.EDIT_VERB.search(q.text))
            ):
                raise AssertionError(f"{q.id} is actionable: {q.text!r}")
            if q.role == "unbounded" and not (len(words) > MAX_WORDS or filters.UNBOUNDED.search(q.text)):
                raise AssertionError(f"{q.id} is bounded: {q.text[:80]!r}")
            if q.role in ("clean", "carrier", "exact", "near", "unbounded") and not q.edits:
                raise AssertionError(f"{q.id} edits nothing")


def generate(folder: Path, sessions: int = 1000, queries_per_session: int = 4, fractions: Fractions | None = None,
             seed: int = 0, vocabulary_size: int = 30000, sample: int = 600) -> Planted:  # fmt: skip
    """Write ``folder/sessions-NNN.jsonl`` (a thousand sessions a file) and say what was planted. Every planted
    pair is checked, and ``sample`` queries have the Jaccard of every pair of them checked: below 0.5 unless a
    plant relates them."""
    if queries_per_session < 1 or sessions < 0:
        raise ValueError("sessions ≥ 0 and queries_per_session ≥ 1")
    rng = random.Random(seed)
    planted = Planted(folder, sessions=sessions)
    gen = _Generator(rng, vocabulary(rng, vocabulary_size), fractions or Fractions(), planted)
    folder.mkdir(parents=True, exist_ok=True)
    texts: dict[str, str] = {}
    for start in range(0, sessions, SESSIONS_PER_FILE):
        path = folder / f"sessions-{start // SESSIONS_PER_FILE:03d}.jsonl"
        with open(path, "w") as f:
            for index in range(start, min(sessions, start + SESSIONS_PER_FILE)):
                for record in gen.session(index, queries_per_session):
                    texts[f"{record['session']}:{record['turn']}"] = record["text"]
                    f.write(json.dumps(record) + "\n")
        planted.files.append(path)
    planted.max_unplanted_jaccard = _check_pairs(planted, texts, rng, sample)
    return planted


def _check_pairs(planted: Planted, texts: dict[str, str], rng: random.Random, size: int) -> float:
    """Every planted pair in its range (an exact duplicate: the same exact key; a near one: 0.8 ≤ Jaccard < 1; a
    restatement: 0.5 ≤ Jaccard < 0.8); then every pair of a sample that no plant relates below 0.5. Returns the
    sample's highest Jaccard."""
    ranges: dict[frozenset[str], tuple[float, float]] = {}  # planted pairs: low ≤ Jaccard < high
    for copy, original in planted.duplicate_of.items():
        if copy in planted.exact:
            if exact_key(texts[copy]) != exact_key(texts[original]):
                raise AssertionError(f"exact duplicate {copy} differs from {original}")
            ranges[frozenset((copy, original))] = (1.0, 1.1)
        else:
            ranges[frozenset((copy, original))] = (NEAR, 1.0)
    for target, carrier in planted.restated_by.items():
        if not scores.CORRECTION.match(texts[carrier]):  # a correction is in other words
            ranges[frozenset((target, carrier))] = (RESTATES, NEAR)
    for pair, (low, high) in ranges.items():
        a, b = sorted(pair)
        if not low <= jaccard(token_set(texts[a]), token_set(texts[b])) < high:
            raise AssertionError(f"planted pair {a}, {b} not in [{low}, {high}): {texts[a]!r} {texts[b]!r}")
    ids = set(rng.sample(planted.ids, min(size, len(planted.ids))))
    sets = {qid: token_set(texts[qid]) for qid in sorted(ids)}
    highest = 0.0
    for (a, sa), (b, sb) in itertools.combinations(sets.items(), 2):
        if frozenset((a, b)) in ranges:
            continue
        similarity = jaccard(sa, sb)
        if similarity >= UNPLANTED_MAX:
            raise AssertionError(f"unplanted pair {a}, {b}: Jaccard {similarity:.3f}: {texts[a]!r} {texts[b]!r}")
        highest = max(highest, similarity)
    return highest
