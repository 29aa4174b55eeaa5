"""Attacks from design/attacks.md, run end to end against dpsql.connect and the DuckDB engine.

Each test names the attack row it covers (A3, A4, A6, A7, A8 and the refusal channel of DESIGN
section 2) and would fail if the defence it checks were removed; the comments say how.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import traceback
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
from scipy import stats
from sqlglot import exp

import dpsql
from dpsql.accounting.ledger import Ledger
from dpsql.analysis.context import AnalysisContext
from dpsql.backend.duckdb_engine import DuckDBEngine, EngineResult, bounded_name
from dpsql.backend.files import write_duckdb
from dpsql.catalog.loader import load_policy
from dpsql.demo.people import generate_people
from dpsql.errors import BudgetExhaustedError, EngineError, OperationalError, ProgrammingError
from dpsql.ir.plan import release_name
from dpsql.ir.query import key_name
from dpsql.mechanisms import laplace
from dpsql.mechanisms.partition import PartitionSelectionSpec
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.execution.release import release_rows
from dpsql.session import Session
from tests.conftest import make_policy_text

SECRET = "Alice-Secret-42"
SECRET_INCOME = 123456.78  # a distinctive private number
SECRET_ID = 4242424


def exception_texts(error: BaseException) -> str:
    """Everything an analyst could read from an exception: str, repr, args, attributes, the
    formatted traceback and the whole __cause__/__context__ chain (suppressed or not)."""
    parts: list[str] = []
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        parts += [str(e), repr(e), repr(e.args), repr(getattr(e, "__notes__", None))]
        parts += [repr(v) for k, v in vars(e).items() if not k.startswith("__")] if hasattr(e, "__dict__") else []
        for name in ("message", "hint", "code", "sql", "requested", "remaining"):
            parts.append(repr(getattr(e, name, None)))
        stack += [e.__cause__, e.__context__]
    parts.append("".join(traceback.format_exception(error)))
    return "\n".join(parts)


def with_secret_person(frame: pd.DataFrame, rows: int = 3, **values: Any) -> pd.DataFrame:
    """`frame` plus one person (SECRET_ID) with `rows` rows holding the given column values."""
    base = {"person_id": SECRET_ID, "age": 44, "income": SECRET_INCOME, "dept": "sales", "region": SECRET}
    base.update(values)
    extra = pd.DataFrame({k: (v if isinstance(v, list) else [v] * rows) for k, v in base.items()})
    extra = extra.astype({"person_id": "int64", "age": "int64", "income": "float64"})
    return pd.concat([frame, extra], ignore_index=True)


def forbid_engine(con: dpsql.Connection, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every engine entry point of the connection fail the test; returns the calls seen."""
    calls: list[str] = []
    engine = con.session._engine
    for name in ("run", "ensure_bounded", "ensure_source", "postprocess", "run_public"):
        def refuse(*args: Any, _name: str = name, **kwargs: Any) -> None:
            calls.append(_name)
            raise AssertionError(f"the engine's {_name} ran for a query that must not read data")
        monkeypatch.setattr(engine, name, refuse)
    return calls


# --- refusals: raised before any charge, and their text carries no data -------------------------

REFUSED = [
    ("SELECT * FROM people", "DP104"),
    ("SELECT income FROM people", "DP105"),
    ("SELECT COUNT(*) FROM read_csv('people.csv')", "DP103"),
    ("SELECT COUNT(*) FROM 'people.parquet'", "DP103"),
    ("SELECT COUNT(*) FROM duckdb_tables()", "DP103"),
    ("SELECT COUNT(*) FROM nosuch", "DP103"),
    ("SELECT COUNT(nosuch) FROM people", "DP111"),
    ("CREATE TABLE t (x INT)", "DP102"),
    ("INSERT INTO people VALUES (1, 2, 3.0, 'a', 'b')", "DP102"),
    ("UPDATE people SET age = 1", "DP102"),
    ("DELETE FROM people", "DP102"),
    ("DROP TABLE people", "DP102"),
    ("COPY people TO 'out.csv'", "DP102"),
    ("ATTACH 'other.duckdb'", "DP102"),
    ("PRAGMA version", "DP102"),
    ("INSTALL httpfs", "DP102"),
    ("LOAD httpfs", "DP102"),
    ("SELECT COUNT(*) OVER () FROM people", "DP108"),
    ("SELECT MIN(age) FROM people", "DP109"),
    ("SELECT MAX(income) FROM people", "DP109"),
    ("SELECT SUM(person_id) FROM people", "DP106"),
    ("SELECT person_id, COUNT(*) FROM people GROUP BY person_id", "DP107"),
    ("SELECT AVG(region) FROM people", "DP117"),
    ("SELECT SUM(CASE WHEN person_id = 42 THEN 'NaN'::DOUBLE END) FROM people", "DP115"),
    ("SELECT SUM(income / 0) FROM people", "DP115"),
    ("SELECT COUNT(*) FROM people WHERE error('x')", "DP113"),
    ("SELECT COUNT(*) FROM people WHERE random() > 0.5", "DP113"),
    ("SELECT COUNT(*) FROM people WHERE getenv('HOME') = ''", "DP113"),
    ("SELECT COUNT(*) FROM people UNION SELECT COUNT(*) FROM people", "DP110"),
    ("SELECT COUNT(*) FROM (SELECT * FROM people)", "DP110"),
    ("SELECT COUNT(*) FROM people p JOIN people q ON p.person_id = q.person_id", "DP110"),
    ("WITH x AS (SELECT * FROM people) SELECT COUNT(*) FROM x", "DP110"),
    ("SELECT COUNT(*) FROM people; SELECT 1", "DP101"),
    ("SELEC COUNT(*) FROM people", "DP100"),
    ("SELECT COUNT(*) FROM people WHERE age > ?", "DP118"),
    ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = -1) COUNT(*) FROM people", "DP120"),
    ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0) COUNT(*) FROM people", "DP120"),
    ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 0) region, COUNT(*) FROM people GROUP BY region", "DP122"),
]


@pytest.fixture
def secret_people(people_frame: pd.DataFrame) -> pd.DataFrame:
    return with_secret_person(people_frame)


@pytest.mark.parametrize(("sql", "code"), REFUSED, ids=[c + ":" + s[:40] for s, c in REFUSED])
def test_refusal_raises_before_any_charge_or_engine_call(connect, secret_people, monkeypatch, sql: str, code: str) -> None:
    con = connect(tables={"people": secret_people}, random_seed=1)
    before = con.budget
    calls = forbid_engine(con, monkeypatch)
    with pytest.raises(ProgrammingError) as caught:
        con.execute(sql)
    assert caught.value.code == code
    assert con.ledger() == [] and con.budget == before and calls == []


@pytest.mark.parametrize(("sql", "code"), REFUSED, ids=[c + ":" + s[:40] for s, c in REFUSED])
def test_refusal_text_is_the_same_whatever_the_data(connect, people_frame, secret_people, sql: str, code: str) -> None:
    # A refusal depends on the query and the policy only: the same text on D (with a secret
    # person) and on D' (without), and no private value in anything the exception carries.
    texts = []
    for frame in (secret_people, people_frame):
        with pytest.raises(ProgrammingError) as caught:
            connect(tables={"people": frame}, random_seed=1).execute(sql)
        texts.append((str(caught.value), repr(caught.value)))
        everything = exception_texts(caught.value)
        assert SECRET not in everything and "123456" not in everything and str(SECRET_ID) not in everything
    assert texts[0] == texts[1]


# --- budget exhaustion (fail closed, engine never runs) ------------------------------------------


def test_budget_exhaustion_raises_before_the_engine_runs(connect, policy_file, monkeypatch) -> None:
    con = connect(policy_file(epsilon=0.3), random_seed=1)
    for _ in range(3):
        con.execute("SELECT COUNT(*) FROM people")  # 3 x 0.1 = 0.3 exactly (Fractions)
    assert con.budget[0] == 0.0
    calls = forbid_engine(con, monkeypatch)
    for sql in ("SELECT COUNT(*) FROM people",
                "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.000001) SUM(age) FROM people",
                "SELECT dept, AVG(income) FROM people GROUP BY dept"):
        with pytest.raises(BudgetExhaustedError) as caught:
            con.execute(sql)
        assert isinstance(caught.value, OperationalError) and caught.value.code == "DP200"
    assert calls == [] and len(con.ledger()) == 3


def test_a_single_query_over_the_budget_is_refused_and_nothing_is_recorded(connect, policy_file, monkeypatch) -> None:
    con = connect(policy_file(epsilon=1.0), random_seed=1)
    calls = forbid_engine(con, monkeypatch)
    with pytest.raises(BudgetExhaustedError):
        con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.0000001) COUNT(*) FROM people")
    assert calls == [] and con.ledger() == [] and con.budget == (1.0, 1e-5)


# --- A7: NaN and +-inf injected by one person ---------------------------------------------------

NAN_QUERIES = (
    "SELECT COUNT(*), COUNT(income), SUM(income), AVG(income), SUM(age) FROM people",
    "SELECT dept, COUNT(*), SUM(income), AVG(income) FROM people GROUP BY dept",
)
# Incomes of the injected person, as text cast to DOUBLE inside DuckDB. (A pandas NaN would
# arrive as NULL: DuckDB reads float NaN of a DataFrame as NULL, so real NaN needs a file.)
INJECTED = {
    "nan": ["nan"] * 10,
    "inf": ["inf"] * 10,
    "-inf": ["-inf"] * 10,
    "null": [None] * 10,
    "mixed": ["nan", "inf", "-inf", "1e308", "-1e308", "nan", "500001", "inf", "1e308", "1e308"],
}
SPREAD_DEPTS = ["sales", "hr", "legal", "engineering", "sales", "hr", "legal", "engineering", "sales", "hr"]


def people_database(path: Path, frame: pd.DataFrame, incomes: list[str | None] = ()) -> Path:
    """A DuckDB file with `frame` as table people, plus one person (SECRET_ID) with one row per
    entry of `incomes` (text such as 'nan' or 'inf' cast to DOUBLE by DuckDB), spread over depts."""
    write_duckdb(frame, path, "people")
    with duckdb.connect(str(path)) as con:
        for income, dept in zip(incomes, SPREAD_DEPTS):
            con.execute("INSERT INTO people VALUES (?, 44, CAST(? AS DOUBLE), ?, ?)", [SECRET_ID, income, dept, SECRET])
    return path


def raw_aggregates(policy_path: Path, database: Path, sql: str, seed: int = 987654321) -> tuple[CompiledQuery, dict]:
    """The exact pre-noise aggregates of `sql`: {group key: {release index: value}}."""
    policy = load_policy(policy_path)
    _, compiled = compile_statement(sql, None, AnalysisContext(policy, policy.budget.default_query))
    engine = DuckDBEngine(policy, database)
    try:
        engine.ensure_bounded(compiled.plan.query.table, seed)  # same bounding seed for D and D'
        raw = engine.run(compiled.engine)
    finally:
        engine.close()
    nkeys = len(compiled.plan.query.keys)
    index = {name: i for i, name in enumerate(raw.names)}
    out = {}
    for row in raw.rows:
        out[tuple(row[:nkeys])] = {r: row[index[release_name(r)]] for r in range(len(compiled.plan.releases))}
    return compiled, out


def test_injected_values_really_are_nan_and_inf(tmp_path: Path, people_frame: pd.DataFrame) -> None:
    path = people_database(tmp_path / "d.duckdb", people_frame, INJECTED["mixed"])
    with duckdb.connect(str(path), read_only=True) as con:
        values = [v for (v,) in con.execute("SELECT income FROM people WHERE person_id = ?", [SECRET_ID]).fetchall()]
    assert sum(math.isnan(v) for v in values) == 2 and values.count(math.inf) == 2 and values.count(-math.inf) == 1


@pytest.mark.parametrize("kind", list(INJECTED))
@pytest.mark.parametrize("sql", NAN_QUERIES)
def test_nan_and_inf_of_one_person_move_each_raw_aggregate_by_at_most_its_sensitivity(
    policy_file, people_frame, tmp_path: Path, kind: str, sql: str
) -> None:
    # D' = the people table; D = D' plus one person with 10 rows (over max_rows = 3) whose
    # incomes are NaN/inf/NULL/huge, spread over several departments. For every released raw
    # aggregate, the L1 distance between D and D' over all groups must stay within the planned
    # sensitivity (grid units), and every raw value must be an exact integer. This fails if NaN
    # reaches the sum (|NaN - x| <= s is false), if clamping or max_rows bounding is skipped
    # (10 x 500000 > 3 x 500000), or if a sensitivity is understated.
    policy = policy_file()
    compiled, raw_d = raw_aggregates(policy, people_database(tmp_path / "d.duckdb", people_frame, INJECTED[kind]), sql)
    _, raw_d2 = raw_aggregates(policy, people_database(tmp_path / "d2.duckdb", people_frame), sql)
    for r, release in enumerate(compiled.plan.releases):
        distance = 0
        for key in set(raw_d) | set(raw_d2):
            a, b = raw_d.get(key, {}).get(r) or 0, raw_d2.get(key, {}).get(r) or 0
            assert isinstance(a, int) and isinstance(b, int), (release, a, b)
            distance += abs(a - b)
        assert distance <= release.spec.sensitivity, (release.raw.kind, distance, release.spec.sensitivity)
    # NaN, +-inf and NULL are dropped before clamping (DESIGN 2): when all the person's values
    # are such, the sum of incomes does not move at all.
    if kind != "mixed" and not compiled.plan.query.keys:
        assert raw_d[()][2] == raw_d2[()][2]


def test_nan_output_is_impossible_end_to_end_and_noise_free_sums_differ_by_at_most_the_sensitivity(
    connect, policy_file, people_frame, tmp_path: Path, monkeypatch
) -> None:
    # The same check through dpsql.connect, with the Laplace draw replaced by the exact value.
    monkeypatch.setattr(laplace, "release", lambda spec, raw, rng: int(raw))
    policy = policy_file()
    sql = "SELECT SUM(income), AVG(income), COUNT(income) FROM people"
    outputs = []
    for name, incomes in (("d", INJECTED["mixed"]), ("d2", [])):
        con = connect(policy, database=people_database(tmp_path / f"{name}.duckdb", people_frame, incomes), random_seed=3)
        row = con.execute(sql).fetchone()
        assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in row), row
        outputs.append((row, con.ledger()[-1].params["releases"]))
    (row_d, releases), (row_d2, _) = outputs
    sum_sensitivity = Fraction(releases[0]["sensitivity"])  # value units: 3 x 500000
    assert sum_sensitivity == 1_500_000
    assert abs(Fraction(row_d[0]) - Fraction(row_d2[0])) <= sum_sensitivity
    assert abs(row_d[2] - row_d2[2]) <= 3


# --- A8: data-dependent engine errors -----------------------------------------------------------


@pytest.fixture
def numeric_text_people(people_frame: pd.DataFrame) -> pd.DataFrame:
    """Every region and dept is a number written as text, except the secret person's: a cast to
    INT then fails on the secret only, so an unsanitized engine message would quote it."""
    frame = people_frame.copy()
    frame["region"] = (frame["person_id"] % 5).astype(str)
    frame["dept"] = (frame["person_id"] % 7).astype(str)
    return with_secret_person(frame, region=SECRET, dept=SECRET)


LEAKY = (
    "SELECT COUNT(*) FROM people WHERE CAST(dept AS INT) = 1",
    "SELECT COUNT(*) FROM people WHERE CAST(region AS INTEGER) > 0",
    "SELECT COUNT(*) FROM people WHERE region::DATE > DATE '2000-01-01'",
    "SELECT SUM(income) FROM people WHERE CAST(region AS DOUBLE) / 0 > 1",
    "SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = 4242424 THEN CAST(region AS INT) ELSE 1 END = 1",
    "SELECT COUNT(*) FROM people WHERE CAST(region AS INT) + 9223372036854775807 > 0",
    "SELECT SUM(age) FROM people WHERE age * 9223372036854775807 > 0",
    "SELECT COUNT(*) FROM people WHERE sqrt(CAST(region AS DOUBLE) - 10) > 0",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, COUNT(*) AS n "
    "FROM people GROUP BY region HAVING CAST(region AS INT) >= 0 ORDER BY CAST(region AS INT)",
)


def test_raw_duckdb_would_quote_the_secret(numeric_text_people: pd.DataFrame) -> None:
    # Precondition of the next two tests: DuckDB's own message names the private value.
    with duckdb.connect() as con:
        con.register("people", numeric_text_people)
        with pytest.raises(duckdb.Error) as caught:
            con.execute("SELECT SUM(CAST(region AS INT)) FROM people").fetchall()
    assert SECRET in str(caught.value)


@pytest.mark.parametrize("sql", LEAKY)
def test_data_dependent_errors_answer_or_fail_without_quoting_data(connect, numeric_text_people, sql: str) -> None:
    con = connect(tables={"people": numeric_text_people}, random_seed=1)
    try:
        rows = con.execute(sql).fetchall()
    except dpsql.Error as error:
        assert isinstance(error, EngineError), error
        texts = exception_texts(error)
        assert SECRET not in texts and "123456" not in texts
    else:
        assert SECRET not in repr(rows)
    assert len(con.ledger()) == 1  # charged either way: never refunded (a refund is an oracle)


def test_engine_errors_are_sanitized_down_the_whole_exception_chain(connect, numeric_text_people) -> None:
    # Drive the engine boundary directly with SQL that fails on the secret value. The EngineError
    # must not keep DuckDB's exception, not even as the implicit __context__ that
    # `raise ... from None` still sets.
    con = connect(tables={"people": numeric_text_people}, random_seed=1)
    engine = con.session._engine
    table = con.session.policy.table("people")
    bounded = engine.ensure_bounded(table, 1)
    assert bounded == bounded_name(table)
    statement = exp.select(exp.Sum(this=exp.cast(exp.column("region", quoted=True), "INT"))).from_(
        exp.to_identifier(bounded, quoted=True)
    )
    with pytest.raises(EngineError) as caught:
        engine.run(statement)
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert SECRET not in exception_texts(caught.value)


# --- A4: a charge survives the process being killed between charge and result ---------------------

KILL_CHILD = textwrap.dedent(
    """
    import pathlib, sys, time
    import dpsql
    from dpsql.backend.duckdb_engine import DuckDBEngine
    from dpsql.demo.people import generate_people

    policy, ledger, marker = sys.argv[1:4]

    def stall(self, *args, **kwargs):
        pathlib.Path(marker).write_text("running")  # the engine is reached only after the charge
        time.sleep(600)

    DuckDBEngine.run = stall
    con = dpsql.connect(policy=policy, tables={"people": generate_people(300)}, ledger=ledger, analyst="alice")
    con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.7) COUNT(*) FROM people")
    print("the query finished, which the stalled engine should have prevented")
    """
)


def wait_for(path: Path, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"child exited early: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"timed out waiting for {path.name}")
        time.sleep(0.01)


def test_charge_persists_when_the_process_is_killed_before_the_result(policy_file, tmp_path: Path) -> None:
    policy, ledger, marker = policy_file(), tmp_path / "ledger.sqlite", tmp_path / "engine-reached"
    script = tmp_path / "child.py"
    script.write_text(KILL_CHILD)
    child = subprocess.Popen([sys.executable, str(script), str(policy), str(ledger), str(marker)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(marker, child)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    with Ledger(ledger) as led:
        entries = led.entries("alice")
    assert len(entries) == 1 and entries[0].cost.epsilon == Fraction(7, 10)
    con = dpsql.connect(policy=policy, tables={"people": generate_people(300)}, ledger=ledger, analyst="alice")
    try:
        assert con.budget[0] == pytest.approx(9.3, abs=1e-12)
    finally:
        con.close()


# --- A3: concurrent charges from two processes never overspend ------------------------------------

RACE_CHILD = textwrap.dedent(
    """
    import json, os, pathlib, sys, threading, time
    import dpsql
    from dpsql.demo.people import generate_people

    policy, ledger, go, ready = sys.argv[1:5]
    frame = generate_people(300)
    THREADS, PER_THREAD = 4, 50
    cons = [dpsql.connect(policy=policy, tables={"people": frame}, ledger=ledger, analyst="alice") for _ in range(THREADS)]
    counts = {"ok": 0, "exhausted": 0, "other": []}
    lock = threading.Lock()

    def work(con):
        for _ in range(PER_THREAD):
            try:
                con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) COUNT(*) FROM people").fetchall()
                key = "ok"
            except dpsql.BudgetExhaustedError:
                key = "exhausted"
            except Exception as error:
                with lock:
                    counts["other"].append(repr(error))
                continue
            with lock:
                counts[key] += 1

    pathlib.Path(ready).touch()
    while not pathlib.Path(go).exists():
        time.sleep(0.002)
    threads = [threading.Thread(target=work, args=(c,)) for c in cons]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(counts))
    """
)


def test_two_processes_of_200_charges_spend_exactly_the_budget(policy_file, tmp_path: Path) -> None:
    # Budget 3.0 at epsilon 0.01 per query: exactly 300 of the 400 charges fit (exact Fractions).
    policy, ledger, go = policy_file(epsilon=3.0), tmp_path / "ledger.sqlite", tmp_path / "go"
    Ledger(ledger).close()  # create the schema once, before the race
    script = tmp_path / "race.py"
    script.write_text(RACE_CHILD)
    readies = [tmp_path / f"ready{i}" for i in range(2)]
    children = [subprocess.Popen([sys.executable, str(script), str(policy), str(ledger), str(go), str(r)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in readies]
    try:
        for ready, child in zip(readies, children):
            wait_for(ready, child)
        go.touch()
        results = []
        for child in children:
            out, err = child.communicate(timeout=300)
            assert child.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert [r["other"] for r in results] == [[], []]
    assert sum(r["ok"] for r in results) == 300
    assert sum(r["exhausted"] for r in results) == 100
    with Ledger(ledger) as led:
        entries = led.entries("alice")
        assert len(entries) == 300 and led.spent("alice").epsilon == Fraction(3)


# --- A6: a private-domain key held by one person is released with probability <= delta -----------
#
# Hypothesis H0 (what the partition selection claims): a GROUP BY key present only because of
# one person, who keeps 1 row, is released with probability p <= delta. With eps = 1, delta =
# 0.05 and max_groups = 2 the noise on person counts is discrete Laplace of scale 2, and the
# implementation's threshold t satisfies max_groups * P(X >= t - 1) <= delta, so the exact
# release probability of the unique key is p0 = P(X >= t - 1) = q^(t-1) / (1 + q), q = e^(-1/2).
# p0 is about 0.019, well below delta = 0.05, so N trials estimate it sharply: with N = 20,000
# the one-sided Clopper-Pearson upper bound at confidence 1 - 1e-6 lands near 0.024.
# Negative control: a threshold lowered to 3 releases the key with P(X >= 2) ~ 0.23, and the
# same check then fails (its lower bound is far above delta).

DELTA = 0.05
UNIQUE = "Zyx-Unique-Region"
SELECT_REGIONS = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = {DELTA}) region FROM people GROUP BY region"
CONFIDENCE_ALPHA = 1e-6


def clopper_pearson(hits: int, n: int, alpha: float = CONFIDENCE_ALPHA) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds, each holding with probability >= 1 - alpha."""
    lower = 0.0 if hits == 0 else float(stats.beta.ppf(alpha, hits, n - hits + 1))
    upper = 1.0 if hits == n else float(stats.beta.ppf(1 - alpha, hits + 1, n - hits))
    return lower, upper


def upper_tail(scale: Fraction, k: int) -> float:
    """P(X >= k) for X discrete Laplace of `scale`, k >= 0: q^k / (1 + q), q = e^(-1/scale)."""
    q = math.exp(-1 / float(scale))
    return q**k / (1 + q)


@pytest.fixture(scope="module")
def selection_setup(tmp_path_factory) -> Iterator[tuple[Any, DuckDBEngine, CompiledQuery, EngineResult]]:
    path = tmp_path_factory.mktemp("selection") / "policy.toml"
    path.write_text(make_policy_text(delta=0.5))
    policy = load_policy(path)
    frame = with_secret_person(generate_people(400, seed=99), rows=1, region=UNIQUE)
    engine = DuckDBEngine(policy, None, {"people": frame})
    _, compiled = compile_statement(SELECT_REGIONS, None, AnalysisContext(policy, policy.budget.default_query))
    engine.ensure_bounded(compiled.plan.query.table, 1)
    raw = engine.run(compiled.engine, {"seed": 1})
    yield policy, engine, compiled, raw
    engine.close()


def unique_key_hits_by_release(compiled: CompiledQuery, raw: EngineResult, seeds: range) -> int:
    hits = 0
    for seed in seeds:
        columns, _ = release_rows(compiled, raw, SeededRandomSource(seed))
        hits += UNIQUE in columns[key_name(0)]
    return hits


def unique_key_hits_by_sql(policy: Any, engine: DuckDBEngine, seeds: range) -> int:
    hits = 0
    for seed in seeds:
        session = Session(policy, engine, Ledger(None), rng=SeededRandomSource(seed))  # a fresh budget per trial
        keys = {row[0] for row in session.execute(SELECT_REGIONS).rows}
        assert keys <= {"north", "south", "east", "west", "central", UNIQUE}
        hits += UNIQUE in keys
    return hits


def test_selection_threshold_meets_delta_and_is_tight(selection_setup) -> None:
    _, _, compiled, raw = selection_setup
    spec = compiled.plan.selection
    assert spec is not None and spec.max_groups == 2 and spec.epsilon == 1 and spec.scale == 2
    t = spec.threshold
    assert spec.max_groups * upper_tail(spec.scale, t - 1) <= DELTA < spec.max_groups * upper_tail(spec.scale, t - 2)
    # The engine's person count of the unique key is 1 and does not depend on the selection seed
    # (every person here has one region), so the release step alone decides what is released.
    units = {row[0]: row[-1] for row in raw.rows}
    assert units[UNIQUE] == 1
    other = DuckDBEngine.run(selection_setup[1], compiled.engine, {"seed": 2})
    assert sorted(other.rows) == sorted(raw.rows)


def test_unique_private_key_is_released_with_probability_at_most_delta(selection_setup) -> None:
    _, _, compiled, raw = selection_setup
    n = 20_000
    hits = unique_key_hits_by_release(compiled, raw, range(n))
    lower, upper = clopper_pearson(hits, n)
    assert upper <= DELTA, (hits, n, upper)
    # Sharper: the rate matches the exact p0 (two-sided, 2e-6 in all), so the per-key bound
    # delta / max_groups of the partition-selection analysis holds too.
    p0 = upper_tail(compiled.plan.selection.scale, compiled.plan.selection.threshold - 1)
    assert lower <= p0 <= upper, (hits, n, p0)


def test_unique_private_key_through_the_sql_path_matches_the_release_step(selection_setup) -> None:
    # The whole session path (compile, charge, engine with a fresh selection seed, release, post-
    # processing): 300 trials, each a fresh Session with its own seeded source and ledger. The
    # release count must be consistent with p0 (two-sided binomial test at 1e-6) and show no
    # evidence of exceeding delta.
    policy, engine, compiled, _ = selection_setup
    n = 300
    hits = unique_key_hits_by_sql(policy, engine, range(10**6, 10**6 + n))
    p0 = upper_tail(compiled.plan.selection.scale, compiled.plan.selection.threshold - 1)
    assert stats.binomtest(hits, n, p0).pvalue > CONFIDENCE_ALPHA, (hits, n, p0)
    assert clopper_pearson(hits, n)[0] <= DELTA


def test_negative_control_a_lowered_threshold_is_detected(selection_setup, monkeypatch) -> None:
    policy, engine, compiled, raw = selection_setup
    monkeypatch.setattr(PartitionSelectionSpec, "threshold", property(lambda self: 3))
    n = 2_000
    hits = unique_key_hits_by_release(compiled, raw, range(n))
    lower, upper = clopper_pearson(hits, n)
    assert upper > DELTA  # the main check above would fail
    assert lower > DELTA  # and confidently: released with probability ~0.23 > delta
    hits = unique_key_hits_by_sql(policy, engine, range(10**6, 10**6 + 150))
    assert clopper_pearson(hits, 150)[0] > DELTA  # detected through the SQL path too


def test_query_only_engine_errors_are_refused_before_the_charge(connect, numeric_text_people) -> None:
    # An invalid regular expression fails whatever the data: a dry run on an empty table of the
    # same schema finds it, so the query is refused (DP123) and nothing is charged (DESIGN 7).
    con = connect(tables={"people": numeric_text_people}, random_seed=1)
    with pytest.raises(dpsql.errors.UnsupportedQueryError) as info:
        con.execute("SELECT COUNT(*) FROM people WHERE regexp_matches(region, '(')")
    assert info.value.code == "DP123"
    assert SECRET not in exception_texts(info.value)
    assert con.ledger() == []
