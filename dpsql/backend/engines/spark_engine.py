"""The Spark backend: the same plans as DuckDB, rendered to Spark SQL by dpsql's dialect, run
through pyspark (classic `master=` or Spark Connect `remote=`), results returned as Arrow.

Nothing here assumes local mode: tables come from Parquet/CSV paths or URIs the executors can
read, Spark catalog tables, or DataFrames; bounded relations are persisted DataFrames
(MEMORY_AND_DISK) behind session temp views; results come back with `toArrow()`.

Every dpsql session gets its own SparkSession (`newSession()`: shared SparkContext, separate temp
views and SQL settings) with ANSI mode off, so a row whose expression fails yields NULL instead
of an error that would depend on data (the `Guarded` node renders to the bare predicate here).
Secret seeds are passed as named parameters (`:seed`), so they never appear in the SQL text.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow
from sqlglot import exp

from dpsql.backend.engines.engine import (
    BackendFailure,
    Engine,
    Progress,
    bounded_name,
    empty_keyed_name,
    empty_name,
    engine_reason,
    keyed_name,
    reference_relations,
)
from dpsql.backend.engines.local_duckdb import LocalDuckDB
from dpsql.backend.engines.spark_rules import spark_refusal
from dpsql.backend.sql.engine_dialects import render
from dpsql.catalog.policy import Policy, Table
from dpsql.errors import CatalogError, InterfaceError, UnsupportedQueryError

DIALECT = "spark"
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
DEFAULT_MASTER = "local[2]"
SPARK_EXTRA = "pip install 'dpsql[spark]'"
# Settings every dpsql SparkSession gets. ANSI off: failing expressions yield NULL (no data-
# dependent errors); UTC: dates never shift with the driver's time zone.
SESSION_CONF = {"spark.sql.ansi.enabled": "false", "spark.sql.session.timeZone": "UTC"}
# Settings for the SparkSession dpsql starts itself (a user's own session keeps its settings).
START_CONF = {
    "spark.ui.showConsoleProgress": "false",  # dpsql reports stage progress itself
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}
# Small-data settings for tests and CI: fast start, no codegen, one JVM.
TEST_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss4m",
}


def _pyspark() -> Any:
    # pyspark 4.3 warns on import that it does not fully support pandas 3; dpsql moves data to and
    # from Spark through Arrow (toArrow; createDataFrame from pandas), never toPandas.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    missing = False
    try:
        import pyspark
        import pyspark.sql  # noqa: F401
    except ImportError:
        missing = True
    if missing:
        raise InterfaceError(f"the Spark engine needs pyspark, which is not installed: {SPARK_EXTRA}")
    _silence_query_logs()
    return pyspark


def _silence_query_logs() -> None:
    """pyspark logs every failed query's message with its stack to stderr (SQLQueryContextLogger).
    Such a message can quote private values, and a REPL's stderr is the analyst's screen: off."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def java_command() -> str | None:
    """The java launcher pyspark will use ($JAVA_HOME/bin/java, else java on PATH), or None."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def check_java() -> None:
    """A clear error before pyspark tries (and fails obscurely) to launch a JVM."""
    if java_command() is None:
        raise InterfaceError(
            "the Spark engine needs Java 17 or 21 for its driver, and none was found: install a JDK "
            "(Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME; Spark Connect "
            "(remote='sc://host:15002') needs no local Java"
        )


_started: dict[str, Any] = {}
_started_lock = threading.Lock()


def start_spark(master: str | None = None, remote: str | None = None, conf: Mapping[str, str] | None = None,
                app_name: str = "dpsql") -> Any:
    """A SparkSession: classic (`master`, default local[2]; needs Java here) or Spark Connect (`remote`)."""
    _pyspark()
    from pyspark.sql import SparkSession

    with _started_lock:
        if remote is not None:
            builder = SparkSession.builder.remote(remote)
        else:
            check_java()
            master = master or DEFAULT_MASTER
            if master.startswith("local"):
                os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = SparkSession.builder.master(master)
        builder = builder.appName(app_name)
        settings = {**START_CONF, **(conf or {})}
        if remote is None:
            options = settings.get("spark.driver.extraJavaOptions", "")
            if "log4j2.configurationFile" not in options:
                settings["spark.driver.extraJavaOptions"] = f"{options} -Dlog4j2.configurationFile=file:{LOG4J_CONFIG}".strip()
        for key, value in settings.items():
            builder = builder.config(key, value)
        failure = None
        try:
            spark = builder.getOrCreate()
        except Exception as err:  # noqa: BLE001 - the JVM gateway raises many kinds
            failure = str(err).split("\n", 1)[0]
        if failure is not None:
            raise InterfaceError(f"could not start Spark ({master or remote}): {failure}")
        if remote is None:
            spark.sparkContext.setLogLevel(os.environ.get("DPSQL_SPARK_LOG_LEVEL", "ERROR"))
        return spark


class StageProgress:
    """Reports a running Spark job's stage progress to a callback, about twice a second.

    Classic sessions poll the SparkContext's status tracker; Spark Connect sessions register
    pyspark's progress handler. Nothing is reported for jobs shorter than `delay` seconds.
    """

    def __init__(self, spark: Any, report: Progress, delay: float = 1.0, interval: float = 0.5) -> None:
        self._spark, self._report, self._delay, self._interval = spark, report, delay, interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> StageProgress:
        tracker = _tracker(self._spark)
        if tracker is not None:
            self._thread = threading.Thread(target=self._poll, args=(tracker,), daemon=True, name="dpsql-spark-progress")
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _poll(self, tracker: Any) -> None:
        started = time.monotonic()
        shown = False
        while not self._stop.wait(self._interval):
            if time.monotonic() - started < self._delay:
                continue
            parts = []
            for stage_id in sorted(tracker.getActiveStageIds()):
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    parts.append(f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks")
            if parts:
                self._report("Spark " + ", ".join(parts))
                shown = True
        if shown:
            self._report("")  # the job ended: clear the line


def _tracker(spark: Any) -> Any:
    try:
        return spark.sparkContext.statusTracker()
    except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
        return None


def _first_line(err: BaseException) -> str:
    text = str(err).strip().split("\n", 1)[0]
    return text or type(err).__name__


class SparkBackend:
    """One dpsql session's SparkSession (its own temp views), and the relations it persisted."""

    dialect = DIALECT
    capabilities: frozenset[str] = frozenset()

    def __init__(self, policy: Policy, spark: Any = None, *, master: str | None = None, remote: str | None = None,
                 frames: Mapping[str, Any] | None = None, conf: Mapping[str, str] | None = None,
                 progress: Progress | None = None) -> None:
        _pyspark()
        self._started = spark is None
        root = spark if spark is not None else start_spark(master, remote, conf)
        try:
            self.spark = root.newSession()
        except Exception:  # noqa: BLE001 - Spark Connect has no newSession: temp views then share the session
            self.spark = root
        for key, value in SESSION_CONF.items():
            self.spark.conf.set(key, value)
        self.progress = progress
        self._frames = {name.lower(): frame for name, frame in (frames or {}).items()}
        for name in self._frames:
            if policy.table(name) is None:
                raise CatalogError(f"the DataFrame '{name}' is not a table of the policy", code="DP002")
        self._views: list[str] = []
        self._persisted: list[Any] = []
        self._lock = threading.RLock()

    # --- registration --------------------------------------------------------------------------
    def register(self, table: Table, raw_name: str) -> None:
        """A DataFrame, a catalog table or a Parquet/CSV path as the temp view `raw_name`."""
        frame = self._frames.get(table.name)
        if frame is not None:
            frame = frame if hasattr(frame, "createOrReplaceTempView") else self._from_pandas(frame)
            self._view(frame, raw_name)
            return
        reader: Callable[[], Any]
        if table.engine_table is not None:
            reader = lambda: self.spark.table(table.engine_table)  # noqa: E731
        elif table.source is not None:
            fmt = table.source_format
            if fmt is None:
                raise CatalogError(f"table '{table.name}': source must be a .parquet or .csv file", code="DP002")
            if table.source_is_local and not Path(table.source).exists():
                raise CatalogError(f"table '{table.name}': source file not found: {table.source}", code="DP002")
            path = str(table.source)
            reader = (lambda: self.spark.read.parquet(path)) if fmt == "parquet" else \
                (lambda: self.spark.read.option("header", "true").csv(path))
        else:
            raise CatalogError(f"table '{table.name}' has no data: give a source or table in the policy, or tables={{...}}",
                               code="DP002")
        failure = None
        try:
            self._view(reader(), raw_name)
        except Exception as err:  # noqa: BLE001
            failure = type(err).__name__
        if failure is not None:  # outside the except block: no engine text, no __context__
            raise CatalogError(f"table '{table.name}': could not open the data source ({failure})", code="DP002")

    def _from_pandas(self, frame: Any) -> Any:
        return self.spark.createDataFrame(frame)

    def _view(self, frame: Any, name: str) -> None:
        frame.createOrReplaceTempView(name)
        self._views.append(name)

    # --- running -------------------------------------------------------------------------------
    def _sql(self, sql: str, params: Mapping[str, Any] | None) -> Any:
        return self.spark.sql(sql, args=dict(params)) if params else self.spark.sql(sql)

    def _watch(self) -> Any:
        return StageProgress(self.spark, self.progress) if self.progress is not None else _Quiet()

    def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> pyarrow.Table:
        """Run Spark SQL; the result as Arrow. Errors become BackendFailure (first line only)."""
        message = None
        with self._lock, self._watch():
            try:
                return _naive_timestamps(self._sql(sql, params).toArrow())
            except Exception as err:  # noqa: BLE001 - py4j and pyspark raise many kinds
                message = _first_line(err)
        raise BackendFailure(message)

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> pyarrow.Table:
        """Run Spark SQL; always Arrow (Spark's own result conversion goes through Arrow)."""
        return self.execute(sql, params)

    def check(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        """Run Spark SQL and drop its result (dry runs, probes): as `execute`, whose Arrow
        conversion is where Spark evaluates a dry run's dummy row."""
        self.execute(sql, params)

    def materialize(self, name: str, select: exp.Expr, params: Mapping[str, Any] | None = None, *, view: bool = False,
                    shared: bool = False) -> None:
        """A temp view over the SELECT; unless `view`, computed once and persisted (MEMORY_AND_DISK).
        (`shared` is never asked: a Spark session shares no relations.)"""
        from pyspark import StorageLevel

        message = None
        with self._lock, self._watch():
            try:
                frame = self._sql(render(select, DIALECT), params)
                if not view:
                    # The per-person window leaves spark.sql.shuffle.partitions (default 200)
                    # partitions, and a cached plan's output is never coalesced by AQE: every later
                    # query would run 200 tiny tasks (6-10x slower warm queries at 1M rows, bench/).
                    frame = frame.coalesce(self._parallelism()).persist(StorageLevel.MEMORY_AND_DISK)
                    frame.count()  # compute it now, once, not inside the first query
                    self._persisted.append(frame)
                self._view(frame, name)
                return
            except Exception as err:  # noqa: BLE001
                message = _first_line(err)
        raise BackendFailure(message)

    def schema(self, name: str) -> pyarrow.Schema:
        """Column names and Arrow types of a relation (LIMIT 0: no data read)."""
        return self.execute(render(exp.select("*").from_(exp.to_identifier(name, quoted=True)).limit(0), DIALECT)).schema

    def _parallelism(self) -> int:
        """Partitions for a persisted relation: the cluster's cores (Spark Connect: shuffle partitions)."""
        try:
            return max(1, int(self.spark.sparkContext.defaultParallelism))
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            return max(1, int(self.spark.conf.get("spark.sql.shuffle.partitions", "200")))

    def refusal(self, tree: exp.Expr) -> str | None:
        """Constructs that could fail on private data on Spark, or mean something else there."""
        return spark_refusal(tree)

    def interrupt(self) -> None:
        """Interrupt this session's running operations (Spark 4: classic and Connect)."""
        try:
            self.spark.interruptAll()
        except Exception:  # noqa: BLE001 - best effort: a stopped JVM or an old server has nothing to interrupt
            pass

    def close(self) -> None:
        """Unpersist this session's relations and drop its temp views (a SparkSession is kept for reuse)."""
        with self._lock:
            for frame in self._persisted:
                try:
                    frame.unpersist()
                except Exception:  # noqa: BLE001 - the JVM may already be gone at exit
                    pass
            for name in self._views:
                try:
                    self.spark.catalog.dropTempView(name)
                except Exception:  # noqa: BLE001
                    pass
            self._persisted.clear()
            self._views.clear()


class _Quiet:
    def __enter__(self) -> _Quiet:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class SparkEngine(Engine):
    """The Spark engine: Engine over a SparkBackend, with a local DuckDB for released values."""

    def __init__(self, policy: Policy, spark: Any = None, *, master: str | None = None, remote: str | None = None,
                 frames: Mapping[str, Any] | None = None, conf: Mapping[str, str] | None = None,
                 progress: Progress | None = None) -> None:
        super().__init__(policy, SparkBackend(policy, spark, master=master, remote=remote, frames=frames, conf=conf,
                                              progress=progress), LocalDuckDB())

    def dry_run(self, table: Table, select: exp.Expr, params: Mapping[str, Any] | None = None, keys: tuple[str, ...] = (),
                text: str | None = None) -> None:
        """Spark's own dry run, then DuckDB's: DuckDB is the reference engine, so a statement its
        binder rejects (`dept + 1`, `factorial(BIGINT)`) is refused here too, uncharged, in the
        same words, rather than answered by Spark's implicit casts (`'sales' + 1` is NULL there).
        Both read the same empty stand-ins of the session relations the statement names."""
        super().dry_run(table, select, params, keys, text)
        empty, keyed = empty_name(table), empty_keyed_name(table)
        names = {bounded_name(table): empty, empty: empty, keyed: keyed}
        if keys:
            names[keyed_name(table, keys)] = keyed
        failure = self.local.reference_check(reference_relations(table), select, params, names)
        if failure is not None:
            raise UnsupportedQueryError(f"the engine rejects this query: {engine_reason(BackendFailure(failure))}",
                                        code="DP123", hint="rewrite the expression named above; nothing was charged")

    @property
    def progress(self) -> Progress | None:
        """The stage-progress callback (the REPL and CLI set one)."""
        return self.backend.progress  # type: ignore[attr-defined,no-any-return]

    @progress.setter
    def progress(self, report: Progress | None) -> None:
        self.backend.progress = report  # type: ignore[attr-defined]


def _naive_timestamps(table: pyarrow.Table) -> pyarrow.Table:
    """Spark's TIMESTAMP is an instant (Arrow: timestamp with zone UTC, the session's zone), DuckDB's
    and the policy's a wall-clock time without zone: the same UTC wall clock, so a timestamp key
    equals its derived domain's keys and DuckDB's on every engine."""
    fields = [pyarrow.field(f.name, pyarrow.timestamp(f.type.unit), f.nullable)
              if pyarrow.types.is_timestamp(f.type) and f.type.tz is not None else f for f in table.schema]
    schema = pyarrow.schema(fields)
    return table if schema.equals(table.schema) else table.cast(schema)
