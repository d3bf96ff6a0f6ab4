"""Curation's deterministic front at corpus scale: a generated corpus (codesign.testing.sessions, 40,000 query
records by default) through reading, exact and near deduplication, the filters and the heuristic scores — the
functions curate() calls, in its order — each stage timed (wall and CPU), against the target of under a minute on
2 cores; then curate() end to end (validate=False: no workspaces, no gate) for reference, its funnel checked
against the stages' counts and everything checked against what was planted; and MinHash LSH against comparing
every pair on a 2,000-record sample with planted near duplicates and near misses (equal, and how much faster).

The machine may be shared: the load average is printed, and CPU seconds beside wall seconds. Imports happen
before any clock starts (datasketch's, which curate() makes on first use, takes a few tenths of a second).

    python benchmarks/curation.py [--records 40000] [--queries-per-session 4] [--sample 2000] [--seed 0]
                                  [--candidate-threshold T]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from codesign.curate import Query, Settings, curate
from codesign.curate.dedupe import exact_duplicates, near_duplicates, near_duplicates_exactly
from codesign.curate.filters import FILTERS
from codesign.curate.pipeline import read_all
from codesign.curate.scores import score
from codesign.testing.sessions import Fractions, Planted, generate

TARGET_S = 60.0


class Stages:
    """Wall and CPU seconds of each stage, in order."""

    def __init__(self) -> None:
        self.times: dict[str, tuple[float, float]] = {}
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def done(self, name: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.times[name] = (wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu

    def total(self) -> tuple[float, float]:
        return sum(w for w, _ in self.times.values()), sum(c for _, c in self.times.values())


@dataclass
class Found:
    """What the stages found, by query id."""

    queries: int
    unreadable: int
    files: int
    exact: set[str]
    near: set[str]
    rejected: dict[str, set[str]]  # by the first filter that rejects, in curate's order
    eligible: set[str]
    reformulated: set[str]
    rolled_back: set[str]


def front(s: Settings) -> tuple[Stages, Found]:
    """read → exact → near → filters → scores, as curate() runs them."""
    stages = Stages()
    queries, unreadable, files = read_all(s)
    stages.done("read")
    exact = exact_duplicates(queries)
    rest = [q for q in queries if q.id not in exact]
    stages.done("exact duplicates")
    near = near_duplicates(rest, s.dedupe_threshold, s.num_perm, s.candidate_threshold)
    rest = [q for q in rest if q.id not in near]
    stages.done("near duplicates (LSH, each candidate checked)")
    verdicts = {q.id: {name: rule(q, s.filters) for name, rule in FILTERS} for q in queries}  # every query, as curate
    rejected: dict[str, set[str]] = {name: set() for name, _ in FILTERS}
    eligible: list[Query] = []
    for q in rest:
        first = next((name for name, reason in verdicts[q.id].items() if reason), None)
        if first:
            rejected[first].add(q.id)
        else:
            eligible.append(q)
    stages.done("filters")
    sessions: dict[str, list[Query]] = defaultdict(list)
    for q in queries:
        sessions[q.session].append(q)
    for turns in sessions.values():
        turns.sort(key=lambda q: q.turn)
    scored = {}
    for q in eligible:
        turns = sessions[q.session]
        scored[q.id] = score(turns, turns.index(q), s.scores)
    stages.done("scores")
    return stages, Found(len(queries), len(unreadable), files, set(exact), set(near), rejected,
                         {q.id for q in eligible}, {i for i, sc in scored.items() if sc.reformulated},
                         {i for i, sc in scored.items() if sc.rolled_back})  # fmt: skip


def against_planted(found: Found, planted: Planted) -> list[str]:
    """What differs from the plants, kind by kind (nothing, when curation found exactly them)."""
    wrong = [f"{found.queries} queries read, {planted.queries} planted"] if found.queries != planted.queries else []
    if found.unreadable:
        wrong.append(f"{found.unreadable} records unreadable")
    kinds = {"exact": (found.exact, planted.exact), "near": (found.near, planted.near),
             **{name: (found.rejected[name], planted.filtered[name]) for name in found.rejected},
             "eligible": (found.eligible, planted.eligible),
             "reformulated": (found.reformulated, planted.reformulated),
             "rolled_back": (found.rolled_back, planted.rolled_back)}  # fmt: skip
    for kind, (got, want) in kinds.items():
        if got != want:
            missed, extra = sorted(want - got), sorted(got - want)
            wrong.append(f"{kind}: {len(missed)} planted not found {missed[:5]}, {len(extra)} unplanted {extra[:5]}")
    return wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=40000, help="query records in the corpus")
    parser.add_argument("--queries-per-session", type=int, default=4)
    parser.add_argument("--sample", type=int, default=2000, help="records compared pair by pair against LSH")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--candidate-threshold", type=float, default=None,
                        help="LSH candidates' Jaccard (default: curate's, the threshold - 0.2)")  # fmt: skip
    args = parser.parse_args()
    import datasketch  # noqa: F401  (imported by near_duplicates on first use: not a stage's time)

    per = args.queries_per_session
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        t0 = time.perf_counter()
        planted = generate(folder, sessions=math.ceil(args.records / per), queries_per_session=per, seed=args.seed)
        made = time.perf_counter() - t0
        settings = Settings(inputs=[folder], validate=False, candidate_threshold=args.candidate_threshold)
        stages, found = front(settings)
        t0, c0 = time.perf_counter(), time.process_time()
        result = curate(settings, Path(tmp) / "out")
        end_to_end, end_to_end_cpu = time.perf_counter() - t0, time.process_time() - c0
        funnel = {row["stage"]: row for row in json.loads((Path(tmp) / "out" / "funnel.json").read_text())}

    n = found.queries
    print(f"{n:,} query records in {found.files} file(s) ({planted.sessions:,} sessions of {per}), generated in "
          f"{made:.1f} s; {cores} cores, load average {load}")  # fmt: skip
    print(f"{'stage':<46} {'wall s':>8} {'CPU s':>8}")
    for name, (wall, cpu) in stages.times.items():
        print(f"  {name:<44} {wall:8.2f} {cpu:8.2f}")
    wall, cpu = stages.total()
    verdict = "met" if wall < TARGET_S else "NOT met"
    print(f"  {'whole: read to scores':<44} {wall:8.2f} {cpu:8.2f}   = {n / wall:,.0f} records/s "
          f"(target: under {TARGET_S:.0f} s on 2 cores: {verdict})")  # fmt: skip
    print(f"  {'curate() end to end (validate=False)':<44} {end_to_end:8.2f} {end_to_end_cpu:8.2f}   "
          f"(+ selection, consolidation, candidates table, funnel)")  # fmt: skip

    same_funnel = (
        funnel["read"]["remaining"] == n
        and funnel["exact duplicates out"]["removed"] == len(found.exact)
        and funnel["near duplicates out"]["removed"] == len(found.near)
        and funnel["filters passed"]["reasons"] == {k: len(v) for k, v in found.rejected.items() if v}
        and result.candidates.height == n
    )
    print(f"curate()'s funnel and the stages' counts: {'the same' if same_funnel else 'DIFFERENT'}")
    counts = ", ".join(f"{len(v)} {k}" for k, v in found.rejected.items())
    print(f"found: {len(found.exact)} exact and {len(found.near)} near duplicates, rejected {counts}, "
          f"{len(found.eligible)} eligible ({len(found.reformulated)} reformulated, {len(found.rolled_back)} rolled "
          f"back)")  # fmt: skip
    wrong = against_planted(found, planted)
    print("against what was planted: " + ("every count and id as planted" if not wrong else "MISMATCH"))
    for line in wrong:
        print(f"  {line}")

    with tempfile.TemporaryDirectory() as tmp:
        sessions = math.ceil(args.sample / per)
        sample_plants = generate(Path(tmp) / "sample", sessions=sessions, queries_per_session=per, seed=args.seed + 1,
                                 fractions=Fractions(exact=0.0, near=0.08, reformulated=0.08))  # fmt: skip
        sample = read_all(Settings(inputs=[Path(tmp) / "sample"], validate=False))[0][: args.sample]
    t0 = time.perf_counter()
    by_lsh = near_duplicates(sample, settings.dedupe_threshold, settings.num_perm, settings.candidate_threshold)
    t1 = time.perf_counter()
    by_pairs = near_duplicates_exactly(sample, settings.dedupe_threshold)
    t2 = time.perf_counter()
    same = "equal" if by_lsh == by_pairs else f"DIFFERENT ({len(set(by_pairs) - set(by_lsh))} missed by LSH)"
    in_sample = {q.id for q in sample}
    planted_near = {q for q in sample_plants.near if q in in_sample}
    print(f"{len(sample):,}-record sample ({len(planted_near)} near duplicates planted): LSH found {len(by_lsh)} in "
          f"{t1 - t0:.2f} s, every pair {len(by_pairs)} in {t2 - t1:.2f} s ({(t2 - t1) / (t1 - t0):.0f}x): "
          f"LSH and every pair: {same}")  # fmt: skip


if __name__ == "__main__":
    main()
