"""`dpsql [DATABASE] [--policy FILE] [--analyst NAME] [--ledger FILE] [-c SQL]`.

Runs the statements of -c, or of stdin when it is not a terminal, or a plain prompt loop, and
prints each answer with its intervals and the remaining budget. Exits 1 (a message, no
traceback) when a statement is refused or fails.
"""

from __future__ import annotations

import argparse
import sys
from typing import Iterator, TextIO

from dpsql import errors
from dpsql.dbapi.connection import Connection, connect
from dpsql.render import render_table


def split_statements(text: str) -> Iterator[str]:
    """Split SQL text on semicolons outside quotes and comments."""
    buffer: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(text):
        char = text[index]
        if quote is None and text.startswith("--", index):
            end = text.find("\n", index)
            end = len(text) if end < 0 else end
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
        index += 1
    statement = "".join(buffer).strip()
    if _has_sql(statement):
        yield statement


def _has_sql(statement: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in statement.splitlines())


def run_statement(connection: Connection, sql: str, out: TextIO, err: TextIO) -> bool:
    """Run one statement and print its answer; False (after a message) when it fails."""
    try:
        cursor = connection.cursor().execute(sql)
    except errors.Error as error:
        print(f"ERROR: {error}", file=err)
        return False
    result = cursor.result
    assert result is not None
    print(render_table(result), file=out)
    if result.kind == "query":
        eps, delta = connection.budget
        print(f"budget remaining: epsilon {eps:.4g}, delta {delta:.3g}", file=out)
    return True


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    parser = argparse.ArgumentParser(prog="dpsql", description="Differentially private SQL over a policy-checked database.")
    parser.add_argument("database", nargs="?", help="DuckDB database file (omit with no --policy for the bundled demo)")
    parser.add_argument("--policy", help="policy TOML file")
    parser.add_argument("--analyst", help="analyst name (whose budget is charged)")
    parser.add_argument("--ledger", help="budget ledger SQLite file (default: in-memory for this run)")
    parser.add_argument("-c", "--command", help="run these statements and exit")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `dpsql` console script."""
    args = build_parser().parse_args(argv)
    try:
        connection = connect(database=args.database, policy=args.policy, analyst=args.analyst, ledger=args.ledger)
    except errors.Error as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    with connection:
        if args.command is not None:
            return _run_text(connection, args.command)
        if not sys.stdin.isatty():
            return _run_text(connection, sys.stdin.read())
        return _prompt_loop(connection)


def _run_text(connection: Connection, text: str) -> int:
    ok = True
    for statement in split_statements(text):
        ok = run_statement(connection, statement, sys.stdout, sys.stderr) and ok
    return 0 if ok else 1


def _prompt_loop(connection: Connection) -> int:
    eps, delta = connection.budget
    print(f"dpsql: differentially private SQL. Budget: epsilon {eps:.4g}, delta {delta:.3g}. End statements with ';', \\q quits.")
    buffer = ""
    while True:
        try:
            line = input("dpsql> " if not buffer else "   ..> ")
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if not buffer and line.strip() in ("\\q", "quit", "exit"):
            return 0
        buffer += line + "\n"
        if buffer.rstrip().endswith(";"):
            for statement in split_statements(buffer):
                run_statement(connection, statement, sys.stdout, sys.stderr)
            buffer = ""
