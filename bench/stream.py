"""A stream of different queries, not one query repeated: what an analyst or a dashboard pays.

    python bench/stream.py                                  # 1M rows; histories 0, 1,000, 10,000; all three parts
    python bench/stream.py --parts a --histories 0 1000     # the analyst stream only
    python bench/stream.py --parts b c                      # the dashboard and the command line

Run by hand, not a test (bench/README.md). Every number printed is measured in this run, in this
process (time.perf_counter):

(a) analyst stream: STREAM_QUERIES (200) distinct queries: counts, sums, averages, groupings on a
    public domain, on a key without one (partition selection), on age decades and hiring years,
    MEDIAN, QUANTILE, IQR and MODE, Gaussian noise, ci95 targets, post-processing (ORDER BY
    ... LIMIT, HAVING, outer queries, UNION ALL) and joins with the public `depts` table, each
    with its own epsilon. They go to a fresh dpsql.connect() on a SQLite ledger file that already
    holds --histories prior charges of the analyst (mixed kinds: Laplace, Gaussian, partition
    selection, exponential mechanism; written through Ledger.charge before the clock starts).
    Raw DuckDB runs the same queries (privacy options removed, MEDIAN as quantile_disc, ...) once
    each on an in-memory table loaded from the same Parquet file.
(b) dashboard: DASHBOARD (12 tiles: time buckets, top-N, totals, a filter, as Superset sends them)
    through `dpsql serve` (started in this process), from 4 concurrent psycopg connections: the
    first load (connect + every tile) and a repeated load, wall time; raw DuckDB runs the tiles
    from 4 threads with a connection each.
(c) `dpsql -c` cold: a fresh interpreter answering one query on the cached demo (a copy of the
    demo cache, so the user's is never touched), and `import dpsql` in a fresh interpreter.

dpsql's own time per query = total - engine, where engine is the time spent inside the engine's
statements over private data (Engine.run, Engine.arrow, Engine.private_arrays: the aggregates and
robust reads) and build the time its bounded and keyed relations take (Engine.ensure_bounded,
Engine.ensure_keyed, and waiting for the relation prepared since connect, including a dry run's
wait for the engine's lock while that relation is built). Both are measured by
wrapping those methods in this process (dpsql is not changed); a session's own time is
everything else: parsing, analysis, planning, dry runs, the charge, noise, post-processing.
Own CPU is the same split in the executing thread's CPU time (time.thread_time): on a machine
loaded by other processes, wall time is several times CPU time for everything, so compare CPU
figures, or wall-time ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import dpsql  # noqa: E402
from bench.overhead import ROWS_PER_PERSON, log, source_state, sql_string  # noqa: E402
from dpsql.accounting.cost import PrivacyCost  # noqa: E402
from dpsql.accounting.ledger import Ledger  # noqa: E402
from dpsql.backend.engines.engine import Engine  # noqa: E402
from dpsql.demo.people import DEFAULT_SEED, DEPTS, PARQUET_NAME, POLICY_NAME, REGIONS, generate_people, policy_text  # noqa: E402
from dpsql.execution.engine_calls import EngineCalls  # noqa: E402
from dpsql.session import Session  # noqa: E402

HERE = Path(__file__).resolve().parent
ANALYST = "bench"
PASSWORD = "bench-pw"
STREAM_QUERIES = 200
HIRED = ("2015-01-01", "2024-12-31")
DEPTS_NAME = "depts.parquet"


# --- data ------------------------------------------------------------------------------------------

def ensure_data(data_dir: Path, rows: int, budget: tuple[str, str], accountant: str | None = None) -> tuple[Path, Path]:
    """people.parquet (the demo generator with persons above max_rows, plus a per-person hiring
    date), depts.parquet (public) and policy.toml, generated once per size and cached."""
    directory = data_dir / f"stream-{rows}"
    parquet, policy, stamp = directory / PARQUET_NAME, directory / POLICY_NAME, directory / "stamp.json"
    meta = {"rows": rows, "seed": DEFAULT_SEED, "rows_per_person": {str(k): v for k, v in ROWS_PER_PERSON.items()}, "hired": list(HIRED)}
    directory.mkdir(parents=True, exist_ok=True)
    if not (parquet.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == meta):
        import numpy as np
        import pandas as pd

        from dpsql.backend.auxiliary.files import write_parquet

        started = time.perf_counter()
        people = generate_people(rows, seed=DEFAULT_SEED, rows_per_person=ROWS_PER_PERSON)
        # Synthetic data, not noise: a seeded generator. One hiring date per person.
        days = (pd.Timestamp(HIRED[1]) - pd.Timestamp(HIRED[0])).days + 1
        by_person = np.random.default_rng(DEFAULT_SEED + 1).integers(0, days, int(people["person_id"].max()) + 1)
        people["hired"] = pd.Series(np.datetime64(HIRED[0], "D") + by_person[people["person_id"].to_numpy()]).dt.date
        write_parquet(people, parquet)
        write_parquet(pd.DataFrame({"name": list(DEPTS), "floor": [i % 4 + 1 for i in range(len(DEPTS))]}), directory / DEPTS_NAME)
        stamp.write_text(json.dumps(meta))
        log(f"  generated {rows:,} rows -> {parquet} [{time.perf_counter() - started:.1f}s]")
    else:
        log(f"  reusing {parquet} ({parquet.stat().st_size / 2**20:.1f} MiB)")
    text = policy_text(source=PARQUET_NAME)
    text = text.replace("epsilon = 10.0 ", f"epsilon = {budget[0]} ", 1).replace("delta = 1e-5 ", f"delta = {budget[1]} ", 1)
    if accountant is not None:
        text = text.replace("[budget]", f'[budget]\naccountant = "{accountant}"', 1)
    text = text.replace('region    = { type = "text" }',
                        f'region    = {{ type = "text" }}\nhired     = {{ type = "date", lower = {HIRED[0]}, upper = {HIRED[1]} }}', 1)
    text += (f'\n[tables.depts]\npublic = true\nsource = "{DEPTS_NAME}"\n[tables.depts.columns]\nname = {{ type = "text" }}\n'
             f'floor = {{ type = "int" }}\n\n[analysts.{ANALYST}]\npassword = "{_verifier()}"\n')
    assert "hired" in text and f"epsilon = {budget[0]}" in text, "the demo policy text changed: update ensure_data"
    policy.write_text(text, encoding="utf-8")
    return parquet, policy


def _verifier() -> str:
    from dpsql.server.scram import make_verifier

    return make_verifier(PASSWORD)


def raw_connection(directory: Path) -> tuple[duckdb.DuckDBPyConnection, float]:
    """An in-memory DuckDB holding people (and depts, also as public.*): (connection, load seconds)."""
    con = duckdb.connect(":memory:")
    started = time.perf_counter()
    con.execute(f"CREATE TABLE people AS SELECT * FROM read_parquet({sql_string(str(directory / PARQUET_NAME))})")
    load = time.perf_counter() - started
    con.execute(f"CREATE TABLE depts AS SELECT * FROM read_parquet({sql_string(str(directory / DEPTS_NAME))})")
    con.execute("CREATE SCHEMA IF NOT EXISTS public")
    con.execute("CREATE VIEW public.people AS SELECT * FROM main.people")
    return con, load


# --- the analyst stream ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Query:
    kind: str
    dp: str
    raw: str


def _filters(rng: random.Random) -> tuple[str, str]:
    """(a WHERE clause or '', the same for raw DuckDB)."""
    choice = rng.randrange(6)
    if choice == 0:
        return "", ""
    if choice == 1:
        clause = f"WHERE age > {rng.randrange(20, 70)}"
    elif choice == 2:
        clause = f"WHERE dept = '{rng.choice(DEPTS)}'"
    elif choice == 3:
        clause = f"WHERE region IN ('{rng.choice(REGIONS)}', '{rng.choice(REGIONS)}')"
    elif choice == 4:
        low = rng.randrange(10, 80) * 1000
        clause = f"WHERE income BETWEEN {low} AND {low + rng.randrange(20, 200) * 1000}"
    else:
        clause = f"WHERE hired >= DATE '{rng.randrange(2015, 2024)}-01-01'"
    return clause, clause


def stream_queries(count: int, seed: int = 7) -> list[Query]:  # noqa: C901 - a workload generator: one branch per query kind
    """`count` distinct queries of mixed kinds, each with its own epsilon (a seeded, public workload)."""
    rng = random.Random(seed)
    out: list[Query] = []
    seen: set[str] = set()
    used: set[str] = set()

    def eps() -> str:
        while True:
            value = f"{rng.uniform(0.02, 0.5):.3f}"
            if value not in used:
                used.add(value)
                return value

    def opts(extra: str = "") -> str:
        return f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {eps()}{extra}) "

    shapes: list[Callable[[], Query]] = []

    def count_q() -> Query:
        where, raw_where = _filters(rng)
        return Query("count", f"{opts()}COUNT(*) FROM people {where}", f"SELECT COUNT(*) FROM people {raw_where}")

    def sum_avg() -> Query:
        where, raw_where = _filters(rng)
        agg = rng.choice(["SUM(income)", "AVG(income)", "AVG(age)", "COUNT(*), AVG(income)", "SUM(age), COUNT(*)"])
        return Query("sum/avg", f"{opts()}{agg} FROM people {where}", f"SELECT {agg} FROM people {raw_where}")

    def by_dept() -> Query:
        where, raw_where = _filters(rng)
        agg = rng.choice(["COUNT(*)", "AVG(income)", "COUNT(*), AVG(income)", "SUM(income)"])
        return Query("group public", f"{opts()}dept, {agg} FROM people {where} GROUP BY dept",
                     f"SELECT dept, {agg} FROM people {raw_where} GROUP BY dept")

    def by_region() -> Query:
        where, raw_where = _filters(rng)
        agg = rng.choice(["COUNT(*)", "SUM(income)", "AVG(age)"])
        return Query("partition selection", f"{opts(', delta = 1e-7')}region, {agg} FROM people {where} GROUP BY region",
                     f"SELECT region, {agg} FROM people {raw_where} GROUP BY region")

    def by_decade() -> Query:
        where, raw_where = _filters(rng)
        return Query("group derived", f"{opts()}age // 10 * 10 AS decade, COUNT(*) FROM people {where} GROUP BY 1",
                     f"SELECT age // 10 * 10 AS decade, COUNT(*) FROM people {raw_where} GROUP BY 1")

    def by_year() -> Query:
        where, raw_where = _filters(rng)
        unit = rng.choice(["year", "month"])
        return Query("time buckets", f"{opts()}date_trunc('{unit}', hired) AS t, COUNT(*) FROM people {where} GROUP BY 1",
                     f"SELECT date_trunc('{unit}', hired) AS t, COUNT(*) FROM people {raw_where} GROUP BY 1")

    def robust() -> Query:
        where, raw_where = _filters(rng)
        q = rng.choice([0.1, 0.25, 0.75, 0.9, 0.95])
        dp, raw = rng.choice([("MEDIAN(income)", "quantile_disc(income, 0.5)"), ("MEDIAN(age)", "quantile_disc(age, 0.5)"),
                              (f"QUANTILE(income, {q})", f"quantile_disc(income, {q})"),
                              ("IQR(income)", "quantile_disc(income, 0.75) - quantile_disc(income, 0.25)"),
                              ("MODE(dept)", "mode(dept)"), ("MODE(region)", "mode(region)")])
        return Query("robust", f"{opts(', delta = 1e-7')}{dp} FROM people {where}", f"SELECT {raw} FROM people {raw_where}")

    def gaussian() -> Query:
        where, raw_where = _filters(rng)
        return Query("gaussian", f"{opts(', delta = 1e-8, noise = ' + chr(39) + 'gaussian' + chr(39))}dept, COUNT(*) FROM people {where} GROUP BY dept",
                     f"SELECT dept, COUNT(*) FROM people {raw_where} GROUP BY dept")

    def ci95() -> Query:
        where, raw_where = _filters(rng)
        target = rng.randrange(50, 2000)
        return Query("ci95", f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (ci95 = {target}) COUNT(*) FROM people {where}",
                     f"SELECT COUNT(*) FROM people {raw_where}")

    def post() -> Query:
        where, raw_where = _filters(rng)
        k = rng.randrange(2, 8)
        choice = rng.randrange(4)
        if choice == 0:
            body = f"dept, COUNT(*) AS n FROM people {{w}} GROUP BY dept ORDER BY n DESC LIMIT {k}"
        elif choice == 1:
            body = f"dept, AVG(income) AS a FROM people {{w}} GROUP BY dept HAVING COUNT(*) > {rng.randrange(100, 5000)}"
        elif choice == 2:
            body = "SUM(income) / COUNT(*) AS mean, COUNT(*) * 2 AS twice FROM people {w}"
        else:
            inner, above = "SELECT dept, COUNT(*) AS n FROM people {w} GROUP BY dept", rng.randrange(100, 3000)
            return Query("post-processing", f"{opts()}* FROM ({inner.format(w=where)}) t WHERE n > {above} ORDER BY n DESC",
                         f"SELECT * FROM ({inner.format(w=raw_where)}) t WHERE n > {above} ORDER BY n DESC")
        return Query("post-processing", f"{opts()}{body.format(w=where)}", f"SELECT {body.format(w=raw_where)}")

    def union() -> Query:
        age = rng.randrange(25, 70)
        dp = (f"SELECT 'all' AS k, COUNT(*) AS n FROM people UNION ALL "
              f"SELECT 'older than {age}', COUNT(*) FROM people WHERE age > {age}")
        return Query("union", dp, dp)

    def join() -> Query:
        where, raw_where = _filters(rng)
        where = raw_where = where.replace("WHERE ", "WHERE p.")  # one column, qualified
        agg = rng.choice(["COUNT(*)", "COUNT(*), AVG(p.income)", "SUM(p.income)"])
        return Query("public join", f"{opts()}d.floor, {agg} FROM people p JOIN depts d ON p.dept = d.name {where} GROUP BY d.floor",
                     f"SELECT d.floor, {agg} FROM people p JOIN depts d ON p.dept = d.name {raw_where} GROUP BY d.floor")

    shapes = [count_q, count_q, sum_avg, sum_avg, by_dept, by_dept, by_region, by_decade, by_year, robust, robust,
              gaussian, ci95, post, post, union, join, join]
    while len(out) < count:
        query = rng.choice(shapes)()
        if query.dp in seen:
            continue
        seen.add(query.dp)
        out.append(query)
    return out


# --- timing dpsql's engine work (this process only) ----------------------------------------------------

class EngineClock:
    """Time inside the engine's statements over private data, per thread, by wrapping methods."""

    ENGINE = ("run", "arrow", "private_arrays")
    BUILD = ("ensure_bounded", "ensure_keyed")

    def __init__(self) -> None:
        self.local = threading.local()
        self.records: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        for name in self.ENGINE:
            setattr(Engine, name, self._wrap(getattr(Engine, name), "engine"))
        for name in self.BUILD:
            setattr(Engine, name, self._wrap(getattr(Engine, name), "build"))
        EngineCalls._wait = self._wrap(EngineCalls._wait, "build")  # type: ignore[method-assign]
        Engine.dry_run = self._waiting(Engine.dry_run)  # type: ignore[method-assign]
        Session.execute = self._session(Session.execute)  # type: ignore[method-assign]

    def _state(self) -> dict[str, float]:
        state = getattr(self.local, "state", None)
        if state is None:
            state = self.local.state = {"engine": 0.0, "build": 0.0, "depth": 0, "engine_cpu": 0.0}
        return state

    def _wrap(self, fn: Callable[..., Any], kind: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            state = self._state()
            if state["depth"]:  # only the outermost engine call counts (ensure_keyed builds the bounded one)
                return fn(*args, **kwargs)
            state["depth"] += 1
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                state[kind] += time.perf_counter() - started
                state["engine_cpu"] += time.thread_time() - cpu  # this thread's CPU in the engine and builds
                state["depth"] -= 1
        return timed

    def _waiting(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A dry run first takes the engine's lock, which the relation being built in the background
        since connect holds: the first query's wait for it is build time, not dpsql's own."""
        def dry_run(engine: Any, *args: Any, **kwargs: Any) -> Any:
            state = self._state()
            started = time.perf_counter()
            with engine._lock:  # re-entrant: the dry run takes it again
                if not state["depth"]:
                    state["build"] += time.perf_counter() - started
                return fn(engine, *args, **kwargs)
        return dry_run

    def _session(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def execute(session: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
            state = self._state()
            state["engine"] = state["build"] = state["engine_cpu"] = 0.0
            started, cpu = time.perf_counter(), time.thread_time()
            ok = False
            try:
                result = fn(session, sql, *args, **kwargs)
                ok = True
                return result
            finally:
                with self.lock:
                    # own_cpu: this thread's CPU outside the engine and builds (robust to a loaded
                    # machine, where wall time is several times CPU time for every process).
                    self.records.append({"sql": sql, "server": time.perf_counter() - started, "engine": state["engine"],
                                         "build": state["build"], "ok": ok,
                                         "own_cpu": time.thread_time() - cpu - state["engine_cpu"]})
        return execute

    def take(self) -> list[dict[str, Any]]:
        with self.lock:
            out, self.records = self.records, []
        return out


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


# --- prior charges ---------------------------------------------------------------------------------------

PRIOR_SHAPES = (
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {e}) COUNT(*) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {e}) dept, AVG(income) FROM people GROUP BY dept",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {e}, delta = 1e-9, noise = 'gaussian') COUNT(*) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {e}, delta = 1e-8) region, COUNT(*) FROM people GROUP BY region",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {e}) MEDIAN(income) FROM people",
)


def prior_costs(policy: Path, kinds: int = 60) -> list[tuple[str, PrivacyCost]]:
    """Costs of real compiled queries (mixed kinds, epsilons 0.001-0.02): no data read, nothing charged."""
    rng = random.Random(11)
    con = dpsql.connect(policy=policy, ledger=":memory:", prepare=False)
    out = []
    try:
        for i in range(kinds):
            sql = PRIOR_SHAPES[i % len(PRIOR_SHAPES)].format(e=f"{rng.uniform(0.001, 0.02):.4f}")
            out.append((sql, con.session.cost_of(sql)))
    finally:
        con.close()
    return out


def prefill(path: Path, count: int, costs: list[tuple[str, PrivacyCost]]) -> float:
    """`count` prior charges of ANALYST through Ledger.charge (basic accountant, a budget that fits
    them all: the rows are what any accountant later composes). Seconds taken."""
    started = time.perf_counter()
    huge = PrivacyCost(Fraction(10**9), Fraction(1, 2))
    with Ledger(path) as ledger:
        for i in range(count):
            sql, cost = costs[i % len(costs)]
            ledger.charge(analyst=ANALYST, session="prefill", query=sql, plan_hash=f"{i % len(costs):016x}", mechanism="prefill",
                          params={"losses": [loss.record() for loss in cost.losses]}, cost=cost, budget=huge, accountant="basic")
    return time.perf_counter() - started


# --- (a) ---------------------------------------------------------------------------------------------------

def part_a(directory: Path, policy: Path, histories: list[int], clock: EngineClock, ledger_dir: Path) -> None:
    queries = stream_queries(STREAM_QUERIES)
    kinds: dict[str, int] = {}
    for q in queries:
        kinds[q.kind] = kinds.get(q.kind, 0) + 1
    log(f"\n== (a) analyst stream: {len(queries)} distinct queries ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")
    raw, load = raw_connection(directory)
    raw_times = []
    for q in queries:
        started = time.perf_counter()
        raw.execute(q.raw).fetchall()
        raw_times.append(time.perf_counter() - started)
    raw.close()
    raw_total = sum(raw_times)
    log(f"raw DuckDB: load {ms(load)} ms, stream {ms(raw_total)} ms (p50 {ms(pct(raw_times, 50))}, p95 {ms(pct(raw_times, 95))} ms per query)")
    costs = prior_costs(policy)
    log("history  prefill s  connect ms  first ms  total ms  engine ms  build ms  own p50  own p95  own max  refused  "
        "stream/raw  (stream+connect)/(raw+load)  own CPU p50  own CPU p95")
    for history in histories:
        path = ledger_dir / f"ledger-{history}.sqlite"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        filled = prefill(path, history, costs)
        clock.take()
        started = time.perf_counter()
        con = dpsql.connect(policy=policy, ledger=str(path), analyst=ANALYST)
        connected = time.perf_counter() - started
        totals, errors = [], []
        for q in queries:
            t = time.perf_counter()
            try:
                con.execute(q.dp).fetchall()
            except dpsql.Error as error:
                errors.append(f"{type(error).__name__}: {str(error).splitlines()[0][:120]} <- {q.dp}")
            totals.append(time.perf_counter() - t)
        con.close()
        records = clock.take()
        assert len(records) == len(queries), (len(records), len(queries))
        engine = [r["engine"] for r in records]
        build = [r["build"] for r in records]
        own = [total - r["engine"] - r["build"] for total, r in zip(totals, records)]
        own_cpu = [r["own_cpu"] for r in records]
        total = sum(totals)
        log(f"{history:>7}  {filled:>9.1f}  {ms(connected):>10}  {ms(totals[0]):>8}  {ms(total):>8}  {ms(sum(engine)):>9}  "
            f"{ms(sum(build)):>8}  {ms(pct(own, 50)):>7}  {ms(pct(own, 95)):>7}  {ms(max(own)):>7}  {len(errors):>7}  "
            f"{total / raw_total:>9.1f}x  {(total + connected) / (raw_total + load):>9.1f}x  {ms(pct(own_cpu, 50)):>11}  "
            f"{ms(pct(own_cpu, 95)):>11}")
        slow = sorted(zip(own, queries), key=lambda x: -x[0])[:3]
        log("         slowest own: " + "; ".join(f"{ms(o)} ms {q.kind}" for o, q in slow))
        by_kind: dict[str, list[float]] = {}
        for o, q in zip(own, queries):
            by_kind.setdefault(q.kind, []).append(o)
        log("         own p50 by kind (ms): " + ", ".join(f"{k} {ms(pct(v, 50))}" for k, v in sorted(by_kind.items())))
        for line in errors[:5]:
            log(f"         refused/failed: {line}")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


# --- (b) ---------------------------------------------------------------------------------------------------

DASHBOARD = (
    "SELECT dept AS dept, COUNT(*) AS count FROM public.people GROUP BY dept LIMIT 100",
    "SELECT DATE_TRUNC('MONTH', hired) AS hired, COUNT(*) AS count FROM public.people GROUP BY DATE_TRUNC('MONTH', hired) LIMIT 1000",
    "SELECT DATE_TRUNC('YEAR', hired) AS hired, AVG(income) AS \"AVG(income)\" FROM public.people GROUP BY DATE_TRUNC('YEAR', hired) LIMIT 1000",
    "SELECT COUNT(*) AS count FROM public.people LIMIT 50000",
    "SELECT AVG(income) AS \"AVG(income)\" FROM public.people LIMIT 50000",
    "SELECT region AS region, COUNT(*) AS count FROM public.people GROUP BY region ORDER BY count DESC LIMIT 5",
    "SELECT dept AS dept, COUNT(*) AS count FROM public.people WHERE region IN ('north') GROUP BY dept LIMIT 100",
    "SELECT region AS region, SUM(income) AS \"SUM(income)\" FROM public.people GROUP BY region ORDER BY \"SUM(income)\" DESC LIMIT 100",
    "SELECT dept AS dept, COUNT(*) AS count, AVG(age) AS \"AVG(age)\" FROM public.people GROUP BY dept ORDER BY count DESC LIMIT 10",
    "SELECT age // 10 * 10 AS decade, COUNT(*) AS count FROM public.people GROUP BY age // 10 * 10 LIMIT 100",
    "SELECT dept AS dept, max(income) AS \"MAX(income)\" FROM public.people GROUP BY dept LIMIT 100",
    "SELECT DATE_TRUNC('MONTH', hired) AS hired, COUNT(*) AS count FROM public.people WHERE dept IN ('sales', 'engineering') "
    "GROUP BY DATE_TRUNC('MONTH', hired) LIMIT 1000",
)


def _load(tiles: tuple[str, ...], workers: list[Callable[[str], None]]) -> tuple[float, list[tuple[str, float, str | None]]]:
    """Every tile once, taken from one queue by the workers (one thread each): (wall, per tile)."""
    work: queue.Queue[str] = queue.Queue()
    for tile in tiles:
        work.put(tile)
    done: list[tuple[str, float, str | None]] = []
    lock = threading.Lock()

    def worker(run: Callable[[str], None]) -> None:
        while True:
            try:
                sql = work.get_nowait()
            except queue.Empty:
                return
            started = time.perf_counter()
            error = None
            try:
                run(sql)
            except Exception as exc:  # noqa: BLE001 - reported, a benchmark keeps going
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            with lock:
                done.append((sql, time.perf_counter() - started, error))

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started, done


def part_b(directory: Path, policy: Path, clock: EngineClock, ledger_dir: Path, connections: int) -> None:
    import psycopg

    from dpsql.server.transport import ServerConfig, ServerThread

    log(f"\n== (b) dashboard: {len(DASHBOARD)} tiles through dpsql serve, {connections} concurrent psycopg connections")
    raws = [raw_connection(directory)[0] for _ in range(connections)]
    raw_first, _ = _load(DASHBOARD, [lambda sql, c=c: c.execute(sql).fetchall() for c in raws])  # type: ignore[misc]
    raw_again, _ = _load(DASHBOARD, [lambda sql, c=c: c.execute(sql).fetchall() for c in raws])  # type: ignore[misc]
    for c in raws:
        c.close()
    log(f"raw DuckDB ({connections} threads, a table each): first load {ms(raw_first)} ms, repeated {ms(raw_again)} ms")
    ledger = ledger_dir / "ledger-server.sqlite"
    started = time.perf_counter()
    with ServerThread(ServerConfig(policy=policy, port=0, ledger=ledger)) as server:
        wait = getattr(server.server.context, "wait_prepared", None)
        if wait is not None:
            wait()
        log(f"server started and prepared in {ms(time.perf_counter() - started)} ms (the bounded relation, once for every connection)")
        dsn = f"host=127.0.0.1 port={server.port} user={ANALYST} password={PASSWORD} dbname=dp sslmode=disable"
        clock.take()
        opened: list[Any] = []
        lock = threading.Lock()

        def connected_runner() -> Callable[[str], None]:
            state: dict[str, Any] = {}

            def run(sql: str) -> None:
                if "con" not in state:  # the first load includes each connection's connect
                    state["con"] = psycopg.connect(dsn, autocommit=True)
                    with lock:
                        opened.append(state["con"])
                state["con"].execute(sql).fetchall()
            return run

        runners = [connected_runner() for _ in range(connections)]
        for label in ("first load", "repeated"):
            wall, tiles = _load(DASHBOARD, runners)
            records = {r["sql"]: r for r in clock.take()}
            own = [t - records[sql]["engine"] - records[sql]["build"] for sql, t, err in tiles if sql in records and err is None]
            own_cpu = [records[sql]["own_cpu"] for sql, _, err in tiles if sql in records and err is None]
            errors = [f"{err} <- {sql}" for sql, _, err in tiles if err is not None]
            engine = sum(r["engine"] + r["build"] for r in records.values())
            log(f"dpsql {label}: wall {ms(wall)} ms ({wall / (raw_first if label == 'first load' else raw_again):.1f}x raw); "
                f"per tile total p50 {ms(pct([t for _, t, _ in tiles], 50))} p95 {ms(pct([t for _, t, _ in tiles], 95))} ms; "
                f"engine+build {ms(engine)} ms in all; own p50 {ms(pct(own, 50))} p95 {ms(pct(own, 95))} ms "
                f"(CPU p50 {ms(pct(own_cpu, 50))} p95 {ms(pct(own_cpu, 95))} ms); errors {len(errors)}")
            for line in errors[:5]:
                log(f"    failed: {line}")
        for con in opened:
            con.close()


# --- (c) ---------------------------------------------------------------------------------------------------

def part_c(runs: int) -> None:
    log(f"\n== (c) cold start, fresh interpreter each ({runs} runs; min and median wall)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(dpsql.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))}
    # As installed: with compiled bytecode (PYTHONDONTWRITEBYTECODE would recompile every module of
    # a checkout at each start, 0.2-0.3 s); the warm-up run below writes it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-c", "import dpsql.cli"], check=True, env=env)
    imports = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import dpsql"], check=True, env=env)
        imports.append(time.perf_counter() - started)
    log(f"python -c 'import dpsql': min {ms(min(imports))} ms, median {ms(statistics.median(imports))} ms "
        f"(python -c pass: {ms(_bare(env))} ms)")
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        env_c = {**env, "DPSQL_CACHE_DIR": str(cache)}
        sql = "SELECT dept, COUNT(*) FROM people GROUP BY dept"
        subprocess.run([sys.executable, "-m", "dpsql", "-c", "SELECT COUNT(*) FROM people"], check=True, env=env_c,
                       capture_output=True)  # writes the demo cache once (not timed)
        walls = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "dpsql", "-c", sql], check=True, env=env_c, capture_output=True)
            walls.append(time.perf_counter() - started)
        log(f"python -m dpsql -c \"{sql}\" on the cached demo (its ledger growing by one charge a run): "
            f"min {ms(min(walls))} ms, median {ms(statistics.median(walls))} ms")


def _bare(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
    return time.perf_counter() - started


# --- main --------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--histories", type=int, nargs="+", default=[0, 1000, 10000])
    parser.add_argument("--parts", nargs="+", choices=["a", "b", "c"], default=["a", "b", "c"])
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--budget", nargs=2, default=["1000", "1e-3"], metavar=("EPSILON", "DELTA"),
                        help="the analyst's total budget in the policy (default 1000 1e-3: the histories and the stream fit)")
    parser.add_argument("--accountant", help="the policy's [budget] accountant (default: the policy's default)")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--ledger-dir", type=Path, default=None, help="where the ledger files go (default: a temp directory)")
    args = parser.parse_args(argv)
    log(f"command: python bench/stream.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    log(f"date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; source: {source_state()}")
    log(f"machine: {platform.machine()} {platform.system()}; os.cpu_count() = {os.cpu_count()}; "
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    log(f"versions: dpsql {dpsql.__version__}, duckdb {duckdb.__version__}, python {platform.python_version()}")
    parquet, policy = ensure_data(args.data_dir, args.rows, tuple(args.budget), args.accountant)  # type: ignore[arg-type]
    log(f"data: {args.rows:,} rows ({parquet}); budget epsilon {args.budget[0]}, delta {args.budget[1]}; "
        f"accountant: {args.accountant or 'the policy default'}")
    clock = EngineClock()
    with tempfile.TemporaryDirectory() as tmp:
        ledger_dir = args.ledger_dir or Path(tmp)
        ledger_dir.mkdir(parents=True, exist_ok=True)
        if "a" in args.parts:
            part_a(parquet.parent, policy, args.histories, clock, ledger_dir)
        if "b" in args.parts:
            part_b(parquet.parent, policy, clock, ledger_dir, args.connections)
    if "c" in args.parts:
        part_c(args.cold_runs)
    log(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
