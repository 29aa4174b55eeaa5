"""dpsql's own plan nodes, rendered per engine by dpsql, and the engine dialects that render them.

sqlglot maps a DuckDB function to a Spark one silently even when the meaning changes (`hash`
becomes Spark's 32-bit Murmur3, `list(x ORDER BY x)` loses its order). So
every construct whose exact result the privacy proof or cross-engine parity relies on is a node
of ours, with one rendering per engine written here:

- KeyedHash(seed, values...): md5 hex of 'seed:v1:v2:...' (identical hex on DuckDB and Spark).
  Values must be integers, text, booleans or dates (their text forms agree across engines);
  `hash_input` turns a DOUBLE into an integer first, because '1e7' and '10000000.0' differ.
- HashBits(seed, values...): the first 15 hex digits of KeyedHash as a BIGINT in [0, 2^60).
- IsFinite(x): not NULL-safe on purpose (NULL -> NULL, like DuckDB's isfinite).
- DayNumber(date): proleptic Gregorian ordinal (0001-01-01 is 1), as Python's date.toordinal.
- ExactSum(x): the exact sum of integers (DuckDB HUGEINT, Spark DECIMAL(38,0)); never wraps.
- WideInt(x): an integer widened for exact products (HUGEINT / DECIMAL(38, 0)).
- Guarded(predicate): a predicate whose errors become NULL (DuckDB TRY; Spark runs with ANSI
  mode off, where errors already are NULL).
- IntegerSeries(n): a table of 0..n-1 in one column.

The analyst's own expressions (typed by the analysis) render for Spark with DuckDB's meaning
(`backend/sql/spark_semantics.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.generators.duckdb import DuckDBGenerator

from dpsql.backend.sql.spark_semantics import duckdb_unix_to_time, with_duckdb_meaning

if TYPE_CHECKING:  # sqlglot's Spark, Spark2 and Hive dialects load only for the Spark engine (_spark)
    from sqlglot.generators.spark import SparkGenerator

SESSION_PREFIX = "__dpsql_"  # every session relation's name starts with it (backend/engines/engine.py: source_name, bounded_name, ...)
HASH_DIGITS = 15  # hex digits of a HashBits value: 60 bits, so every engine's BIGINT holds it


class KeyedHash(exp.Expression, exp.Func):
    """md5 hex digest of the seed and the values joined by ':' (NULLs skipped)."""

    arg_types = {"this": True, "expressions": True}
    is_var_len_args = True


class HashBits(exp.Expression, exp.Func):
    """The first 60 bits of KeyedHash(seed, values...) as a BIGINT."""

    arg_types = {"this": True, "expressions": True}
    is_var_len_args = True


class IsFinite(exp.Expression, exp.Func):
    """x is neither NaN nor +-infinity (NULL for NULL). `kind` is the policy type (float or date)."""

    arg_types = {"this": True, "kind": True}


class DayNumber(exp.Expression, exp.Func):
    """The ordinal of a date: 0001-01-01 is day 1."""

    arg_types = {"this": True}


class ExactSum(exp.Expression, exp.AggFunc):
    """SUM of integer values, exact (no wrap-around, whatever the row order); `distinct`: of
    each distinct value once (SUM(DISTINCT x))."""

    arg_types = {"this": True, "distinct": False}


class WideInt(exp.Expression, exp.Func):
    """An integer widened so products cannot overflow (DuckDB HUGEINT, Spark DECIMAL(38, 0))."""

    arg_types = {"this": True}


class Guarded(exp.Expression, exp.Func):
    """A row predicate whose evaluation errors count as NULL (so no error can depend on data)."""

    arg_types = {"this": True}


class IntegerSeries(exp.Expression):
    """FROM-clause table of the integers 0..count-1, with a table alias and one column name."""

    arg_types = {"count": True, "alias": True, "column": True}


def hash_input(value: exp.Expr, column_type: str) -> exp.Expr:
    """A value as a hash input whose text form agrees on every engine.

    DOUBLEs print differently per engine ('1.0E7', '10000000.0'), so they enter as the integer
    floor(x * 1024) clamped to +-2^62 (exact IEEE arithmetic everywhere; NaN sorts above every
    number on both engines, so it clamps to 2^62). Hash inputs only decide tie-free ranks and
    subsamples: collisions cost randomness quality, never correctness.
    """
    if column_type != "float":
        return value
    limit = exp.Literal.number(2**62)
    scaled = exp.Mul(this=value, expression=exp.Literal.number("1024.0"))
    clamped = exp.func("least", exp.func("greatest", scaled, exp.Neg(this=limit.copy())), limit)
    return exp.cast(exp.func("floor", clamped), "BIGINT")


# --- renderings: each builds a sqlglot expression for its engine, then prints it -------------------


def _md5_expr(node: KeyedHash | HashBits) -> exp.Expr:
    values = [exp.cast(v.copy(), "VARCHAR") for v in (node.this, *node.expressions)]
    # An anonymous CONCAT_WS: both engines skip NULL arguments natively (sqlglot's ConcatWs
    # would add a NULL-propagating CASE around it).
    return exp.MD5(this=exp.Anonymous(this="CONCAT_WS", expressions=[exp.Literal.string(":"), *values]))


def _prefix(node: HashBits) -> exp.Expr:
    return exp.Substring(this=_md5_expr(node), start=exp.Literal.number(1), length=exp.Literal.number(HASH_DIGITS))


def _md5(gen: DuckDBGenerator | SparkGenerator, node: KeyedHash) -> str:
    return gen.sql(_md5_expr(node))


def _duckdb_hash_bits(gen: DuckDBGenerator, node: HashBits) -> str:
    return gen.sql(exp.cast(exp.DPipe(this=exp.Literal.string("0x"), expression=_prefix(node)), "BIGINT"))


def _spark_hash_bits(gen: SparkGenerator, node: HashBits) -> str:
    digits = exp.Anonymous(this="CONV", expressions=[_prefix(node), exp.Literal.number(16), exp.Literal.number(10)])
    return gen.sql(exp.cast(digits, "BIGINT"))


def _infinity() -> exp.Expr:
    return exp.cast(exp.Literal.string("Infinity"), "DOUBLE")


def _duckdb_is_finite(gen: DuckDBGenerator, node: IsFinite) -> str:
    return gen.sql(exp.Anonymous(this="ISFINITE", expressions=[node.this.copy()]))


def _spark_is_finite(gen: SparkGenerator, node: IsFinite) -> str:
    if node.text("kind") == "date":
        return gen.sql(exp.paren(exp.Not(this=exp.Is(this=node.this.copy(), expression=exp.Null()))))  # Spark dates are finite
    # NaN sorts above +infinity in Spark, so this is false for NaN and +-inf, NULL for NULL.
    return gen.sql(exp.paren(exp.LT(this=exp.Abs(this=node.this.copy()), expression=_infinity())))


def _epoch() -> exp.Expr:
    return exp.cast(exp.Literal.string("0001-01-01"), "DATE")


def _duckdb_day_number(gen: DuckDBGenerator, node: DayNumber) -> str:
    days = exp.cast(exp.paren(exp.Sub(this=node.this.copy(), expression=_epoch())), "BIGINT")
    return gen.sql(exp.paren(exp.Add(this=days, expression=exp.Literal.number(1))))


def _spark_day_number(gen: SparkGenerator, node: DayNumber) -> str:
    days = exp.cast(exp.Anonymous(this="DATEDIFF", expressions=[node.this.copy(), _epoch()]), "BIGINT")
    return gen.sql(exp.paren(exp.Add(this=days, expression=exp.Literal.number(1))))


def _distinct(node: ExactSum, value: exp.Expr) -> exp.Expr:
    return exp.Distinct(expressions=[value]) if node.args.get("distinct") else value


def _duckdb_exact_sum(gen: DuckDBGenerator, node: ExactSum) -> str:
    return gen.sql(exp.Sum(this=_distinct(node, node.this.copy())))  # DuckDB sums BIGINT into HUGEINT: already exact


def _spark_exact_sum(gen: SparkGenerator, node: ExactSum) -> str:
    # DISTINCT of the DECIMAL(38, 0) values is DISTINCT of the integers (the cast is exact).
    return gen.sql(exp.Sum(this=_distinct(node, exp.cast(node.this.copy(), exp.DataType.build("DECIMAL(38, 0)")))))


def _duckdb_wide(gen: DuckDBGenerator, node: WideInt) -> str:
    return gen.sql(exp.cast(node.this.copy(), "HUGEINT"))


def _spark_wide(gen: SparkGenerator, node: WideInt) -> str:
    return gen.sql(exp.cast(node.this.copy(), exp.DataType.build("DECIMAL(38, 0)")))


def _duckdb_guarded(gen: DuckDBGenerator, node: Guarded) -> str:
    return gen.sql(exp.Anonymous(this="TRY", expressions=[node.this.copy()]))


def _spark_guarded(gen: SparkGenerator, node: Guarded) -> str:
    return gen.sql(node.this)  # ANSI mode is off in every dpsql Spark session: errors are NULL already


def _series(gen: DuckDBGenerator | SparkGenerator, node: IntegerSeries) -> str:
    # RANGE(0, n) is a table function on both engines (sqlglot would rewrite DuckDB's into a
    # Spark EXPLODE that fails): built as an anonymous call so no mapping touches it.
    call = exp.Anonymous(this="RANGE", expressions=[exp.Literal.number(0), node.args["count"].copy()])
    alias = exp.TableAlias(this=node.args["alias"].copy(), columns=[node.args["column"].copy()])
    return gen.sql(exp.Table(this=call, alias=alias))


def _spark_try_cast(gen: SparkGenerator, node: exp.TryCast) -> str:
    return gen.cast_sql(node, safe_prefix="TRY_")  # Spark's generator prints CAST (it predates Spark 3.2)


class UnknownRelation(Exception):
    """A dry-run rendering met a session relation it has no empty stand-in for (see `render`)."""


def _relation(gen: Any, node: exp.Identifier) -> exp.Identifier:
    """The identifier to print for `node`: under `render(..., relations=...)`, a relation the
    statement reads (FROM, JOIN) is printed as its stand-in; a session relation (`__dpsql_*`)
    without one raises UnknownRelation (fail closed: a dry run never reads a relation with data).
    Other names in those places are the statement's own CTEs."""
    relations: Mapping[str, str] | None = getattr(gen, "relations", None)
    parent = node.parent
    if relations is None or node.arg_key != "this" or not isinstance(parent, (exp.From, exp.Join, exp.Table)):
        return node
    if isinstance(parent, exp.Table) and (parent.args.get("db") or parent.args.get("catalog")):
        raise UnknownRelation(parent.sql())
    found = relations.get(node.name)
    if found is not None:
        return exp.to_identifier(found, quoted=True)
    if node.name.startswith(SESSION_PREFIX):
        raise UnknownRelation(node.name)
    return node


class EngineDuckDBGenerator(DuckDBGenerator):
    """DuckDB's generator plus dpsql's nodes."""

    def identifier_sql(self, expression: exp.Identifier) -> str:
        return super().identifier_sql(_relation(self, expression))

    TRANSFORMS = {
        **DuckDBGenerator.TRANSFORMS,
        KeyedHash: _md5,
        HashBits: _duckdb_hash_bits,
        IsFinite: _duckdb_is_finite,
        DayNumber: _duckdb_day_number,
        ExactSum: _duckdb_exact_sum,
        Guarded: _duckdb_guarded,
        WideInt: _duckdb_wide,
        IntegerSeries: _series,
        exp.UnixToTime: duckdb_unix_to_time,  # to_timestamp(seconds): no time zone, years 1-9999
    }


class EngineDuckDB(DuckDB):
    """The DuckDB dialect dpsql renders engine SQL with."""

    Generator = EngineDuckDBGenerator


@functools.cache
def _spark() -> Dialect:
    """The Spark SQL dialect dpsql renders engine SQL with: Spark's generator plus dpsql's nodes
    (and TRY_CAST kept as written). Built on first use: sqlglot's Spark dialect (with Spark2 and
    Hive under it) takes about 20 ms to import, which a DuckDB session never needs."""
    from sqlglot.dialects.spark import Spark
    from sqlglot.generators.spark import SparkGenerator

    class EngineSparkGenerator(SparkGenerator):
        def identifier_sql(self, expression: exp.Identifier) -> str:
            return super().identifier_sql(_relation(self, expression))

        TRANSFORMS = with_duckdb_meaning({  # the analyst's expressions with DuckDB's meaning (backend/sql/spark_semantics.py)
            **SparkGenerator.TRANSFORMS,
            KeyedHash: _md5,
            HashBits: _spark_hash_bits,
            IsFinite: _spark_is_finite,
            DayNumber: _spark_day_number,
            ExactSum: _spark_exact_sum,
            Guarded: _spark_guarded,
            WideInt: _spark_wide,
            IntegerSeries: _series,
            exp.TryCast: _spark_try_cast,
        })

    class EngineSpark(Spark):
        Generator = EngineSparkGenerator

    return EngineSpark()


_DUCKDB = EngineDuckDB()


def engine_dialect(name: str) -> Dialect:
    """The sqlglot dialect of an engine ("duckdb" or "spark")."""
    if name == "duckdb":
        return _DUCKDB
    if name == "spark":
        return _spark()
    raise KeyError(name)


def render(expression: exp.Expr, dialect: str = "duckdb", relations: Mapping[str, str] | None = None, *,
           fresh: bool = False) -> str:
    """Engine SQL text of an expression for one engine (EXPLAIN shows the text that runs).

    `relations`: print the relations the statement reads under other names (a dry run's empty
    stand-ins of the session relations: the same statement, over tables without data); a session
    relation (`__dpsql_*`) not in it raises UnknownRelation. `fresh`: the tree was built for this
    call and is dropped after it, so the generator's transforms may work on it in place (sqlglot
    otherwise copies the whole tree first, as long as printing it)."""
    if relations is None:
        return engine_dialect(dialect).generate(expression, copy=not fresh)
    generator = engine_dialect(dialect).generator()
    generator.relations = relations  # type: ignore[attr-defined]  # read by _relation (subclasses have a __dict__)
    return generator.generate(expression, copy=not fresh)
