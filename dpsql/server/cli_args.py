"""`dpsql serve ...` and `dpsql hash-password`: argument parsing for the server's subcommands."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import logging
import sys
from pathlib import Path

from dpsql import errors
from dpsql.catalog.loader import load_policy
from dpsql.server.scram import DEFAULT_ITERATIONS, make_verifier
from dpsql.server.transport import DEFAULT_HOST, DEFAULT_PORT, ServerConfig, run


def serve_parser() -> argparse.ArgumentParser:
    """Options of `dpsql serve`."""
    parser = argparse.ArgumentParser(prog="dpsql serve", description="PostgreSQL wire-protocol server over a dpsql policy.")
    parser.add_argument("--policy", required=True, type=Path, help="policy TOML file (declares [analysts.<name>])")
    parser.add_argument("--database", type=Path, help="DuckDB database file with the policy's tables")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--ledger", metavar="FILE|URL",  # a str: Path() would turn postgresql:// into postgresql:/
                        help="budget ledger: a SQLite file, or a postgresql:// URL that several servers share "
                             "(default: <policy>.ledger.sqlite beside the policy)")
    parser.add_argument("--tls-cert", type=Path, help="PEM certificate: enables TLS (SSLRequest answered 'S')")
    parser.add_argument("--tls-key", type=Path, help="PEM private key of --tls-cert")
    parser.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb", help="engine that holds the data")
    parser.add_argument("--spark-master", metavar="URL", help="Spark master for --engine spark (default local[2]; e.g. spark://host:7077)")
    parser.add_argument("--spark-remote", metavar="URL", help="Spark Connect server for --engine spark (e.g. sc://host:15002)")
    limits = parser.add_argument_group("limits", "override the policy's [server] values")
    limits.add_argument("--max-connections", type=_positive_int, metavar="N", help="open connections, logged in or not (default 100)")
    limits.add_argument("--authentication-timeout", type=_seconds, metavar="SECONDS", help="time to log in (default 60)")
    limits.add_argument("--statement-timeout", type=_seconds, metavar="SECONDS", help="time of one statement (default 300)")
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be an integer >= 1")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError("must be a number of seconds > 0 and <= 86400")
    return value


def serve_main(argv: list[str]) -> int:
    """Run the server until interrupted."""
    args = serve_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    config = ServerConfig(
        policy=args.policy.expanduser().resolve(), database=args.database, host=args.host, port=args.port,
        ledger=args.ledger, tls_cert=args.tls_cert, tls_key=args.tls_key,
        engine=args.engine, spark_master=args.spark_master, spark_remote=args.spark_remote,
        max_connections=args.max_connections, authentication_timeout=args.authentication_timeout,
        statement_timeout=args.statement_timeout,
    )  # fmt: skip
    try:
        policy = load_policy(config.policy)
        if not policy.analysts:
            print(f"ERROR: the policy {config.policy} declares no analysts, so nobody could log in: add an "
                  "[analysts.<name>] section with password = \"<verifier>\" (make one with 'dpsql hash-password')",
                  file=sys.stderr)  # fmt: skip
            return 1
        asyncio.run(run(config))
    except errors.Error as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except OSError as error:
        print(f"ERROR: cannot listen on {args.host}:{args.port}: {error.strerror or error}", file=sys.stderr)
        return 1
    return 0


def hash_password_main(argv: list[str]) -> int:
    """Print the SCRAM-SHA-256 verifier of a password read from stdin (a prompt on a terminal)."""
    parser = argparse.ArgumentParser(
        prog="dpsql hash-password",
        description="Read a password from stdin and print its SCRAM-SHA-256 verifier for [analysts.<name>] password = ...",
    )
    parser.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS, help=f"PBKDF2 iterations (default {DEFAULT_ITERATIONS})")
    args = parser.parse_args(argv)
    password = getpass.getpass("Password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\r\n")
    if not password:
        print("ERROR: empty password", file=sys.stderr)
        return 1
    print(make_verifier(password, iterations=args.iterations))
    return 0
