"""Context-aware completion from the policy: only tables, columns and functions the analyst may use.

`suggest` is pure (text in, suggestions out) and knows just enough SQL to pick the right kind of
word: tables after FROM/JOIN, the FROM table's columns and the allowed functions after SELECT,
WHERE, GROUP BY, ORDER BY and HAVING, keywords everywhere a clause may start. `PolicyCompleter`
adapts it to prompt_toolkit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from dpsql.catalog.policy import Policy, Table

BACKSLASH_COMMANDS: tuple[str, ...] = ("\\d", "\\dt", "\\budget", "\\history", "\\explain", "\\timing", "\\help", "\\q")
STATEMENT_STARTS: tuple[str, ...] = ("SELECT", "EXPLAIN", "SET")
EXPRESSION_KEYWORDS: tuple[str, ...] = (
    "AND", "OR", "NOT", "IN", "BETWEEN", "LIKE", "ILIKE", "IS", "NULL", "TRUE", "FALSE", "CASE", "WHEN",
    "THEN", "ELSE", "END", "DISTINCT", "AS", "ASC", "DESC",
)  # fmt: skip
CLAUSE_KEYWORDS: tuple[str, ...] = ("FROM", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "OFFSET")
DP_OPTIONS = "WITH DIFFERENTIAL_PRIVACY OPTIONS"
SETTINGS: tuple[str, ...] = ("epsilon", "delta")

_TOKEN = re.compile(
    r"""(?P<comment>--[^\n]*)|(?P<string>'(?:[^']|'')*'?)|(?P<quoted>"(?:[^"]|"")*"?)
      |(?P<word>[A-Za-z_][A-Za-z0-9_$]*)|(?P<number>\d+(?:\.\d*)?)|(?P<space>\s+)|(?P<punct>.)""",
    re.VERBOSE,
)
_PARTIAL = re.compile(r"(?:([A-Za-z_][A-Za-z0-9_]*)\.)?([A-Za-z_][A-Za-z0-9_]*)?$")
_CLAUSES = {"SELECT", "FROM", "JOIN", "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "OFFSET", "ON", "SET", "EXPLAIN", "OPTIONS"}
_EXPRESSION_CLAUSES = {"SELECT", "WHERE", "GROUP", "ORDER", "HAVING", "ON"}
_AFTER_TABLE = ("AS", "WHERE", "GROUP BY", "ORDER BY", "LIMIT")
_NOT_ALIASES = _CLAUSES | {"GROUP", "ORDER", "AS", "LEFT", "RIGHT", "INNER", "OUTER", "FULL", "CROSS", "NATURAL", "USING"}


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One completion: the text to insert, where it starts (<= 0, from the cursor) and its kind."""

    text: str
    start: int
    meta: str


def suggest(
    text_before_cursor: str, policy: Policy, functions: Mapping[str, str] | None = None, text_after_cursor: str = ""
) -> list[Suggestion]:
    """Words that fit at the cursor, filtered by the partial word typed.

    `functions` maps allowed function names to "aggregate" or "scalar" (`Session.sql_functions()`).
    Columns come from the policy only, so a column that is not declared is never suggested.

    """
    stripped = text_before_cursor.lstrip()
    if stripped.startswith("\\explain "):
        return suggest(stripped[len("\\explain ") :], policy, functions, text_after_cursor)
    if stripped.startswith("\\"):
        return _command_suggestions(stripped, policy)
    tokens = _tokens(text_before_cursor)
    if tokens and tokens[-1][0] in ("comment", "string", "quoted") and not _closed(tokens[-1]):
        return []
    partial = _PARTIAL.search(text_before_cursor)
    assert partial is not None  # the pattern matches the empty string
    qualifier, word = partial.group(1), partial.group(2) or ""
    before = _statement_tokens(tokens, len(word) + (len(qualifier) + 1 if qualifier else 0))
    after = _statement_tokens(_tokens(text_after_cursor), 0, first=True)
    tables = _tables(before + after, policy)
    candidates = list(_candidates(before, qualifier, tables, policy, functions or {}))
    return _filter(candidates, word)


def _tokens(text: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "punct", m.group()) for m in _TOKEN.finditer(text) if m.lastgroup != "space"]


def _closed(token: tuple[str, str]) -> bool:
    kind, text = token
    if kind == "comment":
        return False
    return len(text) >= 2 and text[-1] == text[0]


def _statement_tokens(tokens: list[tuple[str, str]], strip_chars: int, *, first: bool = False) -> list[tuple[str, str]]:
    """The tokens of the statement at the cursor: after the last `;` before it, or up to the first after it."""
    if strip_chars:
        # Drop the partial word (and its qualifier) being typed.
        consumed = 0
        while tokens and consumed < strip_chars:
            consumed += len(tokens[-1][1])
            tokens = tokens[:-1]
    tokens = [t for t in tokens if t[0] != "comment"]
    ends = [i for i, t in enumerate(tokens) if t == ("punct", ";")]
    if first:
        return tokens[: ends[0]] if ends else tokens
    return tokens[ends[-1] + 1 :] if ends else tokens


def _tables(tokens: list[tuple[str, str]], policy: Policy) -> dict[str, Table]:
    """Tables named after FROM/JOIN in the statement, by name and by alias."""
    found: dict[str, Table] = {}
    for i, (kind, text) in enumerate(tokens):
        if kind != "word" or text.upper() not in ("FROM", "JOIN") or i + 1 >= len(tokens):
            continue
        table = policy.table(tokens[i + 1][1].strip('"'))
        if table is None:
            continue
        found[table.name] = table
        rest = tokens[i + 2 : i + 4]
        if rest and rest[0][1].upper() == "AS":
            rest = rest[1:]
        if rest and rest[0][0] == "word" and rest[0][1].upper() not in _NOT_ALIASES:
            found[rest[0][1].lower()] = table
    return found


def _clause(tokens: list[tuple[str, str]]) -> str | None:
    """The clause the cursor is in: the last clause keyword (OPTIONS until its parenthesis closes)."""
    for i in range(len(tokens) - 1, -1, -1):
        kind, text = tokens[i]
        if kind == "word" and text.upper() in _CLAUSES:
            if text.upper() == "OPTIONS" and ("punct", ")") in tokens[i:]:
                return "SELECT"
            return text.upper()
    return None


def _candidates(
    before: list[tuple[str, str]], qualifier: str | None, tables: dict[str, Table], policy: Policy,
    functions: Mapping[str, str],
) -> Iterator[Suggestion]:
    clause = _clause(before)
    previous = before[-1][1].upper() if before else None
    if qualifier is not None:
        if clause == "SET" and qualifier.lower() == "dpsql":
            yield from (Suggestion(s, 0, "setting") for s in SETTINGS)
        table = tables.get(qualifier.lower()) or policy.table(qualifier)
        if table is not None and clause != "FROM":
            yield from _columns([table])
        return
    if not before or previous == "EXPLAIN":
        yield from (Suggestion(k, 0, "keyword") for k in STATEMENT_STARTS[: 1 if previous else None])
    elif clause == "SET":
        yield from (Suggestion(f"dpsql.{s}", 0, "setting") for s in SETTINGS) if previous == "SET" else ()
    elif clause == "OPTIONS":
        yield from (Suggestion(s, 0, "option") for s in SETTINGS)
    elif clause in ("FROM", "JOIN") and previous in ("FROM", "JOIN", ","):
        yield from (Suggestion(t.name, 0, "public table" if t.public else "table") for t in policy.tables.values())
        yield from (Suggestion(name, 0, "view") for name in policy.views)
    elif clause in ("FROM", "JOIN"):
        yield from (Suggestion(k, 0, "keyword") for k in _AFTER_TABLE)
    elif clause in _EXPRESSION_CLAUSES:
        named = list({t.name: t for t in tables.values()}.values())
        yield from _columns(named or list(policy.tables.values()))
        yield from (Suggestion(n, 0, f"{kind} function") for n, kind in sorted(functions.items(), key=_function_order))
        if previous == "SELECT":
            yield Suggestion(DP_OPTIONS, 0, "keyword")
        yield from (Suggestion(k, 0, "keyword") for k in (*EXPRESSION_KEYWORDS, *CLAUSE_KEYWORDS))


def _function_order(item: tuple[str, str]) -> tuple[bool, str]:
    return item[1] != "aggregate", item[0]


def _columns(tables: Iterable[Table]) -> Iterator[Suggestion]:
    for table in tables:
        for column in table.columns.values():
            note = "privacy unit" if column.name == table.privacy_unit else column.type
            yield Suggestion(column.name, 0, f"{table.name}: {note}")


def _command_suggestions(text: str, policy: Policy) -> list[Suggestion]:
    parts = text.split()
    if len(parts) == 1 and not text.endswith(" "):
        return [Suggestion(c, -len(parts[0]), "command") for c in BACKSLASH_COMMANDS if c.startswith(parts[0])]
    if parts[0] in ("\\d", "\\dt") and len(parts) <= 2:
        word = parts[1] if len(parts) == 2 and not text.endswith(" ") else ""
        return _filter([Suggestion(t.name, 0, "table") for t in policy.tables.values()], word)
    return []


def _filter(candidates: list[Suggestion], word: str) -> list[Suggestion]:
    """Candidates starting with `word` (case-insensitive); keywords and functions follow the word's case."""
    lowered = word.lower()
    lower_case = word[:1].islower()
    seen: set[str] = set()
    out = []
    for candidate in candidates:
        key = candidate.text.lower()
        if not key.startswith(lowered) or key in seen:
            continue
        seen.add(key)
        styled = candidate.meta == "keyword" or candidate.meta.endswith("function")
        out.append(Suggestion(key if styled and lower_case else candidate.text, -len(word), candidate.meta))
    return out


class PolicyCompleter(Completer):
    """prompt_toolkit adapter over `suggest`; quiet until a word is started or Tab is pressed."""

    def __init__(self, policy: Policy, functions: Mapping[str, str]) -> None:
        self.policy = policy
        self.functions = dict(functions)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        """Completions at the cursor."""
        before = document.text_before_cursor
        if not complete_event.completion_requested and not re.search(r"[A-Za-z_\\.]$", before):
            return
        for s in suggest(before, self.policy, self.functions, document.text_after_cursor):
            yield Completion(s.text, start_position=s.start, display_meta=s.meta)
