"""Where a sqlglot node sits in the SQL text, for carets under errors.

sqlglot 30 keeps positions on Identifier leaves (meta line/col/start/end, end inclusive), not on
Column or function nodes; a node's span is the hull of its leaves, widened to a function's name
and closing parenthesis by scanning the text.
"""

from __future__ import annotations

import re

from sqlglot import exp

from dpsql.errors import Span


def span_of(node: exp.Expr, sql: str, name: str | None = None) -> Span | None:
    """The span of `node` in `sql`, or None when it cannot be located. `name`: the function's
    name as the analyst spells it, where sqlglot's differs (regexp_matches is REGEXP_LIKE)."""
    starts, ends = [], []
    for leaf in node.find_all(exp.Identifier):
        meta = leaf.meta
        if "start" in meta and "end" in meta:
            starts.append(meta["start"])
            ends.append(meta["end"] + 1)
    name = name or _function_name(node)
    if name:
        before = min(starts) if starts else len(sql)
        found = _last_match(rf"\b{re.escape(name)}\s*\(", sql, before)
        if found is not None:
            starts.append(found)
            close = _matching_paren(sql, sql.index("(", found))
            ends.append(close + 1 if close is not None else found + len(name))
    elif isinstance(node, exp.Star) and not starts:
        index = sql.find("*")
        if index >= 0:
            starts.append(index)
            ends.append(index + 1)
    if not starts:  # a literal alone (an option's value: mode_blocks = 0) is located by its token
        for literal in node.find_all(exp.Literal):
            if "start" in literal.meta and "end" in literal.meta:
                starts.append(literal.meta["start"])
                ends.append(literal.meta["end"] + 1)
    if not starts:
        return None
    return at(sql, min(starts), max(ends))


def at(sql: str, start: int, end: int) -> Span:
    """A Span from absolute offsets, with the 1-based line and column of `start`."""
    line = sql.count("\n", 0, start) + 1
    col = start - (sql.rfind("\n", 0, start) + 1) + 1
    return Span(start=start, end=max(end, start + 1), line=line, col=col)


def keyword_span(sql: str, word: str) -> Span | None:
    """The span of the first occurrence of a keyword (case-insensitive), or None."""
    found = re.search(rf"\b{re.escape(word)}\b", sql, re.IGNORECASE)
    return at(sql, found.start(), found.end()) if found else None


def _function_name(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Anonymous):
        return str(node.this)
    if isinstance(node, exp.Func):
        return node.sql_name()
    return None


def _last_match(pattern: str, sql: str, before: int) -> int | None:
    best = None
    for match in re.finditer(pattern, sql, re.IGNORECASE):
        if match.start() > before:
            break
        best = match.start()
    if best is None:
        first = re.search(pattern, sql, re.IGNORECASE)
        best = first.start() if first else None
    return best


def _matching_paren(sql: str, open_index: int) -> int | None:
    depth = 0
    for index in range(open_index, len(sql)):
        if sql[index] == "(":
            depth += 1
        elif sql[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return None
