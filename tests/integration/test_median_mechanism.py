"""The Median Mechanism layer through the DB-API: reservation, kinds, repeats, EXPLAIN, fallbacks,
halting, GROUP BY, clamping, SQL semantics, secrecy (docs/mechanisms.md, "The Median Mechanism layer")."""

from __future__ import annotations

import itertools
import logging
import warnings
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import dpsql
from dpsql.demo.people import DEPTS, REGIONS
from dpsql.errors import MedianMechanismHaltedError, MedianMechanismWarning
from dpsql.render import render_table
from tests.unit.mechanisms.median_mechanism.support import write_policy

ACTIVE = {"epsilon": 2.0, "accuracy": 3000, "mode": "pure", "min_hard_slots": 5, "strategy": "pmw"}


def layer_of(con: dpsql.Connection):  # type: ignore[no-untyped-def]
    return con.session.median_mechanism.layer("people")


def run(con: dpsql.Connection, sql: str) -> tuple[list[tuple], list[dict | None]]:
    cur = con.cursor()
    cur.execute(sql)
    return cur.fetchall(), cur.noise_info


@pytest.fixture(autouse=True)
def no_learned_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Session chaining keeps learned models per process: every test starts without any."""
    import dpsql.execution.median_layer as median_layer

    monkeypatch.setattr(median_layer, "_LEARNED", {})


@pytest.fixture
def mm(tmp_path: Path, connect):  # type: ignore[no-untyped-def]
    def open_(frame: pd.DataFrame | None = None, seed: int = 1, **layer: object) -> dpsql.Connection:
        keys = dict(ACTIVE)
        keys.update(layer)
        budget = keys.pop("budget_epsilon", 10.0)
        policy = write_policy(tmp_path, name=f"policy{seed}_{len(layer)}.toml", budget_epsilon=budget, **keys)
        tables = {"people": frame} if frame is not None else None
        return connect(policy=policy, tables=tables, random_seed=seed)

    return open_


def test_first_answer_reserves_the_whole_budget_once(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm()
    before = con.budget
    cur = con.cursor()
    cur.execute("SELECT COUNT(*) FROM people WHERE age >= 40")
    first = cur.result
    assert first.cost.epsilon == 2 and first.cost.delta == 0
    for sql in ["SELECT COUNT(*) FROM people WHERE dept = 'sales'", "SELECT COUNT(*) FROM people WHERE age >= 40",
                "SELECT region, COUNT(*) FROM people GROUP BY region"]:
        cur.execute(sql)
        assert cur.result.cost.epsilon == 0
        info = cur.noise_info[-1]
        assert info["mechanism"] == "median_mechanism" and info["kind"] in ("easy", "hard", "repeat", "measured")
        assert info["epsilon"] == 0 and isinstance(info["hard_slots_left"], int) and info["ci95"] > 0
    entries = con.ledger()
    assert [e.mechanism for e in entries] == ["median_mechanism"]
    entry = entries[0]
    assert entry.cost.epsilon == 2 and entry.cost.delta == 0
    assert entry.params["mode"] == "pure" and entry.params["cap"] == layer_of(con).calibration.cap
    assert {"threshold", "threshold_scale", "query_scale", "answer_scale", "strategy", "measurement", "cells", "columns"} <= set(entry.params)
    after = con.budget
    # One pure epsilon-2 term, read by the default filter (its basic class): exactly 2.
    assert 2.0 - 1e-4 <= before[0] - after[0] <= 2.0


def test_zcdp_reservation_records_delta_and_rho(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm(mode="zcdp", delta=1e-7, epsilon=3.0, accuracy=3000)
    run(con, "SELECT COUNT(*) FROM people")
    (entry,) = con.ledger()
    assert entry.cost.epsilon == 3 and entry.cost.delta == Fraction(1, 10**7)
    assert entry.params["mode"] == "zcdp" and "rho" in entry.params and "answer_sigma2" in entry.params


def test_repeat_returns_the_released_answer_without_data(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm()
    rows, info = run(con, "SELECT COUNT(*) FROM people WHERE age BETWEEN 30 AND 39")
    layer = layer_of(con)
    reads = dict(layer.core._data.reads)
    again, info2 = run(con, "select count(*) from people where age >= 30 and age <= 39")  # same cells, other text
    assert again == rows and info2[0]["kind"] == "repeat" and info2[0]["ci95"] == info[0]["ci95"]
    assert layer.core._data.reads == reads and layer.data_reads == 1


def test_explain_shows_the_layer_and_charges_nothing(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm()
    sql = "SELECT COUNT(*) FROM people WHERE dept = 'hr'"
    text = "\n".join(r[0] for r in run(con, "EXPLAIN " + sql)[0])
    assert "Median Mechanism layer (people, pure mode): answers this query" in text and "Strategy: pmw" in text
    assert "charged on the first answer" in text and "Domain X: dept (12 values + NULL)" in text
    assert f"Hard slots: {layer_of(con).calibration.cap} of" in text
    assert con.ledger() == [] and layer_of(con).core is None
    run(con, sql)
    text = "\n".join(r[0] for r in run(con, "EXPLAIN " + sql)[0])
    assert "a repeat: the released answer, no data read" in text and "charged in this session" in text
    assert len(con.ledger()) == 1


def test_queries_outside_the_layer_take_the_laplace_path(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm()
    _rows, info = run(con, "SELECT SUM(age) FROM people")
    assert info[0]["mechanism"] == "laplace" and "kind" not in info[0]
    _rows, info = run(con, "SELECT COUNT(*) FROM people WHERE income > 100")
    assert info[0]["mechanism"] == "laplace"
    text = "\n".join(r[0] for r in run(con, "EXPLAIN SELECT COUNT(*) FROM people WHERE income > 100")[0])
    assert "not used: the predicate reads 'income', which is not a column of the layer" in text
    assert [e.mechanism for e in con.ledger()] == ["laplace", "laplace"]


def test_too_few_hard_slots_disables_the_layer_with_a_warning(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm(accuracy=300, min_hard_slots=100)
    with pytest.warns(MedianMechanismWarning, match="fewer than min_hard_slots = 100"):
        _rows, info = run(con, "SELECT COUNT(*) FROM people")
    assert info[0]["mechanism"] == "laplace"
    text = "\n".join(r[0] for r in run(con, "EXPLAIN SELECT COUNT(*) FROM people")[0])
    assert "is off: " in text and "fewer than min_hard_slots = 100" in text
    assert "epsilon = " in text and "accuracy = " in text and "would turn it on" in text  # the settings that work
    assert [e.mechanism for e in con.ledger()] == ["laplace"]


def test_unaffordable_reservation_falls_back(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm(budget_epsilon=1.0)
    with pytest.warns(MedianMechanismWarning, match="does not fit the remaining budget"):
        _rows, info = run(con, "SELECT COUNT(*) FROM people")
    assert info[0]["mechanism"] == "laplace" and [e.mechanism for e in con.ledger()] == ["laplace"]


def _exhaust(con: dpsql.Connection) -> list[str]:
    asked = []
    for low in range(18, 90):
        for dept in DEPTS:
            sql = f"SELECT COUNT(*) FROM people WHERE age >= {low} AND dept = '{dept}'"
            if layer_of(con).halted:
                return asked
            run(con, sql)
            asked.append(sql)
    raise AssertionError("the layer never halted")


def test_halting_then_laplace_fallback(mm, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    con = mm(epsilon=0.5, accuracy=400, min_hard_slots=1)
    layer = layer_of(con)
    assert layer.calibration.cap <= 5
    asked = _exhaust(con)
    reads = dict(layer.core._data.reads)
    calls = []
    monkeypatch.setattr(con.session._engine, "private_arrays", lambda *a, **k: calls.append(a))
    # A query over (almost) all cells: the measurement alone is not within A for it.
    _rows, info = run(con, "SELECT COUNT(*) FROM people WHERE age >= 19")
    assert info[0]["mechanism"] == "laplace"  # charged normally
    assert con.ledger()[-1].mechanism == "laplace"
    _rows, info = run(con, asked[0])  # a repeat is still served from the cache
    assert info[0]["kind"] == "repeat"
    assert layer.core._data.reads == reads and calls == []  # the layer never reads data after halting
    text = "\n".join(r[0] for r in run(con, "EXPLAIN SELECT COUNT(*) FROM people WHERE age >= 20")[0])
    assert "halted after" in text and "per-query noise" in text and "privacy filter" in text


def test_halting_then_refusal_by_policy(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm(epsilon=0.5, accuracy=400, min_hard_slots=1, after_halt="refuse")
    _exhaust(con)
    charges = len(con.ledger())
    with pytest.raises(MedianMechanismHaltedError) as info:
        run(con, "SELECT COUNT(*) FROM people WHERE age >= 19")
    assert info.value.code == "DP201" and len(con.ledger()) == charges


def test_halting_then_renewal_keeps_the_learned_model(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm(epsilon=0.5, accuracy=400, min_hard_slots=1, after_halt="renew")
    _exhaust(con)
    layer = layer_of(con)
    model, reads = layer.core.model, layer.data_reads
    assert len(con.ledger()) == 1 and layer.halted
    text = "\n".join(r[0] for r in run(con, "EXPLAIN SELECT COUNT(*) FROM people WHERE age >= 19")[0])
    assert "renews it" in text
    _rows, info = run(con, "SELECT COUNT(*) FROM people WHERE age >= 19")
    assert info[0]["mechanism"] == "median_mechanism" and not layer.halted
    entries = con.ledger()
    assert [e.mechanism for e in entries] == ["median_mechanism", "median_mechanism"] and entries[1].params["renewal"]
    assert layer.core.model is model and layer.data_reads == reads  # session chaining: the public model is kept
    assert layer.core.measured and layer.core.measured_plan.axes  # and the earlier measurement still answers


def test_a_new_session_keeps_the_learned_model(mm) -> None:  # type: ignore[no-untyped-def]
    first = mm(epsilon=0.5, accuracy=400, min_hard_slots=1, after_halt="renew", seed=31)
    run(first, "SELECT COUNT(*) FROM people WHERE age >= 40 AND dept = 'hr'")
    learned = layer_of(first).core.model
    assert layer_of(first).plan.axes  # the first session bought a warm start
    second = mm(epsilon=0.5, accuracy=400, min_hard_slots=1, after_halt="renew", seed=32)
    layer = layer_of(second)
    assert layer.plan.axes == () and layer.calibration.cost.epsilon == Fraction(1, 2)  # no warm start this time
    run(second, "SELECT COUNT(*) FROM people WHERE age >= 41 AND dept = 'hr'")
    assert layer.core.model is learned and second.ledger()[0].params["renewal"]


def test_identity_strategy_through_sql(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm(strategy="auto")  # X = dept x region x age is small for epsilon 2 and A = 3,000
    layer = layer_of(con)
    sql = "SELECT COUNT(*) FROM people WHERE age >= 40 AND region = 'north'"
    text = "\n".join(r[0] for r in run(con, "EXPLAIN " + sql)[0])
    assert layer.plan.strategy == "identity" and "Strategy: identity" in text and "never halts" in text
    cur = con.cursor()
    cur.execute(sql)
    assert cur.result.cost.epsilon == 2 and cur.noise_info[0]["kind"] == "measured"
    reads = dict(layer.core._data.reads)
    for query in ["SELECT COUNT(*) FROM people", "SELECT dept, COUNT(*) FROM people GROUP BY dept",
                  "SELECT COUNT(*) FROM people WHERE dept IN ('hr', 'sales') AND age < 30"]:
        cur.execute(query)
        assert cur.result.cost.epsilon == 0 and cur.noise_info[-1]["kind"] == "measured"
    assert layer.core._data.reads == reads and len(con.ledger()) == 1 and not layer.halted


def test_group_by_releases_every_key_combination(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm()
    rows, info = run(con, "SELECT dept, region, COUNT(*) FROM people WHERE dept = 'hr' GROUP BY dept, region")
    assert [r[:2] for r in rows] == list(itertools.product(DEPTS, REGIONS))  # empty groups too, public order
    assert info[0] is None and info[1] is None and info[2]["mechanism"] == "median_mechanism"
    rows, info = run(con, "SELECT region, COUNT(*) AS n FROM people GROUP BY region ORDER BY n DESC LIMIT 2")
    assert len(rows) == 2 and rows[0][1] >= rows[1][1] and info[1]["kind"] in ("easy", "hard", "measured")


def test_out_of_domain_values_are_clamped_as_the_policy_says(mm, people_frame: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    frame = people_frame.copy()
    frame.loc[0:9, "age"] = 5  # below 18: clamped to 18
    frame.loc[10:19, "age"] = 150  # above 90: clamped to 90
    frame.loc[20:29, "dept"] = "astrology"  # not declared: the NULL cell of dept
    frame.loc[30:39, "region"] = None  # NULL
    con = mm(frame)
    run(con, "SELECT COUNT(*) FROM people")
    layer = layer_of(con)
    h = layer.core._data._counts
    assert int(h.sum()) == len(frame)  # every row in exactly one cell (max_rows keeps all rows here)
    codes = {name: layer.domain.codes(i) for i, name in enumerate(layer.domain.columns)}
    expected = np.zeros_like(h)
    for _, row in frame.iterrows():
        d = DEPTS.index(row["dept"]) if row["dept"] in DEPTS else 12
        r = REGIONS.index(row["region"]) if row["region"] in REGIONS else 5
        a = min(max(int(row["age"]), 18), 90) - 18
        expected[(d * 6 + r) * 74 + a] += 1
    assert np.array_equal(h, expected)
    assert codes["age"].max() == 73


PREDICATES = [
    "age >= 40",
    "dept = 'sales' AND region IN ('north', 'east')",
    "NOT (age BETWEEN 25 AND 60) OR dept LIKE 's%'",
    "region IS NULL",
    "age % 5 = 0 AND upper(dept) <> 'HR'",
    "CASE WHEN region = 'west' THEN age > 50 ELSE age < 30 END",
    "TRUE",
]


def test_predicates_mean_the_same_on_both_sides(mm, people_frame: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    con = mm()
    run(con, "SELECT COUNT(*) FROM people")
    layer = layer_of(con)
    from dpsql.planner.measurable import measurable

    duck = duckdb.connect()
    duck.register("people", people_frame)
    for predicate in PREDICATES:
        compiled = con.session.compile(f"SELECT COUNT(*) FROM people WHERE {predicate}").compiled
        query = measurable(compiled.plan.query, layer.config)
        shape = layer.shape(query)
        exact = duck.execute(f"SELECT COUNT(*) FROM people WHERE {predicate}").fetchone()[0]
        assert int(shape.totals(layer.core._data._counts)[0]) == exact, predicate


def test_secrets_stay_out_of_logs_errors_and_explain(mm, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    con = mm(epsilon=0.5, accuracy=400, min_hard_slots=1, after_halt="refuse")
    caplog.set_level(logging.DEBUG)
    asked = _exhaust(con)
    layer = layer_of(con)
    texts = [record.getMessage() for record in caplog.records]
    try:
        run(con, "SELECT COUNT(*) FROM people WHERE age < 20")
    except MedianMechanismHaltedError as err:
        texts.append(str(err))
    texts += [r[0] for r in run(con, "EXPLAIN " + asked[0])[0]]
    texts += [repr(layer.core), repr(layer.core._svt), repr(layer.core._data), repr(layer)]
    blob = "\n".join(texts)
    h = layer.core._data._counts
    secrets = {str(int(v)) for v in h[h > 1000]} | {str(int(h.sum()))}
    truths = [int(layer.shape(q).totals(h)[0]) for q in [_mmq(con, layer, asked[0]), _mmq(con, layer, asked[-1])]]
    secrets |= {str(t) for t in truths if t > 100}
    assert not [s for s in secrets if s in blob]
    assert f"_rho={layer.core._svt._rho}" not in blob and "SecretHistogram(cells=" in repr(layer.core._data)


def _mmq(con, layer, sql):  # type: ignore[no-untyped-def]
    from dpsql.planner.measurable import measurable

    return measurable(con.session.compile(sql).compiled.plan.query, layer.config)


def test_calibration_and_reservation_do_not_depend_on_the_data(mm, people_frame: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    other = people_frame.sample(frac=0.5, random_state=3).reset_index(drop=True)
    one, two = mm(people_frame, seed=1, public_seed=11), mm(other, seed=2, public_seed=11)
    explain = "EXPLAIN SELECT COUNT(*) FROM people WHERE age > 30"
    assert run(one, explain)[0] == run(two, explain)[0]
    assert layer_of(one).calibration == layer_of(two).calibration
    run(one, "SELECT COUNT(*) FROM people")
    run(two, "SELECT COUNT(*) FROM people")
    assert one.ledger()[0].params == two.ledger()[0].params


def test_cost_of_knows_the_layer(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm()
    sql = "SELECT COUNT(*) FROM people WHERE age > 30"
    assert con.session.cost_of(sql).epsilon == 2  # the reservation, on first use
    run(con, sql)
    assert con.session.cost_of("SELECT COUNT(*) FROM people WHERE age > 31").epsilon == 0
    assert con.session.cost_of("SELECT SUM(age) FROM people").epsilon == Fraction(1, 10)


def test_render_names_the_kind_and_the_slots(mm) -> None:  # type: ignore[no-untyped-def]
    con = mm()
    cur = con.cursor()
    cur.execute("SELECT COUNT(*) FROM people WHERE age > 30")
    cur.execute("SELECT COUNT(*) FROM people WHERE age > 30")
    text = render_table(cur.result)
    assert "median mechanism: repeat" in text and "hard slot(s) left" in text


def test_no_warning_for_tables_without_a_layer(connect) -> None:  # type: ignore[no-untyped-def]
    con = connect()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _rows, info = run(con, "SELECT COUNT(*) FROM people")
    assert info[0]["mechanism"] == "laplace"
    assert con.session.median_mechanism.layer("people") is None
