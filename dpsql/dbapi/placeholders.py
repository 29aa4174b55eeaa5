"""psycopg's placeholders (`%s`, `%(name)s`) as dpsql's qmark (`?`), before the statement is parsed.

dpsql's paramstyle is qmark, but analysts coming from psycopg type `%s` and `%(name)s`, and
pandas passes a dict as `params=` unchanged. Rewriting the placeholders (outside quotes and
comments) to `?` binds the same values in the same places: parameters are still bound as typed
literals by the parser, never spliced into the text. As in psycopg, `%%` is a literal `%` when
the statement takes pyformat parameters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from dpsql.errors import ParameterError

_PLACEHOLDER = re.compile(r"%\((?P<name>[^)]*)\)s|%s|%%")
_HINT = "write ? placeholders with a sequence of values, or psycopg's %s (a sequence) or %(name)s (a mapping)"


def _segments(sql: str) -> list[tuple[str, bool]]:
    """The text cut into (piece, is_code): quoted strings, quoted identifiers and comments are not code."""
    pieces: list[tuple[str, bool]] = []
    start = index = 0
    size = len(sql)
    while index < size:
        char = sql[index]
        end = -1
        if char in ("'", '"'):
            end = index + 1
            while end < size:
                if sql[end] == char:
                    if sql.startswith(char * 2, end):
                        end += 2
                        continue
                    break
                end += 1
            end = min(end + 1, size)
        elif sql.startswith("--", index):
            newline = sql.find("\n", index)
            end = size if newline < 0 else newline
        elif sql.startswith("/*", index):
            close = sql.find("*/", index + 2)
            end = size if close < 0 else close + 2
        if end < 0:
            index += 1
            continue
        if start < index:
            pieces.append((sql[start:index], True))
        pieces.append((sql[index:end], False))
        start = index = end
    if start < size:
        pieces.append((sql[start:], True))
    return pieces


def uses_pyformat(sql: str) -> bool:
    """Whether the statement holds `%s` or `%(name)s` outside quotes and comments."""
    return any(code and _PLACEHOLDER.search(text.replace("%%", "")) for text, code in _segments(sql))


def to_qmark(sql: str, parameters: Sequence[object] | Mapping[str, object] | None) -> tuple[str, Sequence[object] | None]:
    """`sql` with `%s` / `%(name)s` placeholders as `?` and the parameters in their order.

    A statement without pyformat placeholders, or without parameters (psycopg does not interpolate
    then either), comes back unchanged; a mapping is refused then (`?` placeholders are positional).

    Raises:
        ParameterError: a mapping without `%(name)s`, a name it lacks, or `%s` and `%(name)s` mixed (DP118).
    """
    if parameters is None or not uses_pyformat(sql):
        if isinstance(parameters, Mapping):
            raise ParameterError("dpsql takes ? placeholders with a sequence of values; a mapping needs %(name)s placeholders",
                                 code="DP118", hint=_HINT)
        return sql, parameters
    values: list[object] = []
    kinds: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        text = match.group(0)
        if text == "%%":
            return "%"
        if text == "%s":
            kinds.add("positional")
            values.append(None)  # filled below, in order
            return "?"
        kinds.add("named")
        name = match.group("name")
        if not isinstance(parameters, Mapping) or name not in parameters:
            raise ParameterError(f"the placeholder %({name})s has no value: pass a mapping with the key {name!r}",
                                 code="DP118", hint=_HINT)
        values.append(parameters[name])
        return "?"

    text = "".join(_PLACEHOLDER.sub(replace, piece) if code else piece for piece, code in _segments(sql))
    if kinds == {"positional", "named"}:
        raise ParameterError("%s and %(name)s placeholders cannot be mixed in one statement", code="DP118", hint=_HINT)
    if kinds == {"positional"}:
        if isinstance(parameters, Mapping):
            raise ParameterError("%s placeholders take a sequence of values", code="DP118", hint=_HINT)
        given = list(parameters)
        if len(given) != len(values):
            raise ParameterError(f"the statement has {len(values)} %s placeholder(s) but {len(given)} value(s) were given",
                                 code="DP118", hint=_HINT)
        values = given
    return text, values
