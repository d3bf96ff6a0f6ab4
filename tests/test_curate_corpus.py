"""Curation's counts on a generated corpus (codesign.testing.corpus): every planted exact and near duplicate,
every blocked, non-actionable, unbounded and non-editing turn, every reformulation and rollback is found — by
the very ids planted, nothing else — and nothing is lost between stages; MinHash LSH gives exactly the result
of comparing every pair on a 2,000-record sample."""

from __future__ import annotations

import itertools
import json

import polars as pl

from codesign.curate import Settings, curate
from codesign.curate.dedupe import near_duplicates, near_duplicates_exactly
from codesign.curate.readers.plain import read_plain
from codesign.curate.records import Query
from codesign.testing.corpus import generate


def ids(table: pl.DataFrame, expr: pl.Expr) -> set[str]:
    return set(table.filter(expr)["query_id"])


def test_every_plant_is_found_by_its_id_and_every_query_is_accounted_for(tmp_path):
    planted = generate(tmp_path / "corpus", sessions=3000, seed=1)
    result = curate(Settings(inputs=[tmp_path / "corpus"], validate=False), tmp_path / "out")
    table = result.candidates
    assert table.height == planted.queries and table["query_id"].n_unique() == planted.queries
    assert ids(table, pl.col("duplicate") == "exact") == planted.exact
    assert ids(table, pl.col("duplicate") == "near") == planted.near
    assert table.filter(pl.col("duplicate") == "near")["similarity"].min() >= 0.8  # type: ignore[operator]
    for name in ("blocked", "non_actionable", "unbounded", "non_editing"):
        assert ids(table, pl.col(f"filter_{name}").is_not_null() & pl.col("duplicate").is_null()) == getattr(
            planted, name), name  # fmt: skip
    assert ids(table, pl.col("reformulated")) == planted.reformulated
    assert ids(table, pl.col("rolled_back")) == planted.rolled_back
    assert min(len(planted.exact), len(planted.near), len(planted.reformulated), len(planted.rolled_back)) > 50

    funnel = {s["stage"]: s for s in json.loads((tmp_path / "out" / "funnel.json").read_text())}
    assert funnel["read"]["remaining"] == planted.queries
    assert funnel["exact duplicates out"]["reasons"] == {"exact duplicate": len(planted.exact)}
    assert funnel["near duplicates out"]["removed"] == len(planted.near)
    filtered = ("blocked", "non_actionable", "unbounded", "non_editing")
    assert funnel["filters passed"]["reasons"] == {name: len(getattr(planted, name)) for name in filtered}
    stages = list(funnel.values())
    for before, after in itertools.pairwise(stages[:4]):  # each stage's records: kept or counted out
        assert after["remaining"] + after["removed"] == before["remaining"], (before, after)
    eligible = table.filter(pl.col("eligible"))
    assert eligible.height == funnel["filters passed"]["remaining"]
    selected = funnel["selected"]
    assert selected["remaining"] + selected["removed"] == eligible.height
    assert selected["remaining"] == (table["selection"] == "selected").sum()


def test_lsh_finds_exactly_the_near_duplicates_every_pair_finds_on_a_sample(tmp_path):
    generate(tmp_path / "corpus", sessions=700, seed=2, share=0.06)
    queries = [q for q in read_plain(tmp_path / "corpus" / "sessions.jsonl", 1 << 20) if isinstance(q, Query)]
    sample = queries[:2000]
    assert len(sample) == 2000
    by_lsh = near_duplicates(sample, 0.8)
    assert len(by_lsh) > 20
    assert by_lsh == near_duplicates_exactly(sample, 0.8)
