"""Attacks (docs/trust-model.md), run end to end against dpsql.connect and the DuckDB engine.

Each test names the attack row it covers (A3, A4, A8 and the refusal channel of docs/privacy-model.md)
and would fail if the defence it checks were removed; the comments say how. The standing attack
suite is tests/security (one module per attack, A1-A15); the A6 and A7 blocks moved there, and
its modules import the helpers below.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import traceback
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
from sqlglot import exp

import dpsql
from dpsql.accounting.ledger import Ledger
from dpsql.backend.engines.duckdb_engine import bounded_name
from dpsql.demo.people import generate_people
from dpsql.errors import BudgetExhaustedError, EngineError, OperationalError, ProgrammingError

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
    for name in ("run", "ensure_bounded", "ensure_source", "run_public", "public_arrays"):
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
    ("SELECT CORR(age, income) FROM people", "DP109"),  # (MIN/MAX are answered now: approximate order statistics)
    ("SELECT ARG_MAX(person_id, income) FROM people", "DP109"),
    ("SELECT SUM(person_id) FROM people", "DP106"),
    ("SELECT person_id, COUNT(*) FROM people GROUP BY person_id", "DP107"),
    ("SELECT AVG(region) FROM people", "DP117"),
    ("SELECT SUM(CASE WHEN person_id = 42 THEN 'NaN'::DOUBLE END) FROM people", "DP115"),
    ("SELECT SUM(income / 0) FROM people", "DP115"),
    ("SELECT COUNT(*) FROM people WHERE error('x')", "DP113"),
    ("SELECT COUNT(*) FROM people WHERE random() > 0.5", "DP113"),
    ("SELECT COUNT(*) FROM people WHERE getenv('HOME') = ''", "DP113"),
    ("SELECT age FROM people UNION SELECT age FROM people", "DP126"),
    ("SELECT COUNT(*) FROM (SELECT * FROM people LIMIT 5)", "DP110"),
    ("SELECT COUNT(*) FROM secret.people", "DP103"),
    ("WITH x AS (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) SELECT x.n, p.age FROM x JOIN people p ON x.dept = p.dept",
     "DP126"),
    ("SELECT COUNT(*) FROM people p JOIN people q ON p.person_id = q.person_id", "DP137"),  # a self-join: its own code now
    ("WITH x AS (SELECT *, row_number() OVER () AS r FROM people) SELECT COUNT(*) FROM x WHERE r = 1", "DP110"),
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
    assert con.budget[0] < 1e-4  # the filter holds them at a hair under 0.3 (its delta share); nothing of 0.1 fits
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
    charged = 1
    try:
        rows = con.execute(sql).fetchall()
    except dpsql.Error as error:
        texts = exception_texts(error)
        assert SECRET not in texts and "123456" not in texts
        if getattr(error, "code", None) == "DP142":  # text read as a number: refused from the SQL alone, before the charge
            charged = 0
        else:
            assert isinstance(error, EngineError), error
    else:
        assert SECRET not in repr(rows)
    assert len(con.ledger()) == charged  # an engine failure is charged: never refunded (a refund is an oracle)


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
    from dpsql.backend.engines.duckdb_engine import DuckDBEngine
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
    policy, ledger, marker = policy_file(accountant="basic"), tmp_path / "ledger.sqlite", tmp_path / "engine-reached"  # exact sums
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
    # Replay off: each child repeats one statement, and every repeat must be a charge.
    policy, ledger, go = policy_file(epsilon=3.0, accountant="basic", replay_seconds=0), tmp_path / "ledger.sqlite", tmp_path / "go"
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


def test_query_only_engine_errors_are_refused_before_the_charge(connect, numeric_text_people) -> None:
    # An invalid regular expression fails whatever the data: a dry run on an empty table of the
    # same schema finds it, so the query is refused (DP123) and nothing is charged (DP123).
    con = connect(tables={"people": numeric_text_people}, random_seed=1)
    with pytest.raises(dpsql.errors.UnsupportedQueryError) as info:
        con.execute("SELECT COUNT(*) FROM people WHERE regexp_matches(region, '(')")
    assert info.value.code == "DP123"
    assert SECRET not in exception_texts(info.value)
    assert con.ledger() == []
