"""dpsql vs raw DuckDB: per-query overhead, first-query cost, fixed overhead, and error at epsilon 1.

    python bench/overhead.py [--rows 1000000 10000000] [--runs 7] [--data-dir bench/data]
    python bench/overhead.py --rows 10000000 --profile dept      # profile warm dpsql runs only
    python bench/overhead.py --rows 100000000 --memory-limit 4GB --temp-directory /var/tmp/spill \
        --queries count region mode --runs 3 --sizes-only            # one machine, spilling

Run by hand, not a test (bench/README.md). Every number printed is measured in this run, in
this process, with time.perf_counter:

1. Data: the synthetic `people` table (dpsql.demo.people) at each size, written once as Parquet
   with its policy into --data-dir (cached: a later run reuses it). The policy is the demo policy
   with a huge total budget, so the benchmark never exhausts it.
2. Timings per size and query:
   raw view   a fresh in-memory DuckDB connection with a VIEW over read_parquet(file): first run,
              then the median of --runs warm runs after one warm-up.
   raw table  the same on an in-memory TABLE loaded from the file (load time printed apart). This
              is the fair baseline for dpsql's warm runs, which read a cached in-memory table.
   dpsql      a fresh dpsql.connect(policy=...) per query: the FIRST query (it also materialises
              the session's bounded relation from the file), then the median of --runs warm runs.
   Warm runs of the three are interleaved, so load from other processes hits them alike.
   Ratios: warm dpsql / warm raw (view and table); first dpsql / first raw on the view.
   --memory-limit / --temp-directory set DuckDB's memory_limit and temp_directory on both sides
   (dpsql through the policy's [engine] section). Sizes above 10M rows are generated in 10M-row
   chunks (seeds DEFAULT_SEED + k, person ids offset per chunk), so no process holds them whole.
3. Stage breakdown of dpsql runs (compile, ledger charge, bounded relation, engine query, noise
   release, post-processing SQL, result assembly), by wrapping the session's objects in this
   process only; "outside engine" = total minus the engine's aggregate query and bounding.
4. Fixed per-query overhead on a 1,000-row table, where DuckDB's own work is negligible.
5. Error at epsilon = 1 with the real (cryptographic) noise: COUNT(*), SUM(income) and COUNT(*) over
   the public and the private join, --error-runs
   releases on one connection, mean absolute error vs the exact answer computed by raw DuckDB,
   next to the theoretical E|X| of discrete Laplace, 2p / (1 - p^2) with p = exp(-1/b).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb

import dpsql
import dpsql.execution.executor as dpsql_executor
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.demo.people import DEFAULT_SEED, DEMO_VERSION, DEPTS, PARQUET_NAME, POLICY_NAME, REGIONS, generate_people, policy_text

HERE = Path(__file__).resolve().parent
TINY_ROWS = 1000
BUDGET_EPSILON = "1e9"  # the policy's total budget: never exhausted by this benchmark
BUDGET_DELTA = "0.5"
DP_OPTIONS = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6)"


@dataclass(frozen=True)
class Query:
    label: str
    raw: str  # for raw DuckDB
    dp: str  # for dpsql


QUERIES = (
    Query("count", "SELECT COUNT(*) FROM people", "SELECT COUNT(*) FROM people"),
    Query("where", "SELECT COUNT(*) FROM people WHERE age > 40", "SELECT COUNT(*) FROM people WHERE age > 40"),
    Query(
        "dept",
        "SELECT dept, COUNT(*), AVG(income) FROM people GROUP BY dept",
        "SELECT dept, COUNT(*), AVG(income) FROM people GROUP BY dept",
    ),
    # region has no public domain: dpsql runs partition selection, which needs delta > 0.
    Query(
        "region",
        "SELECT region, SUM(income) FROM people WHERE age > 40 GROUP BY region",
        f"{DP_OPTIONS} region, SUM(income) FROM people WHERE age > 40 GROUP BY region",
    ),
    # The robust statistics: region has no declared values, so MODE runs the subsample-and-
    # aggregate vote (A_samp); MEDIAN(income) the exponential mechanism over exact order statistics.
    # Raw DuckDB's mode() / quantile_disc are the baselines.
    Query("mode", "SELECT mode(region) FROM people", "SELECT MODE(region) FROM people"),
    Query("median", "SELECT quantile_disc(income, 0.5) FROM people", "SELECT MEDIAN(income) FROM people"),
    # IQR: two EM quartiles (each with its interval) from one engine read; raw: two quantile_disc.
    Query("iqr", "SELECT quantile_disc(income, 0.75) - quantile_disc(income, 0.25) FROM people", "SELECT IQR(income) FROM people"),
    # Post-processing over a release: the aggregate runs in the engine, the outer query over
    # the released rows in the session's released-rows database (no extra cost).
    Query(
        "subquery",
        "SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t WHERE n > 100 ORDER BY n DESC LIMIT 3",
        "SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t WHERE n > 100 ORDER BY n DESC LIMIT 3",
    ),
    # UNION ALL of two aggregate queries: two releases, charged together.
    Query(
        "union",
        "SELECT 'all' AS k, COUNT(*) AS n FROM people UNION ALL SELECT 'old', COUNT(*) FROM people WHERE age > 60",
        "SELECT 'all' AS k, COUNT(*) AS n FROM people UNION ALL SELECT 'old', COUNT(*) FROM people WHERE age > 60",
    ),
    # a public lookup table (unique key: many-to-one, the sensitivity is kept); its floors are
    # the public domain of the group key
    Query(
        "public-join",
        "SELECT d.floor, COUNT(*), AVG(p.income) FROM people p JOIN depts d ON p.dept = d.name GROUP BY d.floor",
        "SELECT d.floor, COUNT(*), AVG(p.income) FROM people p JOIN depts d ON p.dept = d.name GROUP BY d.floor",
    ),
    # a second private table on the privacy unit (`visits`: the same file under its own policy
    # entry): each person's joined rows are bounded by 3 x 3
    Query(
        "private-join",
        "SELECT v.region, COUNT(*) FROM people p JOIN visits v ON p.person_id = v.person_id GROUP BY v.region",
        "SELECT v.region, COUNT(*) FROM people p JOIN visits v ON p.person_id = v.person_id GROUP BY v.region",
    ),
)
DEPTS_NAME = "depts.parquet"
PUBLIC_ON = "p.dept = d.name"
JOIN_TABLES = f"""
[tables.visits]
privacy_unit = "person_id"
max_rows = 3
source = "{PARQUET_NAME}"
[tables.visits.columns]
person_id = {{ type = "int" }}
region = {{ type = "text", values = [{", ".join(f'"{r}"' for r in REGIONS)}] }}

[tables.depts]
public = true
source = "{DEPTS_NAME}"
[tables.depts.columns]
name = {{ type = "text" }}
floor = {{ type = "int" }}
"""
QUERY_TEXT = {q.label: q for q in QUERIES}


def log(message: str = "") -> None:
    print(message, flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def mib(size: int) -> str:
    return f"{size / 2**20:.0f}"


def size_label(rows: int) -> str:
    for unit, div in (("M", 1_000_000), ("k", 1_000)):
        if rows >= div and rows % div == 0:
            return f"{rows // div}{unit}"
    return str(rows)


def sql_string(value: str) -> str:
    """A SQL string literal (the benchmark's own paths only)."""
    return "'" + value.replace("'", "''") + "'"


# --- data ---------------------------------------------------------------------------------------
ENGINE: dict[str, str] = {}  # DuckDB settings for both sides (--memory-limit, --temp-directory)
CHUNK_ROWS = 10_000_000
# Rows per person in every benchmark's data: 15% of persons above the policy's max_rows = 3 (their
# extra rows are dropped by bounding, as in real data), the rest at 1-3 rows. The demo itself has
# 1-3 rows per person (dpsql.demo.people.ROWS_PER_PERSON), so bounding there drops nothing.
ROWS_PER_PERSON = {1: 0.40, 2: 0.25, 3: 0.20, 4: 0.06, 5: 0.04, 6: 0.03, 8: 0.01, 12: 0.01}


def bench_policy_text() -> str:
    """The demo policy with a total budget this benchmark never exhausts (and ENGINE's settings)."""
    text = policy_text(source=PARQUET_NAME)
    text, n_eps = re.subn(r"^epsilon\s*=\s*\S+", f"epsilon = {BUDGET_EPSILON}", text, count=1, flags=re.M)
    text, n_delta = re.subn(r"^delta\s*=\s*\S+", f"delta = {BUDGET_DELTA}", text, count=1, flags=re.M)
    # Replays off: a warm repeat must run the engine (a replayed answer is the stored one, ~0.1 ms;
    # bench/replay.py measures replays).
    text, n_replay = re.subn(r"^(delta\s*=.*)$", r"\1\nreplay_seconds = 0", text, count=1, flags=re.M)
    if n_eps != 1 or n_delta != 1 or n_replay != 1:
        raise SystemExit("could not set the budget in the demo policy text: update bench_policy_text")
    if ENGINE:
        text += "\n[engine]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in ENGINE.items())
    return text


def write_chunked(rows: int, path: Path) -> None:
    """Rows above CHUNK_ROWS, 10M at a time: chunk k has seed DEFAULT_SEED + k and person ids
    offset by k * CHUNK_ROWS (every person stays in one chunk), so memory stays at one chunk."""
    import pyarrow
    import pyarrow.parquet

    writer = None
    try:
        for k, start in enumerate(range(0, rows, CHUNK_ROWS)):
            people = generate_people(min(CHUNK_ROWS, rows - start), seed=DEFAULT_SEED + k, rows_per_person=ROWS_PER_PERSON)
            people["person_id"] += k * CHUNK_ROWS
            batch = pyarrow.Table.from_pandas(people, preserve_index=False)
            if writer is None:
                writer = pyarrow.parquet.ParquetWriter(path, batch.schema)
            writer.write_table(batch)
            del people, batch
    finally:
        if writer is not None:
            writer.close()


def ensure_data(data_dir: Path, rows: int) -> tuple[Path, Path]:
    """people.parquet and policy.toml for `rows` rows, generated once and cached."""
    directory = data_dir / f"people-{rows}"
    parquet, policy, stamp = directory / PARQUET_NAME, directory / POLICY_NAME, directory / "stamp.json"
    meta: dict[str, Any] = {"rows": rows, "seed": DEFAULT_SEED, "demo": DEMO_VERSION,
                            "rows_per_person": {str(k): v for k, v in ROWS_PER_PERSON.items()}}
    if rows > CHUNK_ROWS:
        meta["chunk_rows"] = CHUNK_ROWS
    directory.mkdir(parents=True, exist_ok=True)
    if not (parquet.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == meta):
        started = time.perf_counter()
        tmp = parquet.with_name(f".{parquet.name}.{os.getpid()}.tmp")
        try:
            if rows > CHUNK_ROWS:
                write_chunked(rows, tmp)
                generated = time.perf_counter()
            else:
                people = generate_people(rows, seed=DEFAULT_SEED, rows_per_person=ROWS_PER_PERSON)
                generated = time.perf_counter()
                write_parquet(people, tmp)
                del people
            os.replace(tmp, parquet)
        finally:
            tmp.unlink(missing_ok=True)
        log(f"  generated {rows:,} rows -> {parquet} [generate {generated - started:.2f}s, "
            f"write {time.perf_counter() - generated:.2f}s]")
        stamp.write_text(json.dumps(meta))
    else:
        log(f"  reusing {parquet} ({parquet.stat().st_size / 2**20:.1f} MiB)")
    policy.write_text(bench_policy_text(), encoding="utf-8")  # cheap: always current
    # The join queries' policy declares the joined tables too; a separate file, so that the other
    # queries' first runs do not also wait for `visits` being bounded at connect.
    join_policy(policy).write_text(bench_policy_text() + JOIN_TABLES, encoding="utf-8")
    import pandas  # the public lookup table of the join queries: one floor per department
    write_parquet(pandas.DataFrame({"name": list(DEPTS), "floor": [i % 4 + 1 for i in range(len(DEPTS))]}), directory / DEPTS_NAME)
    return parquet, policy


def join_policy(policy: Path) -> Path:
    """The policy file of the join queries (next to `policy`)."""
    return policy.with_name("policy-joins.toml")


def policy_for(policy: Path, query: Query) -> Path:
    return join_policy(policy) if query.label.endswith("join") else policy


# --- stage timing of dpsql ---------------------------------------------------------------------
STAGES = ("compile", "dry_run", "charge", "bounded", "keyed", "engine", "release", "post", "assemble")


class StageProbe:
    """Times a session's stages by wrapping its objects (this process only; dpsql is unchanged)."""

    def __init__(self) -> None:
        self.current: dict[str, float] | None = None
        self._in_post = False
        self._patched = False

    def _wrap(self, fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            post_before = self.current.get("post", 0.0) if self.current is not None else 0.0
            try:
                return fn(*args, **kwargs)
            finally:
                # engine.run is also called inside postprocess: count that under "post" only; and
                # assembly runs post-processing inside it: that time is "post", not "assemble".
                if self.current is not None and not (name == "engine" and self._in_post):
                    nested = self.current.get("post", 0.0) - post_before if name == "assemble" else 0.0
                    self.current[name] = self.current.get(name, 0.0) + time.perf_counter() - started - nested
        return wrapper

    def _wrap_post(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        timed = self._wrap(fn, "post")

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._in_post = True
            try:
                return timed(*args, **kwargs)
            finally:
                self._in_post = False
        return wrapper

    def attach(self, session: Any) -> None:
        """Wrap what exists (the session's internals evolve; a missing name is simply not timed)."""
        if not self._patched:  # module-level names the session calls: patched once per process
            for name, stage in (("release_rows", "release"), ("assemble", "assemble"), ("assemble_simple", "assemble")):
                if hasattr(dpsql_executor, name):
                    setattr(dpsql_executor, name, self._wrap(getattr(dpsql_executor, name), stage))
            self._patched = True
        session.compile = self._wrap(session.compile, "compile")
        # Ledger.charge goes through charge_record where it exists (a query charges it directly).
        entry = "charge_record" if hasattr(session._ledger, "charge_record") else "charge"
        setattr(session._ledger, entry, self._wrap(getattr(session._ledger, entry), "charge"))
        engine = session._engine
        engine.ensure_bounded = self._wrap(engine.ensure_bounded, "bounded")
        if hasattr(engine, "ensure_keyed"):  # partition selection's keyed relation (first GROUP BY of a private key)
            engine.ensure_keyed = self._wrap(engine.ensure_keyed, "keyed")
        if hasattr(engine, "dry_run"):  # the pre-charge check on an empty table (once per plan)
            engine.dry_run = self._wrap(engine.dry_run, "dry_run")
        engine.run = self._wrap(engine.run, "engine")
        if hasattr(engine, "postprocess"):  # post-processing on the engine's connection (before the released-values database)
            engine.postprocess = self._wrap_post(engine.postprocess)
        released = getattr(getattr(session, "_executor", None), "released", None)
        if released is not None and hasattr(released, "evaluate"):  # post-processing in the released-values database
            released.evaluate = self._wrap_post(released.evaluate)

    def measure(self, action: Callable[[], Any]) -> tuple[float, dict[str, float]]:
        self.current = {}
        started = time.perf_counter()
        try:
            action()
        finally:
            total = time.perf_counter() - started
            stages, self.current = self.current, None
        stages["total"] = total
        stages["other"] = total - sum(stages.get(s, 0.0) for s in STAGES if s != "bounded" or "keyed" not in stages)
        # ensure_keyed builds the bounded relation first if needed: bounded is then inside keyed.
        stages["outside"] = total - stages.get("engine", 0.0) - max(stages.get("bounded", 0.0), stages.get("keyed", 0.0))
        return total, stages


PROBE = StageProbe()


def median_stages(samples: list[dict[str, float]]) -> dict[str, float]:
    keys = {k for s in samples for k in s}
    return {k: statistics.median(s.get(k, 0.0) for s in samples) for k in keys}


# --- measurements ------------------------------------------------------------------------------
@dataclass
class RawTiming:
    setup: float
    first: float
    warm: float
    memory: int = 0  # DuckDB's memory after the first query (bytes)


def duckdb_memory(connection: Any) -> int:
    """Bytes DuckDB holds (duckdb_memory(): tables, hash tables, buffers) on this connection's database."""
    return int(connection.execute("SELECT COALESCE(SUM(memory_usage_bytes), 0) FROM duckdb_memory()").fetchone()[0])


@dataclass
class DpTiming:
    connect: float
    first: float
    warm: float
    first_stages: dict[str, float]
    warm_stages: dict[str, float]
    memory: int = 0  # DuckDB's memory after the first query (bytes): the bounded (and keyed) relations


class RawRunner:
    """Raw DuckDB: a fresh in-memory connection with `people` as a VIEW over the file or a TABLE."""

    def __init__(self, parquet: Path, mode: str) -> None:
        self.con = duckdb.connect(":memory:")
        for key, value in ENGINE.items():
            self.con.execute(f"SET {key} = {sql_string(value)}")
        kind = "VIEW" if mode == "view" else "TABLE"
        started = time.perf_counter()
        self.con.execute(f"CREATE {kind} people AS SELECT * FROM read_parquet({sql_string(str(parquet))})")
        self.setup = time.perf_counter() - started
        # The join queries' other tables: `visits` is the same data (people's policy entry twice).
        self.con.execute(f"CREATE {kind} visits AS SELECT * FROM people")
        self.con.execute(f"CREATE {kind} depts AS SELECT * FROM read_parquet({sql_string(str(parquet.parent / DEPTS_NAME))})")
        self.first = 0.0
        self.memory = 0
        self.warm: list[float] = []

    def run(self, sql: str) -> float:
        started = time.perf_counter()
        self.con.execute(sql).fetchall()
        return time.perf_counter() - started

    def result(self) -> RawTiming:
        return RawTiming(self.setup, self.first, statistics.median(self.warm), self.memory)

    def close(self) -> None:
        self.con.close()


class DpRunner:
    """dpsql: a fresh connection; every run is a charged query with secure noise, stages timed."""

    def __init__(self, policy: Path) -> None:
        started = time.perf_counter()
        self.con = dpsql.connect(policy=str(policy))
        self.connect = time.perf_counter() - started
        PROBE.attach(self.con.session)
        self.cursor = self.con.cursor()
        self.first = 0.0
        self.first_stages: dict[str, float] = {}
        self.memory = 0
        self.samples: list[tuple[float, dict[str, float]]] = []

    def run(self, sql: str) -> tuple[float, dict[str, float]]:
        def once() -> None:
            self.cursor.execute(sql)
            self.cursor.fetchall()
        return PROBE.measure(once)

    def result(self) -> DpTiming:
        warm = statistics.median(t for t, _ in self.samples)
        return DpTiming(self.connect, self.first, warm, self.first_stages, median_stages([s for _, s in self.samples]), self.memory)

    def close(self) -> None:
        self.con.close()


def measure(parquet: Path, policy: Path, query: Query, runs: int, modes: tuple[str, ...] = ("view", "table")) -> tuple[dict[str, RawTiming], DpTiming]:
    """First runs, one warm-up each, then `runs` warm runs interleaved (raw view, raw table, dpsql),
    so that load from other processes hits all of them alike."""
    raws: dict[str, RawRunner] = {}
    dp: DpRunner | None = None
    try:
        for mode in modes:
            raws[mode] = RawRunner(parquet, mode)
            raws[mode].first = raws[mode].run(query.raw)
            raws[mode].memory = duckdb_memory(raws[mode].con)
        dp = DpRunner(policy_for(policy, query))
        dp.first, dp.first_stages = dp.run(query.dp)
        backend = getattr(dp.con.session._engine, "backend", None)
        dp.memory = duckdb_memory(backend.connection) if hasattr(backend, "connection") else 0
        for runner in raws.values():
            runner.run(query.raw)  # warm-up
        dp.run(query.dp)  # warm-up
        for _ in range(runs):
            for runner in raws.values():
                runner.warm.append(runner.run(query.raw))
            dp.samples.append(dp.run(query.dp))
        return {mode: runner.result() for mode, runner in raws.items()}, dp.result()
    finally:
        for runner in raws.values():
            runner.close()
        if dp is not None:
            dp.close()


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def stage_row(size: str, label: str, which: str, stages: dict[str, float]) -> list[str]:
    return [size, label, which, *(ms(stages.get(s, 0.0)) for s in (*STAGES, "other", "outside", "total"))]


STAGE_HEADER = ["size", "query", "run", *STAGES, "other", "outside", "total"]


def bench_sizes(sizes: list[int], data: dict[int, tuple[Path, Path]], runs: int, queries: tuple[Query, ...] = QUERIES) -> None:
    main_rows, detail_rows, stage_rows = [], [], []
    for rows in sizes:
        parquet, policy = data[rows]
        size = size_label(rows)
        for query in queries:
            log(f"  {size} {query.label}...")
            raw, dp = measure(parquet, policy, query, runs)
            view, tab = raw["view"], raw["table"]
            main_rows.append([
                size, query.label, ms(view.warm), ms(tab.warm), ms(dp.first), ms(dp.warm),
                f"{dp.warm / view.warm:.2f}x", f"{dp.warm / tab.warm:.2f}x",
                f"{dp.first / view.first:.2f}x",
            ])
            detail_rows.append([
                size, query.label, ms(view.first), ms(tab.setup), ms(tab.first), ms(dp.connect),
                ms(dp.first), f"{(dp.connect + dp.first) / (tab.setup + tab.first):.2f}x",
                ms(dp.warm_stages["outside"]), mib(tab.memory), mib(dp.memory),
            ])
            stage_rows.append(stage_row(size, query.label, "first", dp.first_stages))
            stage_rows.append(stage_row(size, query.label, "warm", dp.warm_stages))
    log()
    log(f"Timings in ms; warm = median of {runs} runs after one warm-up; first = first query of a fresh connection.")
    log(table(["size", "query", "raw view warm", "raw table warm", "dpsql first", "dpsql warm",
               "warm/view", "warm/table", "first/view-first"], main_rows))
    log()
    log("First-run detail (ms): raw view first run; raw table = CREATE TABLE from Parquet + first query;")
    log("dpsql connect = dpsql.connect(); cold ratio = (dpsql connect + first) / (raw table load + first).")
    log("MiB = DuckDB's memory after the first query (duckdb_memory()): the raw table, and dpsql's bounded")
    log("(and keyed) relations with everything else its connection holds.")
    log(table(["size", "query", "raw view first", "raw table load", "raw table first", "dpsql connect",
               "dpsql first", "cold ratio", "dpsql warm outside engine", "raw table MiB", "dpsql MiB"], detail_rows))
    log()
    log("dpsql stage breakdown (ms; warm = per-stage medians). compile = session.compile (a plan cache may")
    log("answer repeats); dry_run = the plan checked on an empty table before the charge (once per plan);")
    log("charge = ledger; bounded = ensure_bounded (materialises the bounded relation on the first query;")
    log("prepared in the background since connect, so a first query mostly waits for it in dry_run, which")
    log("needs the engine); keyed = ensure_keyed (partition selection's keyed relation of the grouping);")
    log("engine = the aggregate query in DuckDB; release = noise; post = post-processing SQL (when used);")
    log("assemble = result rows; other = the rest (e.g. plan hash and ledger params rendered for the charge);")
    log("outside = total - engine - bounded/keyed: time not spent in DuckDB's bounding or aggregate work.")
    log(table(STAGE_HEADER, stage_rows))


def time_compile(session: Any, sql: str, runs: int) -> tuple[float, float]:
    """Median compile time, uncached and repeated. Uncached: any plan cache is cleared and the
    text changes (trailing spaces) on every run, so no cache keyed on the text can answer."""
    session.compile(sql)  # warm-up (imports, lazily built tables)
    cold, warm = [], []
    for i in range(runs):
        plans = getattr(session, "_plans", None)
        if isinstance(plans, dict):
            plans.clear()
        text = sql + " " * (i + 1)
        started = time.perf_counter()
        session.compile(text)
        cold.append(time.perf_counter() - started)
    session.compile(sql)
    for _ in range(runs):
        started = time.perf_counter()
        session.compile(sql)
        warm.append(time.perf_counter() - started)
    return statistics.median(cold), statistics.median(warm)


def bench_fixed(parquet: Path, policy: Path, runs: int) -> None:
    """Fixed per-query overhead on a tiny table: compile-only and time outside the engine."""
    compile_runs = max(runs, 50)
    rows = []
    stage_rows = []
    for query in QUERIES:
        con = dpsql.connect(policy=str(policy_for(policy, query)))
        try:
            compile_cold, compile_warm = time_compile(con.session, query.dp, compile_runs)
        finally:
            con.close()
        raws, dp = measure(parquet, policy, query, compile_runs, modes=("table",))
        raw = raws["table"]
        stages = dp.warm_stages
        rows.append([
            size_label(TINY_ROWS), query.label, ms(compile_cold), ms(compile_warm), ms(dp.first), ms(dp.warm), ms(stages["engine"]),
            ms(stages["outside"]), ms(stages["outside"] - stages.get("compile", 0.0) + compile_cold),
            ms(raw.warm), ms(dp.warm - raw.warm),
        ])
        stage_rows.append(stage_row(size_label(TINY_ROWS), query.label, "warm", stages))
    log(f"Fixed per-query overhead on a {TINY_ROWS:,}-row table (ms, medians of {compile_runs} runs):")
    log("compile = session.compile(sql) alone, uncached (plan cache cleared / new text each run) and as")
    log("repeated (a session may cache plans); dpsql first = first query of a fresh connection;")
    log("outside engine = dpsql warm total - engine aggregate query; outside uncached = the same with the")
    log("warm run's compile time replaced by the uncached compile time (a query never seen before);")
    log("dpsql - raw = dpsql warm - raw DuckDB warm on an in-memory table of the same rows.")
    log(table(["size", "query", "compile uncached", "compile repeated", "dpsql first", "dpsql warm", "engine",
               "outside engine", "outside uncached", "raw table warm", "dpsql - raw"], rows))
    log()
    log(table(STAGE_HEADER, stage_rows))


def discrete_laplace_mae(scale: Fraction) -> float:
    """E|X| for discrete Laplace, P[X = x] ∝ p^|x| with p = exp(-1/scale): 2p / (1 - p^2)."""
    b = float(scale)
    p = math.exp(-1.0 / b)
    return 2.0 * p / -math.expm1(-2.0 / b)  # 1 - p^2 without cancellation at large scales


def bench_error(parquet: Path, policy: Path, runs: int) -> None:
    raw = duckdb.connect(":memory:")
    try:
        raw.execute(f"CREATE TABLE people AS SELECT * FROM read_parquet({sql_string(str(parquet))})")
        max_rows, null_units = raw.execute(
            "SELECT MAX(n), (SELECT COUNT(*) FROM people WHERE person_id IS NULL) "
            "FROM (SELECT COUNT(*) AS n FROM people GROUP BY person_id)"
        ).fetchone()
        exact_count = raw.execute("SELECT COUNT(*) FROM people").fetchone()[0]
        exact_sum = raw.execute("SELECT SUM(income) FROM people").fetchone()[0]
        raw.execute(f"CREATE TABLE depts AS SELECT * FROM read_parquet({sql_string(str(parquet.parent / DEPTS_NAME))})")
        exact_public = raw.execute(f"SELECT COUNT(*) FROM people p JOIN depts d ON {PUBLIC_ON}").fetchone()[0]
        exact_private = raw.execute("SELECT COUNT(*) FROM people p JOIN people v ON p.person_id = v.person_id").fetchone()[0]
    finally:
        raw.close()
    log(f"Exact answers by raw DuckDB on the full table; at most {max_rows} rows per person and {null_units}")
    log("rows without a person, so bounding to max_rows = 3 drops no row and the exact answers equal")
    log("the answers on the bounded relation (the joins' bounds, 3 x 1 and 3 x 3, drop none either).")
    con = dpsql.connect(policy=str(join_policy(policy)))  # one connection, secure noise, huge budget
    try:
        results = []
        for label, sql, exact in (
            ("COUNT(*)", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM people", exact_count),
            ("SUM(income)", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) SUM(income) FROM people", exact_sum),
            ("COUNT(*) public join", f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM people p JOIN depts d ON {PUBLIC_ON}",
             exact_public),
            ("COUNT(*) private join", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM people p "
             "JOIN visits v ON p.person_id = v.person_id", exact_private),
        ):
            compiled = con.session.compile(sql).compiled
            release = compiled.plan.releases[0]
            grid_scale, unit = release.spec.scale, release.unit
            cursor = con.cursor()
            errors = []
            for _ in range(runs):
                cursor.execute(sql)
                errors.append(float(cursor.fetchone()[0]) - float(exact))
            info = cursor.noise_info[0]
            absolute = [abs(e) for e in errors]
            mae = statistics.fmean(absolute)
            sem = statistics.stdev(absolute) / math.sqrt(len(absolute))
            theory = discrete_laplace_mae(grid_scale) * float(unit)
            results.append([
                label, f"{float(exact):,.2f}", f"{info['scale']:g}", f"{float(unit):g}", f"{float(grid_scale):g}",
                f"{mae:,.4g} ± {sem:,.2g}", f"{theory:,.4g}", f"{mae / theory:.3f}", f"{statistics.fmean(errors):,.4g}",
            ])
    finally:
        con.close()
    log(f"Error at epsilon = 1 over {runs} releases (secure noise): MAE ± its standard error; theoretical")
    log("E|X| = unit * 2p/(1-p^2), p = exp(-1/b), b = scale in grid units (scale from cursor.noise_info).")
    log(table(["aggregate", "exact", "scale", "grid unit", "b (grid units)", "measured MAE", "theoretical MAE",
               "ratio", "mean error"], results))


# --- profile -------------------------------------------------------------------------------------
def profile(policy: Path, label: str, runs: int) -> None:
    """Profile warm dpsql runs of one query: cProfile (cumulative, tottime) and pyinstrument if installed."""
    sql = QUERY_TEXT[label].dp
    con = dpsql.connect(policy=str(policy_for(policy, QUERY_TEXT[label])))
    try:
        cursor = con.cursor()
        cursor.execute(sql).fetchall()  # first: materialises the bounded relation
        cursor.execute(sql).fetchall()  # warm-up
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        for _ in range(runs):
            cursor.execute(sql).fetchall()
        profiler.disable()
        log(f"cProfile of {runs} warm runs of {label!r}: {(time.perf_counter() - started) / runs * 1e3:.2f} ms per run")
        for key in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(key).print_stats(25)
            log(out.getvalue())
        try:
            from pyinstrument import Profiler
        except ImportError:
            log("pyinstrument is not installed: pip install pyinstrument for a wall-clock call tree")
            return
        sampler = Profiler(interval=0.0005)
        sampler.start()
        for _ in range(runs):
            cursor.execute(sql).fetchall()
        sampler.stop()
        log(sampler.output_text(unicode=False, color=False, show_all=False))
    finally:
        con.close()


def source_state() -> str:
    """The checkout's commit and whether dpsql/ has uncommitted edits (the numbers depend on it)."""
    root = Path(dpsql.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "dpsql"], cwd=root, capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    changed = [line[3:] for line in dirty if line.strip()]
    if not changed:
        return f"git {head} (clean dpsql/)"
    more = f" and {len(changed) - 6} more" if len(changed) > 6 else ""
    return f"git {head} + uncommitted edits to {', '.join(changed[:6])}{more}"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def header(argv: list[str]) -> None:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    import numpy
    import pandas
    import sqlglot

    log(f"command: python bench/overhead.py {' '.join(argv)}")
    log(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; source: {source_state()}")
    log(f"machine: {platform.machine()} {platform.system()} {platform.release()}; os.cpu_count() = {os.cpu_count()}, "
        f"usable cores = {affinity}, DuckDB threads = {threads}")
    log(f"load average at start: {load_average()} (other processes on the machine skew the timings)")
    log(f"versions: dpsql {dpsql.__version__}, duckdb {duckdb.__version__}, sqlglot {sqlglot.__version__}, "
        f"pandas {pandas.__version__}, numpy {numpy.__version__}, python {platform.python_version()}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000], help="table sizes")
    parser.add_argument("--runs", type=int, default=7, help="warm runs per measurement (median)")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data", help="where generated data is cached")
    parser.add_argument("--error-runs", type=int, default=200, help="releases per aggregate for the error check")
    parser.add_argument("--error-rows", type=int, default=None, help="table size of the error check (default: smallest --rows)")
    parser.add_argument("--profile", choices=[q.label for q in QUERIES], help="only profile warm dpsql runs of this query at the largest size")
    parser.add_argument("--queries", nargs="+", choices=[q.label for q in QUERIES], help="only these queries (default: all)")
    parser.add_argument("--sizes-only", action="store_true", help="skip the fixed-overhead and error sections")
    parser.add_argument("--memory-limit", help="DuckDB memory_limit on both sides, e.g. 4GB")
    parser.add_argument("--temp-directory", type=Path, help="DuckDB temp_directory (spilling) on both sides")
    args = parser.parse_args(argv)
    if args.memory_limit:
        ENGINE["memory_limit"] = args.memory_limit
    if args.temp_directory:
        ENGINE["temp_directory"] = str(args.temp_directory.expanduser().resolve())
    if args.runs < 1 or any(r < 1 for r in args.rows):
        parser.error("--runs and --rows must be >= 1")
    header(argv)
    sizes = sorted(set(args.rows))
    data_dir = args.data_dir.expanduser().resolve()
    log(f"data: {data_dir}")
    if args.profile:
        _, policy = ensure_data(data_dir, sizes[-1])
        log(f"profile: {size_label(sizes[-1])} rows")
        profile(policy, args.profile, args.runs)
        return 0
    error_rows = args.error_rows or sizes[0]
    data = {rows: ensure_data(data_dir, rows) for rows in sorted({*sizes, TINY_ROWS, error_rows})}
    log()
    log("== dpsql vs raw DuckDB ==")
    bench_sizes(sizes, data, args.runs, tuple(q for q in QUERIES if not args.queries or q.label in args.queries))
    log()
    if args.sizes_only:
        log(f"load average at end: {load_average()}")
        return 0
    log("== fixed per-query overhead ==")
    bench_fixed(*data[TINY_ROWS], args.runs)
    log()
    log(f"== error at epsilon = 1 ({size_label(error_rows)} rows) ==")
    bench_error(*data[error_rows], args.error_runs)
    log()
    log(f"load average at end: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
