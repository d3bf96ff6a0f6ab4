"""Curation end to end: read → deduplicate → filter → normalize → score → select and consolidate → recover →
validate → draft. Every record that leaves is counted with its stage and reason (the funnel and the candidates
table); one bad record never stops the others."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from codesign.curate.dedupe import exact_duplicates, near_duplicates
from codesign.curate.drafts import Draft, write_draft
from codesign.curate.filters import FILTERS, FilterSettings
from codesign.curate.funnel import Funnel
from codesign.curate.normalize import Packaged, normalized_request, package
from codesign.curate.readers.claude_code import read_claude_code
from codesign.curate.readers.lines import json_lines
from codesign.curate.readers.plain import read_plain
from codesign.curate.records import Query, Unreadable
from codesign.curate.recover import BACKEND_PACKAGES, NEEDS_LOCKFILE, Recovered, Unrecoverable, recover
from codesign.curate.repairs import resolve_lockfile
from codesign.curate.scores import Scores, ScoreSettings, score
from codesign.curate.select import Interval, SelectSettings, consolidate, relative_scores, select, session_totals
from codesign.errors import ConfigError
from codesign.redact import redact

SCORER = "heuristic"  # which scorer produced the scores (an LLM scorer would name its model)


@dataclass
class Settings:
    inputs: list[Path]
    format: str = "auto"
    attachments_root: Path | None = None
    max_line_bytes: int = 64 << 20
    dedupe_threshold: float = 0.8
    num_perm: int = 128
    candidate_threshold: float | None = None
    filters: FilterSettings = field(default_factory=FilterSettings)
    max_attachment_bytes: int = 50 << 20
    scores: ScoreSettings = field(default_factory=ScoreSettings)
    select: SelectSettings = field(default_factory=SelectSettings)
    excluded_packages: list[str] = field(default_factory=lambda: list(BACKEND_PACKAGES))
    scorer_kind: str = "heuristic"  # heuristic | llm
    scorer_model: dict[str, Any] | None = None  # a model config (conf/model/), for scorer_kind=llm
    scorer_max_cost_usd: float | None = 5.0
    scorer_concurrency: int = 4
    scorer_cache_dir: Path | None = None
    scorer_prompt: str = "score_v1.md"
    validate: bool = True
    validate_concurrency: int = 2
    validate_executor: str = "inline"  # inline (this process, one browser) | ray (chunks over a cluster's CPUs)
    ray_address: str | None = None
    node_cache: Path = field(default_factory=lambda: Path("~/.cache/codesign/node_modules").expanduser())
    browser_executable: str | None = None

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> Settings:
        c = cfg["curation"]
        return cls(
            inputs=[Path(p).expanduser() for p in cfg.get("inputs") or []],
            format=cfg.get("format", "auto"),
            attachments_root=Path(cfg["attachments_root"]).expanduser() if cfg.get("attachments_root") else None,
            max_line_bytes=int(c["read"]["max_line_bytes"]),
            dedupe_threshold=float(c["dedupe"]["threshold"]),
            num_perm=int(c["dedupe"]["num_perm"]),
            candidate_threshold=c["dedupe"].get("candidate_threshold"),
            filters=FilterSettings(**c["filters"]),
            max_attachment_bytes=int(c["normalize"]["max_attachment_bytes"]),
            scores=ScoreSettings(**c["scores"]),
            select=SelectSettings(**c["select"]),
            excluded_packages=c["recover"].get("excluded_packages") or list(BACKEND_PACKAGES),
            scorer_kind=str(cfg["scorer"]["kind"]),
            scorer_model=cfg["scorer"].get("model"),
            scorer_max_cost_usd=cfg["scorer"].get("max_cost_usd"),
            scorer_concurrency=int(cfg["scorer"]["concurrency"]),
            scorer_cache_dir=Path(cfg["scorer"]["cache_dir"]).expanduser() if cfg["scorer"].get("cache_dir") else None,
            scorer_prompt=str(cfg["scorer"]["prompt"]),
            validate=bool(cfg["validate"]["enabled"]),
            validate_concurrency=int(cfg["validate"]["concurrency"]),
            validate_executor=str(cfg["validate"]["executor"]),
            ray_address=cfg["validate"].get("ray_address"),
            node_cache=Path(cfg["paths"]["node_cache"]).expanduser(),
            browser_executable=cfg.get("browser", {}).get("executable"),
        )


@dataclass
class Curated:
    funnel: Funnel
    candidates: pl.DataFrame
    drafts: list[Draft]


def session_files(inputs: list[Path]) -> Iterator[Path | Unreadable]:
    for path in inputs:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        elif path.is_file():
            yield path
        else:
            yield Unreadable(str(path), "input not found")


def sniff_format(path: Path, max_line_bytes: int) -> str:
    """claude_code when the first object line looks like the CLI's (a sessionId and a type), else plain."""
    for _, record in json_lines(path, max_line_bytes):
        if isinstance(record, dict):
            return "claude_code" if "sessionId" in record and "type" in record else "plain"
    return "plain"


def read_all(s: Settings) -> tuple[list[Query], list[Unreadable], int]:
    queries: list[Query] = []
    problems: list[Unreadable] = []
    files = 0
    for item in session_files(s.inputs):
        if isinstance(item, Unreadable):
            problems.append(item)
            continue
        files += 1
        kind = s.format if s.format != "auto" else sniff_format(item, s.max_line_bytes)
        reader = read_claude_code if kind == "claude_code" else read_plain
        try:
            for record in reader(item, s.max_line_bytes):
                (problems if isinstance(record, Unreadable) else queries).append(record)  # type: ignore[arg-type]
        except OSError as e:
            problems.append(Unreadable(str(item), f"could not be read: {e}"))
    return queries, problems, files


def _kind(reason: str) -> str:
    """A reason's kind for the funnel's breakdown: what comes before its first colon ("malformed JSON: …")."""
    return reason.split(":", 1)[0].strip()


def curate(s: Settings, out: Path) -> Curated:
    out.mkdir(parents=True, exist_ok=True)
    funnel = Funnel()
    queries, unreadable, files = read_all(s)
    funnel.add("read", len(queries), Counter(_kind(u.reason) for u in unreadable), unit="queries")
    if unreadable:
        with open(out / "unreadable.jsonl", "w") as f:
            for u in unreadable:
                f.write(json.dumps({"source": u.source, "reason": redact(u.reason)}) + "\n")
    sessions: dict[str, list[Query]] = defaultdict(list)
    for q in queries:
        sessions[q.session].append(q)
    for turns in sessions.values():
        turns.sort(key=lambda q: q.turn)

    exact = exact_duplicates(queries)
    funnel.add(
        "exact duplicates out", len(queries) - len(exact), Counter({"exact duplicate": len(exact)}) if exact else None
    )
    rest = [q for q in queries if q.id not in exact]
    near = near_duplicates(rest, s.dedupe_threshold, s.num_perm, s.candidate_threshold)
    funnel.add("near duplicates out", len(rest) - len(near),
               Counter({f"Jaccard ≥ {s.dedupe_threshold:g}": len(near)}) if near else None)  # fmt: skip
    rest = [q for q in rest if q.id not in near]

    verdicts: dict[str, dict[str, str | None]] = {}
    eligible: list[Query] = []
    rejected: Counter[str] = Counter()
    for q in queries:  # every filter's verdict on every query, for the table; the first decides
        verdicts[q.id] = {name: rule(q, s.filters) for name, rule in FILTERS}
    duplicates = {**exact, **near}
    for q in rest:
        first = next(((n, r) for n, r in verdicts[q.id].items() if r), None)
        if first:
            rejected[first[0]] += 1
        else:
            eligible.append(q)
    funnel.add("filters passed", len(eligible), rejected)

    scored: dict[str, Scores] = {}
    for q in eligible:
        turns = sessions[q.session]
        scored[q.id] = score(turns, turns.index(q), s.scores)
    heuristic = dict(scored)
    scorer_of = dict.fromkeys(scored, SCORER)
    if s.scorer_kind == "llm":
        _rate_with_llm(s, eligible, sessions, scored, scorer_of, out)
    elif s.scorer_kind != "heuristic":
        raise ConfigError(f"scorer.kind is {s.scorer_kind!r}", "use scorer.kind=heuristic or scorer.kind=llm")
    totals = {qid: sc.total for qid, sc in scored.items()}
    selection = select(totals, eligible, s.select)
    chosen = [q for q in eligible if selection.get(q.id) == "selected"]
    funnel.add("selected", len(chosen), Counter(_kind(v) for v in selection.values() if v != "selected"))
    intervals = consolidate(chosen, sessions, s.select)
    funnel.add("session intervals", len(intervals), unit="intervals")

    drafts, outcome = _draft_all(s, intervals, sessions, scored, scorer_of, out)
    recovered = [i for i in intervals if outcome[i.id][0] != "unrecoverable"]
    funnel.add("recovered", len(recovered),
               Counter(_kind(outcome[i.id][1]) for i in intervals if outcome[i.id][0] == "unrecoverable"),
               unit="intervals")  # fmt: skip
    if s.validate:
        failed = Counter(f"{outcome[i.id][0]}: {_kind(outcome[i.id][1])}" for i in recovered
                         if outcome[i.id][0] != "drafted")  # fmt: skip
        funnel.add("gate passed", sum(outcome[i.id][0] == "drafted" for i in recovered), failed, unit="intervals")
    else:
        funnel.add("gate not run", len(recovered), unit="intervals (validate.enabled=false)")
    funnel.add("draft tasks", len(drafts), unit="tasks")

    relative = relative_scores(totals)
    by_session = session_totals(totals, eligible)
    interval_of = {qid: i for i in intervals for qid in i.selected}
    rows = []
    for q in queries:
        sc = scored.get(q.id)
        dup = duplicates.get(q.id)
        i = interval_of.get(q.id)
        rows.append({
            "query_id": q.id, "session": q.session, "turn": q.turn, "timestamp": q.timestamp, "source": q.source,
            "text": redact(q.text[:2000]), "words": len(q.text.split()), "attachments": len(q.attachments),
            "edited_files": None if q.edits is None else len({e.path for e in q.edits}),
            "edited_lines": None if q.edits is None else sum(e.changed_lines for e in q.edits),
            "duplicate": dup.kind if dup else None, "duplicate_of": dup.of if dup else None,
            "similarity": dup.similarity if dup else None,
            **{f"filter_{name}": verdicts[q.id][name] for name, _ in FILTERS},
            "eligible": sc is not None,
            "difficulty": sc.difficulty if sc else None, "verifiability": sc.verifiability if sc else None,
            "reformulated": sc.reformulated if sc else None, "rolled_back": sc.rolled_back if sc else None,
            "failure_signals": sc.failure if sc else None, "score": sc.total if sc else None,
            "relative_score": relative.get(q.id), "session_score": by_session.get(q.session) if sc else None,
            "scorer": scorer_of.get(q.id), "edit_types": list(sc.edit_types) if sc else [],
            "difficulty_heuristic": heuristic[q.id].difficulty if sc else None,
            "verifiability_heuristic": heuristic[q.id].verifiability if sc else None,
            "selection": selection.get(q.id), "interval": i.id if i else None,
            "outcome": outcome[i.id][0] if i else None, "outcome_detail": redact(outcome[i.id][1]) if i else None,
            "draft": outcome[i.id][2] if i else None, "problems": [redact(p) for p in q.problems],
        })  # fmt: skip
    table = pl.DataFrame(rows, schema_overrides={"edit_types": pl.List(pl.String), "problems": pl.List(pl.String)},
                         infer_schema_length=None)  # fmt: skip
    if table.height:
        table = table.sort(["eligible", "score", "relative_score", "query_id"], descending=[True, True, True, False],
                           nulls_last=True)  # fmt: skip
        table = table.with_columns(pl.int_range(1, table.height + 1).alias("rank"))
    table.write_parquet(out / "candidates.parquet")
    (out / "funnel.json").write_text(json.dumps(funnel.as_rows(), indent=2) + "\n")
    (out / "funnel.txt").write_text(funnel.text() + "\n")
    (out / "funnel.html").write_text(funnel.html(f"Curation funnel: {files} session file(s)"))
    return Curated(funnel, table, drafts)


def _rate_with_llm(s: Settings, eligible: list[Query], sessions: dict[str, list[Query]], scored: dict[str, Scores],
                   scorer_of: dict[str, str], out: Path) -> None:  # fmt: skip
    """Difficulty and verifiability from the LLM scorer where it gives a valid rating; the heuristic elsewhere,
    with the reason on the query. ``scorer.json`` sums it up."""
    from concurrent.futures import ThreadPoolExecutor

    from codesign.construct import construct
    from codesign.curate.llm_scorer import LLMScorer, Rating, edits_patch

    if not s.scorer_model:
        raise ConfigError("scorer.kind=llm names no model", "add model@scorer.model=<a config in conf/model/>")
    scorer = LLMScorer(construct(s.scorer_model), s.scorer_prompt, s.scorer_cache_dir, s.scorer_max_cost_usd)

    def rate(q: Query) -> tuple[Query, Rating | str]:
        earlier = [h.text for h in sessions[q.session] if h.turn < q.turn][-3:]
        return q, scorer.rate(q, earlier, edits_patch(q))

    kept: Counter[str] = Counter()
    rated = cached = 0
    with ThreadPoolExecutor(max(1, s.scorer_concurrency)) as pool:
        for q, rating in pool.map(rate, eligible):
            if isinstance(rating, str):
                q.problems.append(f"heuristic score kept: {rating}")
                kept[_kind(rating)] += 1
                continue
            scored[q.id] = replace(scored[q.id], difficulty=rating.difficulty, verifiability=rating.verifiability)
            scorer_of[q.id] = scorer.name
            rated += 1
            cached += rating.cached
    summary = {"scorer": scorer.name, "rated": rated, "from_cache": cached, "heuristic_kept": dict(kept),
               "calls": scorer.calls, "spent_usd": round(scorer.spent_usd, 6)}  # fmt: skip
    (out / "scorer.json").write_text(json.dumps(summary, indent=2) + "\n")


Outcomes = dict[str, tuple[str, str, str | None]]  # interval id -> (status, detail, draft id)


def _draft_all(s: Settings, intervals: list[Interval], sessions: dict[str, list[Query]], scored: dict[str, Scores],
               scorer_of: dict[str, str], out: Path) -> tuple[list[Draft], Outcomes]:  # fmt: skip
    """Recover, validate and draft each interval: its outcome (status, detail, draft id) by interval id."""
    outcome: Outcomes = {}
    drafts: list[Draft] = []
    work = Path(tempfile.mkdtemp(prefix="codesign-curate-"))
    staged: list[tuple[Interval, Recovered, dict[int, str], list[Packaged]]] = []
    try:
        for interval in intervals:
            q = interval.request
            try:
                recovered = recover(q, sessions[q.session], work / interval.id.replace(":", "_"),
                                    s.excluded_packages)  # fmt: skip
                if NEEDS_LOCKFILE in recovered.repairs:
                    done = resolve_lockfile(recovered.app, s.node_cache.parent / "npm")
                    recovered.repairs[recovered.repairs.index(NEEDS_LOCKFILE)] = done
            except Unrecoverable as e:
                outcome[interval.id] = ("unrecoverable", str(e), None)
                continue
            except Exception as e:  # one broken record never stops the others
                outcome[interval.id] = ("unrecoverable", f"{type(e).__name__}: {e}", None)
                continue
            root = s.attachments_root or (Path(q.source.rsplit(":", 1)[0]).parent if q.source else None)
            packaged: list[Packaged] = []
            texts = {}
            for turn in [*interval.history, q]:  # history turns keep their files too, named apart
                own = package(turn, root, s.max_attachment_bytes, "" if turn is q else f"turn{turn.turn}-")
                texts[turn.turn] = normalized_request(turn, own)
                packaged += own
            staged.append((interval, recovered, texts, packaged))
        drafts_dir = out / "drafts"
        for interval, recovered, texts, packaged in staged:
            q = interval.request
            provenance = {
                "interval": interval.id, "session": interval.session, "request_source": q.source,
                "queries": [{"turn": h.turn, "timestamp": h.timestamp, "source": h.source}
                            for h in [*interval.history, q]],
                "selected": interval.selected, "workspace": recovered.how, "repairs": recovered.repairs,
                "scores": vars(scored[q.id]) | {"scorer": scorer_of[q.id]}, "problems": [redact(p) for p in q.problems],
            }  # fmt: skip
            draft = write_draft(drafts_dir, interval, texts, packaged, recovered, scored[q.id], provenance)
            outcome[interval.id] = ("drafted", recovered.how, draft.task_id)
            drafts.append(draft)
        if s.validate and drafts:
            reports = asyncio.run(_gate(s, drafts, work / "gate"))
            kept = []
            for interval, draft in zip([i for i, *_ in staged], drafts, strict=True):
                why = reports[draft.task_id]
                if why.startswith("undecided:"):  # the gate's own failure: the draft stays, unvalidated
                    outcome[interval.id] = ("gate undecided", why, draft.task_id)
                    kept.append(draft)
                elif why:
                    outcome[interval.id] = ("gate failed", why, None)
                    shutil.rmtree(draft.folder, ignore_errors=True)
                else:
                    kept.append(draft)
            drafts = kept
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return drafts, outcome


async def _gate(s: Settings, drafts: list[Draft], out: Path) -> dict[str, str]:
    """The gate's environment steps on each draft: '' when it passes, else ``step: why``."""
    from codesign.curate.validation import gate_drafts

    if s.validate_executor == "ray":
        from codesign.curate.fanout import gate_on_ray

        return await asyncio.to_thread(gate_on_ray, drafts, s.node_cache, s.validate_concurrency,
                                       s.browser_executable, s.ray_address)  # fmt: skip
    if s.validate_executor != "inline":
        raise ConfigError(f"validate.executor is {s.validate_executor!r}", "use validate.executor=inline or ray")
    return await gate_drafts(drafts, s.node_cache, out, s.validate_concurrency, s.browser_executable)
