"""Parse one statement of analyst SQL with the dpsql dialect and bind qmark parameters.

Parameters are bound to literals *before* analysis, since a parameter can change the plan.
Only one statement is accepted per call (DP101); EXPLAIN is recognised here because sqlglot
falls back to an opaque Command for it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dpsql.errors import ParameterError, Span, SqlSyntaxError, UnsupportedQueryError
from dpsql.frontend.clock import read_clock
from dpsql.frontend.privacy_dialect import Dpsql, PrivacyOptions
from dpsql.frontend.spans import at, keyword_span

StatementKind = Literal["select", "explain", "set", "other"]
_EXPLAIN = re.compile(r"^(?:\s|--[^\n]*|/\*.*?\*/)*EXPLAIN\b(?P<verbose>\s*\(\s*VERBOSE(?:\s+(?:TRUE|ON|1))?\s*\)|\s+VERBOSE\b)?",
                      re.IGNORECASE | re.DOTALL)  # comments may precede it; EXPLAIN (VERBOSE) adds the engine SQL


@dataclass(frozen=True, slots=True)
class ParsedStatement:
    """One parsed statement: what kind it is, its tree, and the text its spans point into."""

    kind: StatementKind
    tree: exp.Expr
    sql: str
    verbose: bool = False  # EXPLAIN (VERBOSE) / EXPLAIN VERBOSE: the plan with the engine SQL
    clock: dt.datetime | None = None  # the instant (UTC) its now()/current_date were read at; None: no clock


def parse_statement(sql: str, parameters: Sequence[object] | None = None, clock: dt.datetime | None = None) -> ParsedStatement:
    """Parse `sql` (one statement), bind its `?` parameters and read its clocks (now(),
    current_date, ...) once, as literals of the instant `clock` (default: the wall clock in UTC;
    frontend/clock.py)."""
    text = sql
    kind: StatementKind = "select"
    match = _EXPLAIN.match(sql)
    verbose = bool(match and match.group("verbose"))
    if match:
        # Blank the keyword rather than cutting it, so spans still point into the user's text.
        text = re.sub(r"[^\n]", " ", sql[: match.end()]) + sql[match.end() :]  # keep newlines: line numbers
        kind = "explain"
    trees = _parse_all(text, sql)
    if len(trees) != 1:
        span = at(sql, 0, len(sql)) if not trees else _second_statement_span(sql)
        raise UnsupportedQueryError(
            "exactly one statement is accepted per execute()" if trees else "the statement is empty",
            code="DP101",
            span=span,
            sql=sql,
            hint="send the statements one at a time",
        )
    tree = normalise_spellings(bind_parameters(trees[0], parameters, sql))
    check_numbers(tree, sql)
    if kind != "explain":
        kind = "select" if isinstance(tree, exp.Query) else "set" if isinstance(tree, exp.Set) else "other"
    read_at = None
    if kind in ("select", "explain"):  # before the analysis: the instant is part of the plan and its identity
        tree, read_at = read_clock(tree, clock)
    return ParsedStatement(kind=kind, tree=tree, sql=sql, verbose=verbose, clock=read_at)


# Other dialects' names of aggregates dpsql has (SQL Server / Power BI, Excel-style): the same
# computation under another name, rewritten to the sqlglot node dpsql binds.
SPELLINGS: dict[str, type[exp.Func]] = {"count_big": exp.Count, "var": exp.Variance, "varp": exp.VariancePop,
                                        "stdev": exp.Stddev, "stdevp": exp.StddevPop}


def normalise_spellings(tree: exp.Expr) -> exp.Expr:
    """COUNT_BIG(x) as COUNT(x), VAR/STDEV/VARP/STDEVP as VAR_SAMP/STDDEV_SAMP/VAR_POP/STDDEV_POP."""
    def visit(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Anonymous) and len(node.expressions) == 1:
            cls = SPELLINGS.get(str(node.this).lower())
            if cls is not None:
                return cls(this=node.expressions[0])
        return node

    if next(tree.find_all(exp.Anonymous), None) is None:
        return tree  # the common case: no copy
    return tree.transform(visit)


# A number's decimal exponent: DOUBLE reaches 10^308 (and 10^-324); beyond +-1,000 a literal is
# out of every engine's range, and reading it exactly (as bounds and domains do, with Fraction)
# would expand the exponent into that many digits: `1e99999999` took minutes of analysis.
MAX_EXPONENT = 1000
_EXPONENT = re.compile(r"[eE]([+-]?)(\d+)$")


def check_numbers(tree: exp.Expr, sql: str) -> None:
    """DP100 for a number literal whose exponent is beyond +-MAX_EXPONENT (before any analysis).
    Privacy options and SET values are read as text and refused by their own rule (DP120)."""
    for node in tree.find_all(exp.Literal):
        if node.is_string:
            continue
        match = _EXPONENT.search(str(node.this))
        if match is None or node.find_ancestor(exp.Set, PrivacyOptions) is not None:
            continue
        if len(match.group(2)) > 4 or int(match.group(2)) > MAX_EXPONENT:
            where = sql.find(str(node.this))
            raise SqlSyntaxError(f"the number {str(node.this)[:24]} is out of range (its exponent is beyond "
                                 f"+-{MAX_EXPONENT:,})", code="DP100",
                                 span=at(sql, where, where + len(str(node.this))) if where >= 0 else None, sql=sql,
                                 hint="write a number an engine can hold (DOUBLE reaches about 1.8e308)")


def parse_tree(sql: str) -> exp.Expr | None:
    """The tree of a one-statement SQL text without binding parameters; None if it does not parse."""
    try:
        trees = _parse_all(sql, sql)
    except SqlSyntaxError:
        return None
    return trees[0] if len(trees) == 1 else None


def _parse_all(text: str, original: str) -> list[exp.Expr]:
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # sqlglot warns when it falls back to Command; we refuse those anyway
    try:
        # A comment after the last ';' comes back as a Semicolon node: it is not a statement.
        return [t for t in sqlglot.parse(text, read=Dpsql) if t is not None and not isinstance(t, exp.Semicolon)]
    except ParseError as err:
        info = err.errors[0] if err.errors else {}
        line, col = int(info.get("line") or 1), int(info.get("col") or 1)
        start = _offset(original, line, col)
        raise SqlSyntaxError(
            f"syntax error: {info.get('description') or 'the SQL does not parse'}",
            code="DP100",
            span=at(original, max(0, start - 1), start),
            sql=original,
            hint="check the SQL near the caret",
        ) from None
    except TokenError as err:
        raise SqlSyntaxError(f"syntax error: {err}", code="DP100", sql=original) from None
    finally:
        logger.setLevel(level)


def _offset(sql: str, line: int, col: int) -> int:
    lines = sql.split("\n")
    return sum(len(x) + 1 for x in lines[: line - 1]) + col


def _second_statement_span(sql: str) -> Span | None:
    index = sql.find(";")
    return at(sql, index, index + 1) if index >= 0 else keyword_span(sql, "SELECT")


def bind_parameters(tree: exp.Expr, parameters: Sequence[object] | None, sql: str) -> exp.Expr:
    """Replace each `?` placeholder, in order, by a literal of the matching parameter.

    Numbered placeholders (`$1`, `$2`, ..., PostgreSQL's style, sent by pgwire clients) take
    parameters[n - 1]; one statement uses one style.
    """
    # qmarks bind in text order: the parser records each one's offset (tree order differs).
    found = list(tree.find_all(exp.Placeholder))  # one walk for both styles
    placeholders = sorted((p for p in found if not p.this), key=lambda p: p.meta.get("start", 0))
    named = [p for p in found if p.this]
    params = list(parameters or [])
    if named:
        if placeholders or not all(str(p.this).isdigit() and int(str(p.this)) >= 1 for p in named):
            raise ParameterError("only qmark (?) or numbered ($1) parameters are accepted", code="DP118", sql=sql)
        count = max(int(str(p.this)) for p in named)
        if count != len(params):
            raise ParameterError(
                f"the statement has {count} parameter(s) but {len(params)} were given", code="DP118", sql=sql
            )
        for placeholder in named:
            placeholder.replace(literal(params[int(str(placeholder.this)) - 1]))
        return tree
    if len(params) != len(placeholders):
        raise ParameterError(
            f"the statement has {len(placeholders)} parameter(s) but {len(params)} were given",
            code="DP118",
            sql=sql,
        )
    if not placeholders:
        return tree
    for placeholder, value in zip(placeholders, params, strict=True):
        placeholder.replace(literal(value))
    return tree


def literal(value: object) -> exp.Expr:
    """A sqlglot literal for a Python parameter value."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int) and value.bit_length() > 127:
        # Wider than any engine integer (HUGEINT); also keeps clear of Python's int-to-str limit.
        raise ParameterError("an integer parameter is out of range (at most 38 digits)", code="DP118")
    if isinstance(value, (int, decimal.Decimal)):
        return exp.Literal.number(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return exp.cast(exp.Literal.string(repr(value)), "DOUBLE")
        return exp.Literal.number(repr(value))
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, dt.datetime):
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), "TIMESTAMP")
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    raise ParameterError(f"a parameter of type {type(value).__name__} cannot be bound", code="DP118")
