"""`dpsql [DATABASE] [--policy FILE] [--analyst NAME] [--ledger FILE|URL] [--engine duckdb|spark] [-c SQL]`.

Runs the statements (and backslash commands) of -c, or of stdin when it is not a terminal, and
prints each answer with its intervals and the remaining budget; exits 1 (a message, no
traceback) when a statement is refused or fails. On a terminal it starts the REPL (dpsql.repl).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TextIO

from dpsql import errors
from dpsql.dbapi.connection import Connection
from dpsql.demo.people import ensure_demo
from dpsql.repl.runner import run_script
from dpsql.repl.script import split_statements
from dpsql.session import DEMO_LEDGER, SessionOptions

__all__ = ["build_parser", "main", "split_statements"]


def _serve(argv: list[str]) -> int:
    from dpsql.server.cli_args import serve_main  # asyncio, the server: only for `dpsql serve`

    return serve_main(argv)


def _hash_password(argv: list[str]) -> int:
    from dpsql.server.cli_args import hash_password_main

    return hash_password_main(argv)


def _policy(argv: list[str]) -> int:
    from dpsql.policy_command import policy_main

    return policy_main(argv)


SUBCOMMANDS = {"serve": _serve, "hash-password": _hash_password, "policy": _policy}  # dispatched before the parser


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    parser = argparse.ArgumentParser(
        prog="dpsql", description="Differentially private SQL over a policy-checked database.",
        epilog="other commands: 'dpsql serve --policy FILE' (the PostgreSQL wire-protocol server), "
               "'dpsql hash-password' (a SCRAM verifier for [analysts.<name>]), 'dpsql policy init SOURCE' "
               "(a policy skeleton), 'dpsql policy check FILE' (validate a policy); each takes --help")
    parser.add_argument("database", nargs="?", help="DuckDB database file (omit with no --policy for the bundled demo)")
    parser.add_argument("--policy", help="policy TOML file")
    parser.add_argument("--analyst", help="analyst name (whose budget is charged)")
    parser.add_argument("--ledger", metavar="FILE|URL",
                        help="budget ledger: a SQLite file, a postgresql:// URL or :memory: (default: the policy's "
                             "[budget] ledger; for the demo, its ledger in the user cache directory; else in memory for this run)")
    parser.add_argument("-c", "--command", help="run these statements and exit")
    parser.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb",
                        help="engine that holds the data (spark: the policy names Parquet paths or Spark tables)")
    parser.add_argument("--spark-master", metavar="URL", help="Spark master for --engine spark (default local[2]; e.g. spark://host:7077)")
    parser.add_argument("--spark-remote", metavar="URL", help="Spark Connect server for --engine spark (e.g. sc://host:15002)")
    parser.add_argument("--confirm-share", type=float, default=0.25, metavar="SHARE",
                        help="at the prompt, ask before a query spending more than this share of the remaining epsilon")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `dpsql` console script."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:  # `dpsql serve ...`, `dpsql hash-password`
        return SUBCOMMANDS[argv[0]](argv[1:])
    args = build_parser().parse_args(argv)
    spark = {"master": args.spark_master, "remote": args.spark_remote, "progress": stage_progress(sys.stderr)} \
        if args.engine == "spark" else {}
    if args.engine != "spark" and (args.spark_master or args.spark_remote):
        print("ERROR: --spark-master and --spark-remote need --engine spark", file=sys.stderr)
        return 1
    try:
        options = SessionOptions(database=args.database, policy=args.policy, analyst=args.analyst, ledger=args.ledger,
                                 engine=args.engine, **spark)
        connection = Connection(options.open())
    except errors.Error as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    with connection:
        if args.policy is None and args.database is None and args.ledger is None:
            _note_spent_demo(connection)
        if args.command is not None:
            return _run_text(connection, args.command)
        if not sys.stdin.isatty():
            return _run_text(connection, sys.stdin.read())
        from dpsql.repl.prompt import run_repl  # prompt_toolkit and pygments: only for the interactive prompt

        return run_repl(connection.session, confirm_share=args.confirm_share)


def _note_spent_demo(connection: Connection) -> None:
    """The demo's budget survives runs (its ledger sits in the user cache): say how to start afresh
    once it is too low for a default query, instead of leaving the analyst at a DP200."""
    session = connection.session
    if session.remaining.epsilon >= session.default_query_budget.epsilon:
        return
    ledger = ensure_demo().parent / DEMO_LEDGER
    print(f"note: the demo's privacy budget is spent (its ledger: {ledger}); delete that file for a fresh "
          "demo budget, or run with --ledger :memory: for a throwaway one", file=sys.stderr)


def stage_progress(stream: TextIO) -> Callable[[str], None] | None:
    """Spark stage progress on one rewritten line of a terminal; nothing when not a terminal."""
    if not stream.isatty():
        return None

    def report(line: str) -> None:
        stream.write("\r" + line[:120] + "\x1b[K")  # an empty line clears it when the job ends
        stream.flush()

    return report


def _run_text(connection: Connection, text: str) -> int:
    return run_script(connection.session, text, sys.stdout, sys.stderr)
