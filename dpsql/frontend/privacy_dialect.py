"""The dpsql sqlglot dialect: DuckDB's, plus BigQuery's per-query privacy options.

`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-7) COUNT(*) FROM t` parses
into a Select whose `hint` arg is a PrivacyOptions node. The hook is the parser's `_parse_hint`,
which sqlglot calls right after the SELECT keyword.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlglot import TokenType, exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.generators.duckdb import DuckDBGenerator
from sqlglot.parsers.duckdb import DuckDBParser

from dpsql.frontend.time_formats import postgres_timestamp

E = TypeVar("E", bound=exp.Expr)


class PrivacyOptions(exp.Expression):
    """`WITH DIFFERENTIAL_PRIVACY OPTIONS (name = value, ...)`: expressions are EQ nodes."""

    arg_types = {"expressions": True}


class ContributionBounds(exp.Expression):
    """BigQuery's `contribution_bounds_per_group => (lower, upper)` on SUM/AVG: wraps the aggregate's
    argument (`this`); `expressions` are the two bounds as written. The analysis checks them
    against the policy's bounds (they may only narrow them, DP120) and clamps each value into them."""

    arg_types = {"this": True, "expressions": True}


CONTRIBUTION_BOUNDS = "contribution_bounds_per_group"


def _bounded(cls: type[exp.Func]) -> Callable[[list[exp.Expr]], exp.Expr]:
    # SUM(x, contribution_bounds_per_group => (lo, hi)) and AVG(...): BigQuery's per-aggregate
    # bounds, kept beside the argument. Any other second argument stays a call by its name (DP113).
    def build(args: list[exp.Expr]) -> exp.Expr:
        if len(args) == 1:
            return cls(this=args[0])
        named = args[1] if len(args) == 2 else None
        if isinstance(named, exp.Kwarg) and named.this.name.lower() == CONTRIBUTION_BOUNDS:
            bounds = named.expression
            values = list(bounds.expressions) if isinstance(bounds, (exp.Tuple, exp.Paren)) else [bounds]
            if isinstance(bounds, exp.Paren):
                values = [bounds.this]
            return cls(this=ContributionBounds(this=args[0], expressions=values))
        return exp.Anonymous(this=cls.sql_names()[0], expressions=args)
    return build


def _median(args: list[exp.Expr]) -> exp.Expr:
    # MEDIAN(col) is sqlglot's Median; MEDIAN(col, b) proposes a bound for PTR-Laplace, which
    # sqlglot's one-argument Median cannot hold: keep it as an anonymous call for the analysis.
    if len(args) == 1:
        return exp.Median(this=args[0])
    return exp.Anonymous(this="MEDIAN", expressions=args)


def _quantile(args: list[exp.Expr]) -> exp.Expr:
    # QUANTILE(col, p, b) proposes a bound like MEDIAN(col, b); sqlglot's Quantile would drop b.
    if len(args) == 2:
        return exp.Quantile(this=args[0], quantile=args[1])
    return exp.Anonymous(this="QUANTILE", expressions=args)


def _to_timestamp(args: list[exp.Expr]) -> exp.Expr:
    # to_timestamp(seconds) is DuckDB's (and PostgreSQL's) epoch conversion. PostgreSQL's
    # to_timestamp(text, format), as Superset writes its time filters, is read here when both are
    # constants (frontend/time_formats.py); otherwise it stays a call by its own name (DP113).
    if len(args) == 1:
        return exp.UnixToTime(this=args[0])
    text, template = (args + [exp.Null()])[:2]
    if len(args) == 2 and all(isinstance(a, exp.Literal) and a.is_string for a in (text, template)):
        value = postgres_timestamp(text.this, template.this)
        if value is not None:
            return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), exp.DataType.build("TIMESTAMP"))
    return exp.Anonymous(this="to_timestamp", expressions=args)


class DpsqlParser(DuckDBParser):
    """DuckDB's parser with the privacy options clause after SELECT, MEDIAN(col, b) and QUANTILE(col, p, b),
    and PostgreSQL's to_timestamp(text, format) of constants."""

    FUNCTIONS = {**DuckDBParser.FUNCTIONS, "MEDIAN": _median, "QUANTILE": _quantile, "TO_TIMESTAMP": _to_timestamp,
                 "SUM": _bounded(exp.Sum), "AVG": _bounded(exp.Avg)}
    # DuckDB's QUANTILE has a dedicated parser that keeps two arguments: parse it as a plain call.
    FUNCTION_PARSERS = {name: parse for name, parse in DuckDBParser.FUNCTION_PARSERS.items() if name != "QUANTILE"}

    # Each `?` keeps its offset in the text: qmark parameters bind in text order, and sqlglot's
    # tree order is not text order (a Select holds LIMIT before WHERE).
    PLACEHOLDER_PARSERS = {
        **DuckDBParser.PLACEHOLDER_PARSERS,
        TokenType.PLACEHOLDER: lambda self: self._positioned_placeholder(),
    }

    def validate_expression(self, expression: E, args: list[Any] | None = None) -> E:
        # SUM/AVG with BigQuery's bounds hold two arguments in one (`this` is a ContributionBounds).
        if isinstance(expression, (exp.Sum, exp.Avg)) and isinstance(expression.this, ContributionBounds):
            args = None
        return super().validate_expression(expression, args)

    def _positioned_placeholder(self) -> exp.Expr:
        node = self.expression(exp.Placeholder())
        node.meta["start"] = self._prev.start
        return node

    # The statement's hint slot holds our PrivacyOptions node, not an exp.Hint (sqlglot stores any node there).
    def _parse_hint(self) -> exp.Expr | None:  # type: ignore[override]
        if self._match_text_seq("WITH", "DIFFERENTIAL_PRIVACY"):
            if not self._match_text_seq("OPTIONS"):
                self.raise_error("Expected OPTIONS after WITH DIFFERENTIAL_PRIVACY")
            self._match_l_paren()
            options = self._parse_csv(self._parse_option)
            self._match_r_paren()
            return self.expression(PrivacyOptions(expressions=options))
        return super()._parse_hint()

    def _parse_option(self) -> exp.Expr | None:
        name = self._parse_id_var(any_token=True)
        if not self._match(TokenType.EQ):
            self.raise_error("Expected '=' in a privacy option (name = value)")
        return self.expression(exp.EQ(this=name, expression=self._parse_bitwise()))


def _contribution_bounds_sql(generator: DuckDBGenerator, expression: ContributionBounds) -> str:
    bounds = ", ".join(generator.sql(e) for e in expression.expressions)
    return f"{generator.sql(expression, 'this')}, {CONTRIBUTION_BOUNDS} => ({bounds})"


def _privacy_options_sql(generator: DuckDBGenerator, expression: PrivacyOptions) -> str:
    items = ", ".join(generator.sql(e) for e in expression.expressions)
    return f" WITH DIFFERENTIAL_PRIVACY OPTIONS ({items})"


def _within_group_sql(generator: DuckDBGenerator, expression: exp.WithinGroup) -> str:
    # Standard SQL, as the analyst wrote it (DuckDB's generator folds it into QUANTILE_DISC(x, p ORDER BY x)).
    inner = expression.this
    name = "PERCENTILE_DISC" if isinstance(inner, exp.PercentileDisc) else "PERCENTILE_CONT" if isinstance(inner, exp.PercentileCont) \
        else inner.sql_name() if isinstance(inner, exp.Func) else generator.sql(inner)
    args = generator.sql(inner, "this") if isinstance(inner, exp.Func) else ""
    return f"{name}({args}) WITHIN GROUP ({generator.sql(expression, 'expression').strip()})"


class DpsqlGenerator(DuckDBGenerator):
    """DuckDB's generator, printing the options clause back as written (EXPLAIN, messages)."""

    TRANSFORMS = {**DuckDBGenerator.TRANSFORMS, PrivacyOptions: _privacy_options_sql,
                  ContributionBounds: _contribution_bounds_sql, exp.WithinGroup: _within_group_sql}


class Dpsql(DuckDB):
    """The dialect dpsql parses analyst SQL with."""

    Parser = DpsqlParser
    Generator = DpsqlGenerator
