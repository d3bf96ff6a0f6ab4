"""Curation at corpus scale: a generated corpus (codesign.testing.corpus) through reading, deduplication,
filters and scoring, each stage timed, against the target of 40,000 query records in under a minute on
2 cores; and MinHash LSH against the comparison of every pair on a 2,000-record sample (equal, and how much
faster).

    python benchmarks/curate.py [--records 40000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from codesign.curate.dedupe import exact_duplicates, near_duplicates, near_duplicates_exactly
from codesign.curate.filters import FilterSettings, first_rejection
from codesign.curate.pipeline import Settings, curate, read_all
from codesign.curate.records import Query
from codesign.curate.scores import ScoreSettings, score
from codesign.testing.corpus import generate

QUERIES_PER_SESSION = 4  # a session of the generator holds about this many queries (fewer for duplicates)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=40000, help="query records (about)")
    parser.add_argument("--sample", type=int, default=2000, help="records compared pair by pair against LSH")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        planted = generate(folder, sessions=max(1, round(args.records / 3.77)), queries_per_session=QUERIES_PER_SESSION)
        timings: dict[str, float] = {}

        def timed(name: str, start: float) -> float:
            now = time.perf_counter()
            timings[name] = now - start
            return now

        start = clock = time.perf_counter()
        queries, unreadable, _ = read_all(Settings(inputs=[folder], validate=False))
        clock = timed("read", clock)
        exact = exact_duplicates(queries)
        rest = [q for q in queries if q.id not in exact]
        clock = timed("exact duplicates", clock)
        near = near_duplicates(rest, 0.8)
        rest = [q for q in rest if q.id not in near]
        clock = timed("near duplicates (LSH + exact check)", clock)
        settings = FilterSettings()
        eligible = [q for q in rest if first_rejection(q, settings) is None]
        clock = timed("filters", clock)
        sessions: dict[str, list[Query]] = defaultdict(list)
        for q in queries:
            sessions[q.session].append(q)
        for turns in sessions.values():
            turns.sort(key=lambda q: q.turn)
        position = {q.id: i for turns in sessions.values() for i, q in enumerate(turns)}
        for q in eligible:
            score(sessions[q.session], position[q.id], ScoreSettings())
        clock = timed("scores", clock)
        whole = time.perf_counter() - start
        t0 = time.perf_counter()
        curate(Settings(inputs=[folder], validate=False), Path(tmp) / "out")  # every stage, its tables and funnel
        end_to_end = time.perf_counter() - t0

    print(f"{len(queries)} query records ({len(unreadable)} unreadable), {planted.sessions} sessions: "
          f"{len(exact)} exact and {len(near)} near duplicates out, {len(eligible)} eligible")  # fmt: skip
    for name, seconds in timings.items():
        print(f"  {name:<38} {seconds:7.2f} s")
    verdict = "met" if whole < 60 else "NOT met"
    print(f"  {'whole':<38} {whole:7.2f} s = {len(queries) / whole:,.0f} records/s (target: under 60 s: {verdict})")
    print(f"  {'curate() end to end, no workspaces':<38} {end_to_end:7.2f} s (selection, candidates table, funnel)")

    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp) / "sample", sessions=max(1, round(args.sample / 3.5)), seed=2, share=0.06)
        sample = read_all(Settings(inputs=[Path(tmp) / "sample"], validate=False))[0][: args.sample]
    t0 = time.perf_counter()
    by_lsh = near_duplicates(sample, 0.8)
    t1 = time.perf_counter()
    by_pairs = near_duplicates_exactly(sample, 0.8)
    t2 = time.perf_counter()
    same = "equal" if by_lsh == by_pairs else "DIFFERENT"
    print(f"{len(sample)}-record sample: LSH {len(by_lsh)} near duplicates in {t1 - t0:.2f} s, every pair "
          f"{len(by_pairs)} in {t2 - t1:.2f} s: {same}")  # fmt: skip


if __name__ == "__main__":
    main()
