"""The corpus of other people's SQL (issue 30): what dpsql answers today, and what it must refuse.

Every query of tests/corpus/queries runs through `dpsql.connect` on small synthetic data
(tests/corpus/data.py) with a fixed seed. Must-refuse queries (rows, per-person values,
groupings per person) must be refused now. Answerable queries are counted: the count may only
go up (ANSWERED_AT_LEAST is today's number; raise it when a change answers more). Answered noisy
cells are compared with raw DuckDB's exact answer on the same data; their coverage is reported,
not asserted (each cell's interval is a 95% interval, and the cells are not independent).
`python -m tests.corpus.report` prints the same tables.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus import runner
from tests.corpus.runner import Outcome, Query, Summary

# Today's counts (raise them as dpsql answers more; never lower them to make a change pass).
ANSWERED_AT_LEAST = 184
ERRORS_AT_MOST = 0
MIN_QUERIES = 150


@pytest.fixture(scope="module")
def summary() -> Summary:
    return runner.run_corpus()


def test_the_corpus_is_large_varied_and_attributed() -> None:
    queries = runner.load_corpus()
    assert len(queries) >= MIN_QUERIES
    assert all(q.source.strip() for q in queries), "every query records where it came from"
    families = {q.family for q in queries}
    assert {"tpch", "smartnoise", "qrlew", "bigquery", "tumult_pipelinedp", "superset", "metabase", "tableau",
            "powerbi", "grafana"} <= families
    assert sum(q.expect == "refuse" for q in queries) >= 20
    assert len({q.id for q in queries if q.family == "tpch"}) == 22


@pytest.mark.slow
def test_every_must_refuse_query_is_refused(summary: Summary) -> None:
    leaks = [f"{o.query.id}: {o.status} {o.code or ''} {o.message}" for o in summary.leaks]
    assert not leaks, "must-refuse queries that dpsql did not refuse:\n" + "\n".join(leaks)


@pytest.mark.slow
def test_answered_count_only_goes_up(summary: Summary) -> None:
    print("\n" + runner.report(summary))  # the tables, shown with -s or -rP
    answered = len(summary.answered)
    assert answered >= ANSWERED_AT_LEAST, (
        f"{answered} answerable queries answered, fewer than the {ANSWERED_AT_LEAST} of the ratchet:\n"
        + runner.misses_listing(summary))


@pytest.mark.slow
def test_errors_only_go_down(summary: Summary) -> None:
    errors = [f"{o.query.id}: {'CRASH ' if o.crash else ''}{o.code or ''} {o.message}" for o in summary.errors]
    assert len(errors) <= ERRORS_AT_MOST, "new errors (not refusals):\n" + "\n".join(errors)


@pytest.mark.slow
def test_answered_cells_are_compared_with_the_exact_answer(summary: Summary) -> None:
    # The comparison must actually run: most answered queries get an exact answer from DuckDB,
    # and most of their noisy cells are matched to it (the coverage itself is reported only).
    with_exact = [o for o in summary.answered if o.exact_error is None]
    assert len(with_exact) >= 0.9 * len(summary.answered)
    within, checked = summary.cells
    assert checked >= 1000 and within <= checked


# --- the runner's own checks, each with a negative control ------------------------------------

def _query(sql: str = "SELECT 1", expect: str = "answer", **kw: object) -> Query:
    return Query(id="q", file="test", schema="pums", expect=expect, source="test", sql=sql, **kw)  # type: ignore[arg-type]


def test_a_cell_within_its_interval_counts_and_one_outside_does_not() -> None:
    noise = [None, {"mechanism": "laplace"}]
    exact = [("a", 100.0), ("b", 200.0)]
    good = Outcome(query=_query(), status="answered")
    runner.compare_cells(good, [("b", 205.0), ("a", 95.0)], noise, [(None, 10.0), (None, 10.0)], exact)
    assert (good.cells_within, good.cells_checked) == (2, 2)  # matched by key, not by row order
    broken = Outcome(query=_query(), status="answered")  # negative control: noisy values off by 2 x ci95
    runner.compare_cells(broken, [("b", 220.0), ("a", 80.0)], noise, [(None, 10.0), (None, 10.0)], exact)
    assert (broken.cells_within, broken.cells_checked) == (0, 2)


def test_rows_without_output_keys_are_not_matched_by_position() -> None:
    outcome = Outcome(query=_query(), status="answered")
    runner.compare_cells(outcome, [(1.0,), (2.0,)], [{"mechanism": "laplace"}], [(5.0,), (5.0,)], [(2.0,), (1.0,)])
    assert outcome.cells_checked == 0 and outcome.cells_unmatched == 2
    single = Outcome(query=_query(), status="answered")  # control: one ungrouped row is matched
    runner.compare_cells(single, [(1.0,)], [{"mechanism": "laplace"}], [(5.0,)], [(2.0,)])
    assert (single.cells_within, single.cells_checked) == (1, 1)


def test_the_exact_sql_drops_the_outer_limit_and_the_privacy_clause() -> None:
    assert "LIMIT" not in runner.exact_sql(_query("SELECT educ, COUNT(*) AS n FROM pums GROUP BY educ ORDER BY n DESC LIMIT 5"))
    assert runner.exact_sql(_query("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM pums")).startswith("SELECT COUNT(*)")
    assert runner.exact_sql(_query("SELECT 1", exact="SELECT 2")) == "SELECT 2"


def test_a_must_refuse_query_that_is_answered_is_caught() -> None:
    # Through the real path: an answerable query labelled "refuse" is answered, so the
    # must-refuse check above would list it (negative control); a real row release is refused.
    answered, refused = runner.run_schema("pums", [
        _query("SELECT COUNT(*) FROM pums", expect="refuse"),
        Query(id="rows", file="test", schema="pums", expect="refuse", source="test", sql="SELECT pid, income FROM pums"),
    ])
    summary = Summary(outcomes=[answered, refused])
    assert [o.query.id for o in summary.leaks] == ["q"]
    assert refused.status == "refused" and refused.code is not None and refused.code.startswith("DP1")


def test_the_loader_rejects_bad_entries(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('schema = "pums"\n[[query]]\nid = "x"\nexpect = "answer"\nsource = "s"\nsql = "SELECT 1"\n'
                                     'sorce = "typo"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="unknown keys"):
        runner.load_corpus(tmp_path)
    (tmp_path / "a.toml").write_text('schema = "pums"\n[[query]]\nid = "x"\nexpect = "maybe"\nsource = "s"\nsql = "SELECT 1"\n',
                                     encoding="utf-8")
    with pytest.raises(ValueError, match="expect"):
        runner.load_corpus(tmp_path)
