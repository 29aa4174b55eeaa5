"""Split a simple-query string into statements and recognise the utility statements clients send.

Transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, ...) is a no-op: dpsql never writes.
SET/SHOW/RESET act on the connection's emulated settings; `SET dpsql.<name>` is the session's.
Recognised by their leading keywords, so no SQL parser is needed here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

UtilityKind = Literal["begin", "commit", "rollback", "savepoint", "noop", "set", "show", "reset", "deallocate", "declare",
                      "fetch", "move", "close"]

_COMMENT = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
_SET = re.compile(r"^SET\s+(?:SESSION\s+|LOCAL\s+)?(?P<name>[A-Za-z_][\w.]*|\"[^\"]+\")\s*(?:=|\s+TO\s+)\s*(?P<value>.*?)\s*;?\s*$",
                  re.IGNORECASE | re.DOTALL)  # fmt: skip
_SET_TIME_ZONE = re.compile(r"^SET\s+(?:SESSION\s+|LOCAL\s+)?TIME\s+ZONE\s+(?P<value>.*?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_SHOW = re.compile(r"^SHOW\s+(?P<name>.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_RESET = re.compile(r"^RESET\s+(?P<name>.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_NAME = r'(?P<name>"(?:[^"]|"")+"|[A-Za-z_][\w$]*)'
_DECLARE = re.compile(r"^DECLARE\s+" + _NAME + r"\s+(?:(?:BINARY|ASENSITIVE|INSENSITIVE|NO\s+SCROLL|SCROLL)\s+)*CURSOR\s+"
                      r"(?:(?:WITH|WITHOUT)\s+HOLD\s+)?FOR\s+(?P<query>.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)  # fmt: skip
_FETCH = re.compile(r"^(?:FETCH|MOVE)\s+(?:(?P<direction>NEXT|FORWARD|ALL|FIRST|PRIOR|LAST|ABSOLUTE|RELATIVE|BACKWARD)\s+)?"
                    r"(?P<count>ALL|\d+)?\s*(?:(?:FROM|IN)\s+)?" + _NAME + r"\s*;?\s*$", re.IGNORECASE | re.DOTALL)  # fmt: skip
_CLOSE = re.compile(r"^CLOSE\s+(?:ALL|" + _NAME + r")\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_DEALLOCATE = re.compile(r"^DEALLOCATE\s+(?:PREPARE\s+)?(?P<name>.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class Utility:
    """A recognised utility statement: its kind, the command tag to answer, and its operands."""

    kind: UtilityKind
    tag: str
    name: str | None = None
    value: str | None = None


def strip_leading_comments(sql: str) -> str:
    """The statement text after leading whitespace and comments."""
    return sql[_COMMENT.match(sql).end() :]  # type: ignore[union-attr]


def is_empty(sql: str) -> bool:
    """Whether the text holds no statement (only whitespace, comments and semicolons)."""
    text = strip_leading_comments(sql)
    while text.startswith(";"):
        text = strip_leading_comments(text[1:])
    return not text


def _words(text: str, count: int) -> list[str]:
    return [w.upper() for w in re.findall(r"[A-Za-z_]+", text)[:count]]


def _setting_value(raw: str) -> str:
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def utility(sql: str) -> Utility | None:
    """The utility statement `sql` is, or None for anything else (queries, EXPLAIN, DDL...)."""
    text = strip_leading_comments(sql).strip()
    words = _words(text, 3)
    if not words:
        return None
    head = words[0]
    if head in ("BEGIN", "START"):
        return Utility("begin", "BEGIN") if head == "BEGIN" or words[1:2] == ["TRANSACTION"] else None
    if head in ("COMMIT", "END"):
        return Utility("commit", "COMMIT")
    if head in ("ROLLBACK", "ABORT"):
        savepoint = words[1:2] == ["TO"] or words[1:3] == ["WORK", "TO"] or words[1:3] == ["TRANSACTION", "TO"]
        return Utility("savepoint" if savepoint else "rollback", "ROLLBACK")
    if head in ("SAVEPOINT", "RELEASE"):
        return Utility("savepoint", head)
    if head in ("DISCARD", "LISTEN", "UNLISTEN", "CHECKPOINT"):
        return Utility("noop", "DISCARD ALL" if head == "DISCARD" else head)
    if head in ("DECLARE", "FETCH", "MOVE", "CLOSE"):
        return _cursor(text, head)
    if head == "DEALLOCATE":
        match = _DEALLOCATE.match(text)
        name = match.group("name").strip('"') if match else None
        return Utility("deallocate", "DEALLOCATE ALL" if name and name.upper() == "ALL" else "DEALLOCATE", name)
    if head == "SET":
        return _set(text, words)
    if head == "SHOW":
        match = _SHOW.match(text)
        return Utility("show", "SHOW", match.group("name").strip().strip('"')) if match else None
    if head == "RESET":
        match = _RESET.match(text)
        return Utility("reset", "RESET", match.group("name").strip().strip('"')) if match else None
    return None


def _cursor_name(raw: str | None) -> str | None:
    if raw is None:
        return None
    return raw[1:-1].replace('""', '"') if raw.startswith('"') else raw.lower()


def _cursor(text: str, head: str) -> Utility:
    """DECLARE name CURSOR FOR query (value: the query), FETCH/MOVE [FORWARD] [n|ALL] [FROM] name
    (value: the count, "ALL", or "BACKWARD" for any other direction), CLOSE name|ALL (name None: all)."""
    if head == "DECLARE":
        match = _DECLARE.match(text)
        if match is None:
            return Utility("declare", "DECLARE CURSOR")  # no name: refused by the caller
        return Utility("declare", "DECLARE CURSOR", _cursor_name(match.group("name")), match.group("query"))
    if head == "CLOSE":
        match = _CLOSE.match(text)
        return Utility("close", "CLOSE CURSOR", _cursor_name(match.group("name")) if match else None, "ALL" if match else None)
    match = _FETCH.match(text)
    kind: UtilityKind = "fetch" if head == "FETCH" else "move"
    if match is None:
        return Utility(kind, head)
    direction = (match.group("direction") or "").upper()
    count = (match.group("count") or "").upper()
    if direction in ("FIRST", "PRIOR", "LAST", "ABSOLUTE", "RELATIVE", "BACKWARD"):
        value = "BACKWARD"
    elif direction == "ALL" or count == "ALL":
        value = "ALL"
    else:
        value = count or "1"
    return Utility(kind, head, _cursor_name(match.group("name")), value)


def _set(text: str, words: list[str]) -> Utility | None:
    if words[1:2] in (["TRANSACTION"], ["CONSTRAINTS"]) or words[1:3] == ["SESSION", "CHARACTERISTICS"]:
        return Utility("noop", "SET")
    zone = _SET_TIME_ZONE.match(text)
    if zone:
        return Utility("set", "SET", "TimeZone", _setting_value(zone.group("value")))
    match = _SET.match(text)
    if match is None:
        return None
    return Utility("set", "SET", match.group("name").strip('"'), _setting_value(match.group("value")))


def split_statements(text: str) -> Iterator[tuple[int, str]]:
    """Split a simple-query string on semicolons outside quotes, dollar quotes and comments.

    Yields (offset of the statement in `text`, statement text).
    """
    start, index, size = 0, 0, len(text)
    while index < size:
        char = text[index]
        if text.startswith("--", index):
            end = text.find("\n", index)
            index = size if end < 0 else end + 1
            continue
        if text.startswith("/*", index):
            end = text.find("*/", index + 2)
            index = size if end < 0 else end + 2
            continue
        if char in ("'", '"'):
            index = _skip_quoted(text, index, char)
            continue
        dollar = re.match(r"\$(?:[A-Za-z_]\w*)?\$", text[index:])
        if dollar:
            end = text.find(dollar.group(0), index + len(dollar.group(0)))
            index = size if end < 0 else end + len(dollar.group(0))
            continue
        if char == ";":
            if not is_empty(text[start:index]):
                yield start, text[start:index]
            start = index + 1
        index += 1
    if not is_empty(text[start:]):
        yield start, text[start:]


def _skip_quoted(text: str, index: int, quote: str) -> int:
    index += 1
    while index < len(text):
        if text[index] == quote:
            if text.startswith(quote * 2, index):
                index += 2
                continue
            return index + 1
        index += 1
    return index
