"""Splitting input into SQL statements and backslash commands (pure, no IO).

A backslash command (`\\d people`) runs to the end of its line and is recognised only where a
statement could start; SQL statements end at a `;` outside quotes and `--` comments.
"""

from __future__ import annotations

from collections.abc import Iterator


def is_command(item: str) -> bool:
    """Whether a split item is a backslash command rather than SQL."""
    return item.startswith("\\")


def split_statements(text: str) -> Iterator[str]:
    """Split SQL text on semicolons outside quotes and comments (backslashes are SQL text here)."""
    return _split(text, commands=False)


def split_script(text: str) -> Iterator[str]:
    r"""Statements and backslash commands, in order (what `dpsql < file.sql` runs).

    Example:
        >>> list(split_script("\\d people\nSELECT 1; \\budget\n"))
        ['\\d people', 'SELECT 1', '\\budget']
    """
    return _split(text, commands=True)


def _split(text: str, *, commands: bool) -> Iterator[str]:
    buffer: list[str] = []
    quote: str | None = None
    index = 0
    line_start = True
    while index < len(text):
        if commands and quote is None and line_start and not _has_sql("".join(buffer)):
            start = index
            while start < len(text) and text[start] in " \t":
                start += 1
            if text.startswith("\\", start):
                end = _line_end(text, start)
                buffer = []  # only blanks and comments were pending
                yield text[start:end].strip()
                index = end
                continue
        char = text[index]
        line_start = False
        if quote is None and text.startswith("--", index):
            end = _line_end(text, index)
            buffer.append(text[index:end])
            index = end
            continue
        if quote is None and char in ("'", '"'):
            quote = char
        elif quote == char:
            quote = None
        if char == ";" and quote is None:
            statement = "".join(buffer).strip()
            if _has_sql(statement):
                yield statement
            buffer = []
        else:
            buffer.append(char)
        line_start = char == "\n" or (char == ";" and quote is None)
        index += 1
    statement = "".join(buffer).strip()
    if _has_sql(statement):
        yield statement


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end


def _has_sql(statement: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in statement.splitlines())


def is_complete(text: str) -> bool:
    """Whether Enter should submit the input: it ends with `;`, is a backslash command, or is empty.

    Example:
        >>> is_complete("SELECT 1"), is_complete("SELECT ';"), is_complete("SELECT 1;"), is_complete("\\q")
        (False, False, True, True)
    """
    stripped = text.strip()
    if not stripped or stripped.lower() in ("quit", "exit"):
        return True
    if stripped.startswith("\\") and "\n" not in stripped:
        return True
    quote: str | None = None
    last = ""
    index = 0
    while index < len(text):
        char = text[index]
        if quote is None and text.startswith("--", index):
            index = _line_end(text, index)
            continue
        if quote is None and char in ("'", '"'):
            quote = char
        elif quote == char:
            quote = None
        if not char.isspace():
            last = char
        index += 1
    return quote is None and last == ";"
