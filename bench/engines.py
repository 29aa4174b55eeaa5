"""dpsql on DuckDB vs dpsql on Spark local[2]: wall and CPU time of the core queries, and parity.

    python bench/engines.py [--rows 1000000 10000000] [--runs 3] [--data-dir bench/data] [--master local[2]]
    python bench/engines.py --rows 1000000 10000000 --runs 3 1   # --runs per size: 3 at 1M, 1 at 10M
    python bench/engines.py --rows 1000000 --spark-conf spark.sql.shuffle.partitions=200  # Spark default

Run by hand, not a test (bench/README.md). Every number printed is measured in this run, in this
process; the printed report is also written to bench/results-engines.txt (overwritten).

Data: the cached `people` Parquet file and its policy (total budget epsilon 1e9) per size, made by
overhead.py's ensure_data in --data-dir/people-<rows>/. Queries (dpsql runs the text as written,
the region query with explicit epsilon/delta for partition selection; the others use the policy's
default epsilon 0.1 / delta 1e-8):
  count   SELECT COUNT(*) FROM people
  dept    SELECT dept, COUNT(*), AVG(income) FROM people GROUP BY dept     (public domain)
  region  SELECT region, SUM(income) FROM people WHERE age > 40 GROUP BY region (partition selection)
  median  SELECT MEDIAN(income) FROM people
  mode    SELECT MODE(region) FROM people

Order: all DuckDB measurements (every size) first, then Spark is started (its start-up time and CPU
are printed apart, never inside a query time) and the same measurements run on Spark. Spark
settings: driver memory 6g, UI off, codegen and AQE on (defaults), spark.sql.shuffle.partitions =
2 x the local cores (see SPARK_CONF for why; --spark-conf KEY=VALUE overrides any setting). Per size and
engine, three runners are opened once and kept for all five queries:
  raw file    the engine directly on the Parquet file: DuckDB, a VIEW over read_parquet(file) on a
              fresh in-memory connection, con.execute(sql).fetchall(); Spark, spark.read.parquet(file)
              as a temp view of a new SparkSession, spark.sql(sql).toArrow().
  raw cached  the same over an in-memory copy (DuckDB: CREATE TABLE from the file; Spark: the
              DataFrame persisted MEMORY_AND_DISK and counted), the fair baseline for dpsql's warm
              runs, which read the session's cached bounded relation. Load time printed apart.
  dpsql       dpsql.connect(policy=..., engine=..., random_seed=SEED, ledger=<temp file>), one fresh
              connection per size and engine. Its very first query (count) is "the first query of a
              fresh connection": it also materialises the bounded relation (the `bounded` stage).
Per query: the first run of each runner ("first": for dpsql count the first query of the fresh
connection, for the others the first run of that text in the session: compile, dry run, Spark
query planning and code generation), one warm-up, then --runs warm runs, interleaved (raw file,
raw cached, dpsql) so load from other processes hits them alike; warm = median.

Time: wall = time.perf_counter around execute + fetch. CPU = this process's CPU
(time.process_time: user + system of every thread, so DuckDB's worker threads are included) plus,
for Spark, the CPU of the JVM, a child process, read from /proc/<pid>/stat (utime + stime +
cutime + cstime, clock ticks, 10 ms resolution) of every descendant of this process whose cmdline
contains 'java' (psutil is used to find them when installed). CPU > wall means both cores worked.

Parity: the dpsql answers of every run (first, warm-up, warm) of a query on DuckDB and on Spark,
with the same random_seed and the same sequence of queries, must be identical (==, no tolerance):
one line per size and query, "identical: yes/no". Stage breakdown of the dpsql runs as in
overhead.py (compile, dry_run, charge, bounded, engine, release, post, assemble), by wrapping the
session's objects in this process.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import overhead
from overhead import (  # bench/ is on sys.path when run as a script
    STAGES,
    StageProbe,
    ensure_data,
    load_average,
    median_stages,
    size_label,
    source_state,
    sql_string,
    table,
)

import dpsql

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results-engines.txt"
SEED = 20261122  # random_seed of every dpsql connection: the same on both engines
DP_OPTIONS = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6)"
ENGINES = ("duckdb", "spark")
# Spark settings for benchmarking (not dpsql's TEST_CONF): codegen and AQE stay on (defaults),
# the driver gets memory for a persisted 10M-row relation next to the raw cached copy, and
# spark.sql.shuffle.partitions is set to 2 x the local cores (spark_conf). With the default 200, the
# bounded relation dpsql persists after its per-person window keeps 200 partitions (AQE may not
# coalesce a cached plan's output unless spark.sql.optimizer.canChangeCachedPlanOutputPartitioning),
# and every warm query then runs 200 tasks on 2 cores: 6-10x slower at 1M rows when this was written.
SPARK_CONF = {
    "spark.driver.memory": "6g",
    "spark.ui.enabled": "false",  # no web UI: nothing looks at it, it costs a little CPU
}


def spark_conf(master: str, overrides: list[str]) -> dict[str, str]:
    """SPARK_CONF, shuffle partitions = 2 x the cores of a local master, then --spark-conf KEY=VALUE."""
    conf = dict(SPARK_CONF)
    if master.startswith("local"):
        inner = master[len("local"):].strip("[]").split(",")[0]
        cores = int(inner) if inner.isdigit() else (os.cpu_count() or 2)
        conf["spark.sql.shuffle.partitions"] = str(2 * cores)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--spark-conf wants KEY=VALUE, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf


@dataclass(frozen=True)
class Query:
    label: str
    raw: str  # for raw DuckDB and raw Spark SQL
    dp: str  # for dpsql


QUERIES = (
    Query("count", "SELECT COUNT(*) FROM people", "SELECT COUNT(*) FROM people"),
    Query("dept", "SELECT dept, COUNT(*), AVG(income) FROM people GROUP BY dept",
          "SELECT dept, COUNT(*), AVG(income) FROM people GROUP BY dept"),
    Query("region", "SELECT region, SUM(income) FROM people WHERE age > 40 GROUP BY region",
          f"{DP_OPTIONS} region, SUM(income) FROM people WHERE age > 40 GROUP BY region"),
    Query("median", "SELECT MEDIAN(income) FROM people", "SELECT MEDIAN(income) FROM people"),
    Query("mode", "SELECT MODE(region) FROM people", "SELECT MODE(region) FROM people"),
)


# --- output --------------------------------------------------------------------------------------
class Report:
    """Prints lines and keeps them, to write the report file at the end (and after every size)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, message: str = "") -> None:
        print(message, flush=True)
        self.lines.append(message)

    def save(self, path: Path) -> None:
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")


log = Report()
overhead.log = log  # ensure_data's lines go into the report too


def ms(seconds: float) -> str:
    value = seconds * 1e3
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "n/a"


# --- CPU time ------------------------------------------------------------------------------------
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _children(pid: int) -> list[int]:
    """Direct children of pid, from /proc (no psutil)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        if int(fields[1]) == pid:  # fields[0] is the state, fields[1] the parent pid
            found.append(int(entry))
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def java_descendants() -> list[int]:
    """Pids of the JVM(s) started by this process (any depth), found via psutil if installed."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return [p.pid for p in psutil.Process().children(recursive=True) if "java" in " ".join(p.cmdline())]
    result, todo = [], _children(os.getpid())
    while todo:
        pid = todo.pop()
        if "java" in _cmdline(pid):
            result.append(pid)
        todo.extend(_children(pid))
    return result


def proc_cpu(pid: int) -> float:
    """utime + stime + cutime + cstime of a process, in seconds (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(b")") + 2:].split()
    return sum(int(f) for f in fields[11:15]) / TICKS  # fields 14-17 of proc(5), counted from 1


@dataclass
class CpuClock:
    """This process's CPU, plus the CPU of the given child processes (the Spark JVM)."""

    children: list[int] = field(default_factory=list)

    def read(self) -> tuple[float, float]:
        return time.process_time(), sum(proc_cpu(pid) for pid in self.children)


@dataclass
class Sample:
    wall: float
    cpu_self: float
    cpu_child: float

    @property
    def cpu(self) -> float:
        return self.cpu_self + self.cpu_child


def timed(clock: CpuClock, action: Callable[[], Any]) -> tuple[Sample, Any]:
    cpu0, child0 = clock.read()
    started = time.perf_counter()
    value = action()
    wall = time.perf_counter() - started
    cpu1, child1 = clock.read()
    return Sample(wall, cpu1 - cpu0, child1 - child0), value


def median_sample(samples: list[Sample]) -> Sample:
    return Sample(statistics.median(s.wall for s in samples), statistics.median(s.cpu_self for s in samples),
                  statistics.median(s.cpu_child for s in samples))


# --- runners -------------------------------------------------------------------------------------
class Runner:
    """One way to answer the queries; keeps the first run and the warm runs of each query."""

    name = ""

    def __init__(self, clock: CpuClock) -> None:
        self.clock = clock
        self.setup = Sample(0.0, 0.0, 0.0)
        self.first: dict[str, Sample] = {}
        self.warm: dict[str, list[Sample]] = {}

    def answer(self, query: Query) -> Any:
        raise NotImplementedError

    def run(self, query: Query) -> Sample:
        sample, _ = timed(self.clock, lambda: self.answer(query))
        return sample

    def close(self) -> None:
        pass


class RawDuckDB(Runner):
    def __init__(self, clock: CpuClock, parquet: Path, cached: bool) -> None:
        super().__init__(clock)
        self.name = "raw cached" if cached else "raw file"
        self.con = duckdb.connect(":memory:")
        kind = "TABLE" if cached else "VIEW"
        self.setup, _ = timed(clock, lambda: self.con.execute(
            f"CREATE {kind} people AS SELECT * FROM read_parquet({sql_string(str(parquet))})"))

    def answer(self, query: Query) -> Any:
        return self.con.execute(query.raw).fetchall()

    def close(self) -> None:
        self.con.close()


class RawSpark(Runner):
    def __init__(self, clock: CpuClock, spark: Any, parquet: Path, cached: bool) -> None:
        super().__init__(clock)
        self.name = "raw cached" if cached else "raw file"
        self.spark = spark.newSession()  # its own temp views
        self.frame: Any = None

        def load() -> None:
            frame = self.spark.read.parquet(str(parquet))
            if cached:
                from pyspark import StorageLevel

                frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
                frame.count()
                self.frame = frame
            frame.createOrReplaceTempView("people")
        self.setup, _ = timed(clock, load)

    def answer(self, query: Query) -> Any:
        return self.spark.sql(query.raw).toArrow()

    def close(self) -> None:
        if self.frame is not None:
            self.frame.unpersist()
        self.spark.catalog.dropTempView("people")


class Dpsql(Runner):
    """dpsql on one engine: one fresh connection; keeps every answer for the parity check."""

    name = "dpsql"

    def __init__(self, clock: CpuClock, probe: StageProbe, policy: Path, engine: str, spark: Any, ledger: Path) -> None:
        super().__init__(clock)
        self.probe = probe
        extra = {"spark": spark} if engine == "spark" else {}
        self.setup, self.con = timed(clock, lambda: dpsql.connect(
            policy=str(policy), engine=engine, random_seed=SEED, ledger=str(ledger), **extra))
        probe.attach(self.con.session)
        self.cursor = self.con.cursor()
        self.answers: dict[str, list[Any]] = {}
        self.first_stages: dict[str, dict[str, float]] = {}
        self.warm_stages: dict[str, list[dict[str, float]]] = {}
        self._stages: dict[str, float] = {}

    def answer(self, query: Query) -> Any:
        def once() -> None:
            self.cursor.execute(query.dp)
            self.answers.setdefault(query.label, []).append(self.cursor.fetchall())
        _, self._stages = self.probe.measure(once)

    def close(self) -> None:
        self.con.close()


@dataclass
class Measured:
    """Every runner of one size and engine, after all queries."""

    engine: str
    rows: int
    runners: dict[str, Runner]

    @property
    def dp(self) -> Dpsql:
        return self.runners["dpsql"]  # type: ignore[return-value]


def measure_engine(engine: str, rows: int, parquet: Path, policy: Path, runs: int, clock: CpuClock, probe: StageProbe,
                   spark: Any, ledger_dir: Path) -> Measured:
    runners: dict[str, Runner] = {}
    try:
        if engine == "duckdb":
            runners["raw file"] = RawDuckDB(clock, parquet, cached=False)
            runners["raw cached"] = RawDuckDB(clock, parquet, cached=True)
        else:
            runners["raw file"] = RawSpark(clock, spark, parquet, cached=False)
            runners["raw cached"] = RawSpark(clock, spark, parquet, cached=True)
        dp = Dpsql(clock, probe, policy, engine, spark, ledger_dir / f"ledger-{engine}-{rows}.db")
        runners["dpsql"] = dp
        for query in QUERIES:
            log(f"  {size_label(rows)} {engine} {query.label}...")
            for runner in runners.values():
                runner.first[query.label] = runner.run(query)
            dp.first_stages[query.label] = dp._stages
            for runner in runners.values():
                runner.run(query)  # warm-up
            for _ in range(runs):
                for runner in runners.values():
                    runner.warm.setdefault(query.label, []).append(runner.run(query))
                dp.warm_stages.setdefault(query.label, []).append(dp._stages)
        return Measured(engine, rows, runners)
    finally:
        for runner in runners.values():
            runner.close()


# --- report --------------------------------------------------------------------------------------
def report_size(rows: int, runs: int, by_engine: dict[str, Measured]) -> None:  # noqa: C901 - a report: one optional table per metric
    size = size_label(rows)
    log()
    log(f"== {size} rows: timings in ms; first = first run (see notes), warm = median of {runs} warm run(s) ==")
    for metric, pick in (("wall", lambda s: s.wall), ("CPU", lambda s: s.cpu)):
        out = []
        for engine, m in by_engine.items():
            for q in QUERIES:
                warm = {name: pick(median_sample(r.warm[q.label])) for name, r in m.runners.items()}
                first = {name: pick(r.first[q.label]) for name, r in m.runners.items()}
                out.append([
                    q.label + ("*" if q is QUERIES[0] else ""), engine, ms(first["raw file"]), ms(warm["raw file"]),
                    ms(first["raw cached"]), ms(warm["raw cached"]), ms(first["dpsql"]), ms(warm["dpsql"]),
                    ratio(warm["dpsql"], warm["raw file"]), ratio(warm["dpsql"], warm["raw cached"]),
                    ratio(first["dpsql"], first["raw file"]),
                ])
        log()
        log(f"{metric} time (ms){' = this process + the JVM for Spark' if metric == 'CPU' else ''}:")
        log(table(["query", "engine", "raw file first", "raw file warm", "raw cached first", "raw cached warm",
                   "dpsql first", "dpsql warm", "dpsql/raw file warm", "dpsql/raw cached warm", "dpsql/raw first"], out))
    log("* count is the first query of the fresh dpsql connection: its dpsql first includes materialising")
    log("  the bounded relation; the other queries' first = first run of that text in the same session.")

    if set(by_engine) == set(ENGINES):
        duck, spark = by_engine["duckdb"], by_engine["spark"]
        out = []
        for q in QUERIES:
            row = [q.label]
            for name in ("dpsql", "raw file", "raw cached"):
                d, s = duck.runners[name], spark.runners[name]
                dw, sw = median_sample(d.warm[q.label]), median_sample(s.warm[q.label])
                row += [ratio(s.first[q.label].wall, d.first[q.label].wall), ratio(sw.wall, dw.wall), ratio(sw.cpu, dw.cpu)]
            out.append(row)
        log()
        log("Spark / DuckDB ratios (same runner on both engines):")
        log(table(["query", "dpsql first wall", "dpsql warm wall", "dpsql warm CPU", "raw file first wall",
                   "raw file warm wall", "raw file warm CPU", "raw cached first wall", "raw cached warm wall",
                   "raw cached warm CPU"], out))

    out = []
    for engine, m in by_engine.items():
        for name, r in m.runners.items():
            out.append([engine, name, ms(r.setup.wall), ms(r.setup.cpu)])
    log()
    what = ("raw file = view over the file (DuckDB) / spark.read.parquet + temp view (Spark); raw cached = "
            "CREATE TABLE / persist + count; dpsql = dpsql.connect()")
    log(f"Setup (ms): {what}.")
    log(table(["engine", "runner", "setup wall", "setup CPU"], out))

    if "spark" in by_engine:
        m = by_engine["spark"]
        out = []
        for q in QUERIES:
            for name in ("raw file", "raw cached", "dpsql"):
                r = m.runners[name]
                f, w = r.first[q.label], median_sample(r.warm[q.label])
                out.append([q.label, name, ms(f.wall), ms(f.cpu_self), ms(f.cpu_child), ms(w.wall), ms(w.cpu_self),
                            ms(w.cpu_child), f"{w.cpu / w.wall:.2f}" if w.wall else "n/a"])
        log()
        log("Spark CPU split (ms): python = this process (py4j, Arrow, dpsql, noise, local DuckDB), JVM = the Spark")
        log("driver/executor JVM; cores busy = warm CPU / warm wall.")
        log(table(["query", "runner", "first wall", "first python CPU", "first JVM CPU", "warm wall",
                   "warm python CPU", "warm JVM CPU", "cores busy"], out))

    out = []
    for engine, m in by_engine.items():
        dp = m.dp
        for q in QUERIES:
            for which, stages in (("first", dp.first_stages[q.label]), ("warm", median_stages(dp.warm_stages[q.label]))):
                out.append([q.label, engine, which, *(ms(stages.get(s, 0.0)) for s in (*STAGES, "other", "total"))])
    log()
    log("dpsql stage breakdown (wall ms; warm = per-stage medians): compile; dry_run = the plan on an empty table")
    log("before the charge (once per plan); charge = ledger; bounded = materialising the bounded relation (first")
    log("query of the connection); engine = the engine's queries (aggregate, MEDIAN/MODE scans); release = noise;")
    log("post = post-processing SQL in the local DuckDB; assemble = result rows; other = the rest.")
    log(table(["query", "engine", "run", *STAGES, "other", "total"], out))

    if set(by_engine) == set(ENGINES):
        log()
        log(f"Parity of the dpsql answers, DuckDB vs Spark, random_seed = {SEED} (first + warm-up + {runs} warm runs):")
        for q in QUERIES:
            a = by_engine["duckdb"].dp.answers.get(q.label, [])
            b = by_engine["spark"].dp.answers.get(q.label, [])
            same = a == b and len(a) > 0
            detail = f"{len(a)} answers each"
            if not same:
                diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                detail += f"; run {diff} differs: duckdb {str(a[diff] if diff < len(a) else None)[:120]} vs spark " \
                          f"{str(b[diff] if diff < len(b) else None)[:120]}"
            else:
                detail += f"; e.g. {str(a[0])[:100]}"
            log(f"  {size} {q.label:<7} identical: {'yes' if same else 'no'} ({detail})")


# --- main ----------------------------------------------------------------------------------------
def start_spark_timed(master: str, conf: dict[str, str], clock: CpuClock) -> tuple[Any, Sample]:
    from dpsql.backend.engines.spark_engine import start_spark

    cpu0 = time.process_time()
    started = time.perf_counter()
    spark = start_spark(master=master, conf=conf, app_name="dpsql-bench-engines")
    spark.range(1).count()  # the JVM, the context and one trivial job
    wall = time.perf_counter() - started
    cpu_self = time.process_time() - cpu0
    clock.children = java_descendants()
    if not clock.children:
        log("WARNING: no java child process found: Spark CPU times below are this process only")
    cpu_child = sum(proc_cpu(pid) for pid in clock.children)  # all of it since the JVM started
    return spark, Sample(wall, cpu_self, cpu_child)


def header(argv: list[str], master: str, conf: dict[str, str]) -> None:
    import numpy
    import pandas
    import pyarrow
    import sqlglot

    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    try:
        import pyspark
        spark_version = pyspark.__version__
    except ImportError:
        spark_version = "not installed"
    java = shutil.which("java")
    log(f"command: python bench/engines.py {' '.join(argv)}")
    log(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; source: {source_state()}")
    log(f"machine: {platform.machine()} {platform.system()} {platform.release()}; os.cpu_count() = {os.cpu_count()}, "
        f"usable cores = {affinity}, DuckDB threads = {threads}, RAM = "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB")
    log(f"load average at start: {load_average()} (other processes on the machine skew the timings)")
    log(f"versions: dpsql {dpsql.__version__}, duckdb {duckdb.__version__}, pyspark {spark_version} (java: {java}), "
        f"sqlglot {sqlglot.__version__}, pyarrow {pyarrow.__version__}, pandas {pandas.__version__}, "
        f"numpy {numpy.__version__}, python {platform.python_version()}")
    log(f"Spark: master {master}; settings {conf} plus dpsql's START_CONF; codegen and AQE at their defaults (on)")
    log(f"dpsql: random_seed = {SEED} on both engines, a temp ledger per connection")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000], help="table sizes")
    parser.add_argument("--runs", type=int, nargs="+", default=[3],
                        help="warm runs per measurement (median): one value, or one per --rows size (sorted)")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data", help="where generated data is cached")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark setting (repeatable), e.g. spark.sql.shuffle.partitions=200")
    parser.add_argument("--output", type=Path, default=RESULTS, help="report file (overwritten)")
    args = parser.parse_args(argv)
    sizes = sorted(set(args.rows))
    if any(r < 1 for r in args.runs) or any(r < 1 for r in sizes):
        parser.error("--runs and --rows must be >= 1")
    if len(args.runs) not in (1, len(sizes)):
        parser.error("--runs takes one value or one per size")
    runs = dict(zip(sizes, args.runs * len(sizes) if len(args.runs) == 1 else args.runs))
    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")
    conf = spark_conf(args.master, args.spark_conf)
    header(argv, args.master, conf)
    data_dir = args.data_dir.expanduser().resolve()
    log(f"data: {data_dir}; warm runs per size: {', '.join(f'{size_label(r)} {n}' for r, n in runs.items())}")
    data = {rows: ensure_data(data_dir, rows) for rows in sizes}
    probe = StageProbe()
    clock = CpuClock()
    results: dict[int, dict[str, Measured]] = {rows: {} for rows in sizes}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dpsql-bench-engines-") as tmp:
        log()
        log("== DuckDB ==")
        for rows in sizes:
            parquet, policy = data[rows]
            results[rows]["duckdb"] = measure_engine("duckdb", rows, parquet, policy, runs[rows], clock, probe, None, Path(tmp))
        log(f"  DuckDB done after {time.perf_counter() - started:.0f} s; load average {load_average()}")
        log()
        log("== Spark ==")
        spark, startup = start_spark_timed(args.master, conf, clock)
        log(f"  Spark start-up ({args.master}, SparkSession + one trivial job): wall {startup.wall:.1f} s, CPU "
            f"{startup.cpu:.1f} s (python {startup.cpu_self:.1f} s, JVM {startup.cpu_child:.1f} s); "
            f"JVM pid(s) {clock.children}")
        try:
            for rows in sizes:
                parquet, policy = data[rows]
                results[rows]["spark"] = measure_engine("spark", rows, parquet, policy, runs[rows], clock, probe, spark, Path(tmp))
                log(f"  {size_label(rows)} done after {time.perf_counter() - started:.0f} s; load average {load_average()}")
        finally:
            spark.stop()
    for rows in sizes:
        report_size(rows, runs[rows], results[rows])
    log()
    log(f"Spark start-up, not in any time above: wall {startup.wall:.1f} s, CPU {startup.cpu:.1f} s "
        f"(python {startup.cpu_self:.1f} s, JVM {startup.cpu_child:.1f} s)")
    log(f"total benchmark time {time.perf_counter() - started:.0f} s; load average at end: {load_average()}")
    log.save(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
