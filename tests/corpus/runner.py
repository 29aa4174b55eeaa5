"""Run the corpus: every query through `dpsql.connect` (fixed seed), its outcome classified, and
each answered noisy cell compared with the exact answer of raw DuckDB on the same tables.

Used by tests/corpus/test_corpus.py (assertions) and tests/corpus/report.py (the tables for the
closing note). One connection per schema, one raw DuckDB connection beside it.
"""

from __future__ import annotations

import math
import re
import tomllib
import traceback
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

import dpsql
from tests.corpus import data

HERE = Path(__file__).resolve().parent
QUERY_DIR = HERE / "queries"
POLICY_DIR = HERE / "policies"
SEED = 20260730
EXPECTATIONS = ("answer", "refuse")

# The list of causes (issue 30, "Why"), by number: a query that needs one of these
# shapes names it in `gap`, so the misses can be counted by cause.
GAPS: dict[int, str] = {
    1: "unit columns with different names (DP136)",
    2: "comma joins / joins starting from a public table (DP135)",
    3: "released results combined with rows (DP126)",
    4: "EXISTS / NOT EXISTS / correlated subqueries (DP110)",
    5: "derived tables that contain joins (DP110)",
    6: "GROUP BY through CAST or epoch (DP114)",
    7: "spellings: VAR, STDEV, RAND() ... (DP113)",
    8: "output alias shadowing a column in HAVING/ORDER BY (DP105)",
    9: "COUNT(DISTINCT non-unit column) (DP116)",
    10: "windows over the aggregate in the same SELECT (DP108)",
    11: "one each: ORDER BY in a row-level subquery, per-unit aggregate then histogram, CAST in an aggregate, BigQuery option names",
    12: "public table without [columns]",
    13: "DuckDB/Spark parity",
    0: "other (not in the issue's list)",
}


@dataclass(frozen=True)
class Query:
    """One corpus entry: the SQL as written by its source (table names and dialect adapted)."""

    id: str
    file: str
    schema: str
    expect: str
    source: str
    sql: str
    exact: str | None = None  # the same question in plain DuckDB SQL, when `sql` is not
    gap: int | None = None    # the issue item the shape needs, when it is one of them
    note: str = ""

    @property
    def family(self) -> str:
        """The source family (the query file's name): tpch, smartnoise, qrlew, ..."""
        return self.file


@dataclass
class Outcome:
    """What dpsql did with one query, and how its noisy cells compare with the exact answer."""

    query: Query
    status: str                     # "answered", "refused" (a DP1xx code, or "probe": columns only) or "error"
    code: str | None = None         # the DPnnn code of a refusal or error
    message: str = ""               # the first line of the refusal or error
    crash: bool = False             # a non-dpsql exception (a bug to report)
    cells_checked: int = 0          # noisy cells matched to an exact row and compared
    cells_within: int = 0           # ... with |noisy - exact| <= ci95
    cells_unmatched: int = 0        # noisy cells whose key the exact answer does not have
    cells_no_interval: int = 0      # post-processed cells (no ci95) and non-numeric cells
    exact_error: str | None = None  # why the exact answer could not be computed
    rows: int = 0
    exact_rows: int | None = None   # rows of the exact answer (without the outermost LIMIT)

    @property
    def answered(self) -> bool:
        return self.status == "answered"


@dataclass
class Summary:
    outcomes: list[Outcome] = field(default_factory=list)

    def of(self, expect: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.query.expect == expect]

    @property
    def answerable(self) -> list[Outcome]:
        return self.of("answer")

    @property
    def must_refuse(self) -> list[Outcome]:
        return self.of("refuse")

    @property
    def answered(self) -> list[Outcome]:
        return [o for o in self.answerable if o.answered]

    @property
    def misses(self) -> list[Outcome]:
        return [o for o in self.answerable if not o.answered]

    @property
    def leaks(self) -> list[Outcome]:
        """Must-refuse queries that were not refused (answered, or failed another way)."""
        return [o for o in self.must_refuse if o.status != "refused"]

    @property
    def errors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "error"]

    @property
    def cells(self) -> tuple[int, int]:
        return sum(o.cells_within for o in self.answered), sum(o.cells_checked for o in self.answered)


# --- loading -----------------------------------------------------------------------------------

def load_corpus(directory: Path = QUERY_DIR) -> list[Query]:
    """Every query of every `queries/*.toml`, checked for shape (ids unique, known schema)."""
    queries: list[Query] = []
    for path in sorted(directory.glob("*.toml")):
        with path.open("rb") as handle:
            doc = tomllib.load(handle)
        default_schema = doc.get("schema")
        for entry in doc.get("query", []):
            unknown = set(entry) - {"id", "schema", "expect", "source", "sql", "exact", "gap", "note"}
            if unknown:
                raise ValueError(f"{path.name}: query {entry.get('id')!r} has unknown keys {sorted(unknown)}")
            query = Query(id=entry["id"], file=path.stem, schema=entry.get("schema", default_schema), expect=entry["expect"],
                          source=entry["source"], sql=entry["sql"].strip(), exact=(entry.get("exact") or "").strip() or None,
                          gap=entry.get("gap"), note=entry.get("note", ""))
            if query.schema not in data.SCHEMAS:
                raise ValueError(f"{path.name}: query {query.id!r}: unknown schema {query.schema!r}")
            if query.expect not in EXPECTATIONS:
                raise ValueError(f"{path.name}: query {query.id!r}: expect must be one of {EXPECTATIONS}")
            if query.gap is not None and query.gap not in GAPS:
                raise ValueError(f"{path.name}: query {query.id!r}: gap {query.gap} is not an item of the issue")
            queries.append(query)
    ids = Counter(q.id for q in queries)
    duplicates = [i for i, n in ids.items() if n > 1]
    if duplicates:
        raise ValueError(f"duplicate query ids: {duplicates}")
    return queries


# --- comparing with the exact answer -----------------------------------------------------------

def _key(value: Any) -> Any:
    """A group key comparable across dpsql and raw DuckDB (types may differ: int/float/Decimal)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float, Decimal)):
        number = float(value)
        return None if math.isnan(number) else round(number, 6)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).isoformat()
    return str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float, Decimal)):
        number = float(value)
        return None if math.isnan(number) else number
    return None


_DP_CLAUSE = re.compile(r"\bSELECT\s+WITH\s+DIFFERENTIAL_PRIVACY\s+OPTIONS\s*\([^()]*\)", re.IGNORECASE)


def exact_sql(query: Query) -> str:
    """The SQL raw DuckDB runs: the query's `exact`, else its SQL without BigQuery's privacy
    clause; without the outermost LIMIT and OFFSET, so that a key dpsql keeps by its noisy order
    is still found among the exact rows."""
    text = query.exact or _DP_CLAUSE.sub("SELECT", query.sql)
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except sqlglot.errors.ParseError:
        return text
    if isinstance(tree, (exp.Select, exp.Union)) and (tree.args.get("limit") or tree.args.get("offset")):
        tree = tree.copy()
        tree.set("limit", None)
        tree.set("offset", None)
        return tree.sql(dialect="duckdb")
    return text


def compare_cells(outcome: Outcome, rows: Sequence[tuple[Any, ...]], noise: Sequence[Any], ci95: Sequence[tuple[float | None, ...]],
                  exact_rows: Iterable[tuple[Any, ...]], public: bool = False) -> None:
    """Match each answered row to an exact row by its key columns (those without noise) and
    count each noisy numeric cell within its interval when |noisy - exact| <= ci95."""
    exact_rows = list(exact_rows)
    if public:  # read exactly, no noise: every row must be an exact row
        remaining = Counter(tuple(_key(v) for v in row) for row in exact_rows)
        for row in rows:
            key = tuple(_key(v) for v in row)
            outcome.cells_checked += len(row)
            if remaining[key] > 0:
                remaining[key] -= 1
                outcome.cells_within += len(row)
        return
    key_columns = [i for i, info in enumerate(noise) if info is None]
    if not key_columns and len(exact_rows) > 1:
        # grouped by keys the query does not output: rows cannot be matched
        outcome.cells_unmatched += sum(len(row) for row in rows)
        return
    index: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for row in exact_rows:
        index.setdefault(tuple(_key(row[i]) for i in key_columns), []).append(row)
    for r, row in enumerate(rows):
        noisy_columns = [i for i in range(len(row)) if i not in key_columns]
        bucket = index.get(tuple(_key(row[i]) for i in key_columns))
        match = bucket.pop(0) if bucket else None
        for i in noisy_columns:
            half = ci95[r][i] if r < len(ci95) and i < len(ci95[r]) else None
            value = _number(row[i])
            if half is None or value is None:
                outcome.cells_no_interval += 1
                continue
            if match is None:
                outcome.cells_unmatched += 1
                continue
            truth = _number(match[i])
            if truth is None:
                # an empty group: dpsql releases a declared key that the exact answer has no row
                # for, or a NULL aggregate; not a comparison
                outcome.cells_unmatched += 1
                continue
            outcome.cells_checked += 1
            if abs(value - truth) <= half * (1 + 1e-9) + 1e-9:
                outcome.cells_within += 1


# --- running -----------------------------------------------------------------------------------

def _first_line(error: BaseException) -> str:
    text = getattr(error, "message", None) or str(error)
    return text.strip().splitlines()[0][:200] if text.strip() else type(error).__name__


def run_query(con: dpsql.Connection, raw: duckdb.DuckDBPyConnection, query: Query) -> Outcome:
    outcome = Outcome(query=query, status="error")
    try:
        cursor = con.execute(query.sql)
        rows = cursor.fetchall() if cursor.description else []
    except dpsql.Error as error:
        outcome.code = error.code
        outcome.message = _first_line(error)
        outcome.status = "refused" if error.code and error.code.startswith("DP1") else "error"
        return outcome
    except Exception as error:  # noqa: BLE001 - a crash of dpsql is an outcome to report, not a test error
        outcome.crash = True
        outcome.message = f"{type(error).__name__}: {_first_line(error)}"
        outcome.code = None
        tb = traceback.extract_tb(error.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb) if "/dpsql/" in f.filename), "")
        if where:
            outcome.message += f" (at {where})"
        return outcome
    result = cursor.result
    if result is not None and result.kind == "probe":
        # A column probe (LIMIT 0/1 over rows): the columns and types, no row, nothing charged.
        outcome.status, outcome.code, outcome.message = "refused", "probe", "answered with columns only (a column probe)"
        return outcome
    outcome.status = "answered"
    outcome.rows = len(rows)
    try:
        exact_rows = raw.execute(exact_sql(query)).fetchall()
    except duckdb.Error as error:
        outcome.exact_error = _first_line(error)
        return outcome
    outcome.exact_rows = len(exact_rows)
    compare_cells(outcome, rows, cursor.noise_info, cursor.cell_ci95, exact_rows,
                  public=result is not None and result.kind == "public")
    return outcome


def run_schema(schema: str, queries: Sequence[Query], seed: int = SEED) -> list[Outcome]:
    tables = data.build(schema)
    raw = duckdb.connect()
    raw.execute("CREATE SCHEMA public")  # BI tools qualify tables as PostgreSQL's public.name
    for name, frame in tables.items():
        raw.register(name, frame)
        raw.execute(f'CREATE VIEW public."{name}" AS SELECT * FROM main."{name}"')
    con = dpsql.connect(policy=str(POLICY_DIR / f"{schema}.toml"), tables=tables, random_seed=seed)
    try:
        return [run_query(con, raw, q) for q in queries]
    finally:
        con.close()
        raw.close()


def run_corpus(queries: Sequence[Query] | None = None, seed: int = SEED) -> Summary:
    queries = list(queries) if queries is not None else load_corpus()
    summary = Summary()
    by_schema: dict[str, list[Query]] = {}
    for q in queries:
        by_schema.setdefault(q.schema, []).append(q)
    outcomes: dict[str, Outcome] = {}
    for schema, group in by_schema.items():
        for outcome in run_schema(schema, group, seed):
            outcomes[outcome.query.id] = outcome
    summary.outcomes = [outcomes[q.id] for q in queries]
    return summary


# --- tables for the report ---------------------------------------------------------------------

def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)] if rows else [len(h) for h in header]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def report(summary: Summary) -> str:
    """The counts, the per-source table, the misses by cause and code, and every error."""
    within, checked = summary.cells
    answerable, refuse = summary.answerable, summary.must_refuse
    out = [
        f"answerable: {len(summary.answered)} of {len(answerable)} answered "
        f"({100 * len(summary.answered) / max(1, len(answerable)):.0f}%); "
        f"must-refuse: {sum(o.status == 'refused' for o in refuse)} of {len(refuse)} refused",
        f"answered noisy cells within their 95% interval of the exact answer: {within} of {checked}"
        + (f" ({100 * within / checked:.1f}%)" if checked else ""),
        "",
        "by source",
    ]
    families = sorted({o.query.family for o in summary.outcomes})
    rows = []
    for fam in families:
        mine = [o for o in summary.outcomes if o.query.family == fam]
        ans = [o for o in mine if o.query.expect == "answer"]
        ref = [o for o in mine if o.query.expect == "refuse"]
        w = sum(o.cells_within for o in ans if o.answered)
        c = sum(o.cells_checked for o in ans if o.answered)
        rows.append([fam, f"{sum(o.answered for o in ans)}/{len(ans)}", f"{sum(o.status == 'refused' for o in ref)}/{len(ref)}",
                     f"{w}/{c}", ", ".join(f"{k} {v}" for k, v in sorted(Counter(o.code or 'crash' for o in ans if not o.answered).items()))])
    out.append(_table(["source", "answered", "refused", "cells within", "misses by code"], rows))
    out += ["", "misses by cause (the issue's items; `gap` in the query files)"]
    rows = []
    for gap in sorted({o.query.gap if o.query.gap is not None else 0 for o in summary.misses}):
        mine = [o for o in summary.misses if (o.query.gap if o.query.gap is not None else 0) == gap]
        codes = Counter(o.code or ("crash" if o.crash else "error") for o in mine)
        rows.append([gap, len(mine), ", ".join(f"{k} {v}" for k, v in sorted(codes.items())), GAPS[gap]])
    out.append(_table(["item", "misses", "codes", "cause"], rows))
    out += ["", "misses by code"]
    codes = Counter(o.code or ("crash" if o.crash else "error") for o in summary.misses)
    out.append(_table(["code", "misses"], [[k, v] for k, v in sorted(codes.items())]))
    answered_gaps = [o for o in summary.answered if o.query.gap]
    if answered_gaps:
        out += ["", "answered although tagged with a gap (the gap is closed, or the tag is wrong):"]
        out += [f"  {o.query.id} (item {o.query.gap})" for o in answered_gaps]
    if summary.errors:
        out += ["", "errors (not refusals):"]
        out += [f"  {o.query.id}: {'CRASH ' if o.crash else ''}{o.code or ''} {o.message}" for o in summary.errors]
    if summary.leaks:
        out += ["", "MUST-REFUSE QUERIES NOT REFUSED:"]
        out += [f"  {o.query.id}: {o.status}" for o in summary.leaks]
    empty = [o for o in summary.answered if o.rows == 0 and o.exact_rows]
    if empty:
        out += ["", "answered with no row released although the exact answer has rows (partition selection released no key):"]
        out += [f"  {o.query.id} (exact: {o.exact_rows} rows)" for o in empty]
    no_exact = [o for o in summary.answered if o.exact_error]
    if no_exact:
        out += ["", "answered, but raw DuckDB could not compute the exact answer (no coverage):"]
        out += [f"  {o.query.id}: {o.exact_error}" for o in no_exact]
    return "\n".join(out)


def misses_listing(summary: Summary) -> str:
    """One line per miss: id, code, first line of the refusal."""
    return "\n".join(f"{o.query.id:28} {o.code or 'crash':6} gap={o.query.gap} {o.message}" for o in summary.misses)
