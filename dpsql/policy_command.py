"""`dpsql policy init SOURCE` writes a policy skeleton for a data owner; `dpsql policy check FILE`
validates a policy and prints what each analyst may query (and, with --data, that the sources
hold every declared column)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from dpsql import errors
from dpsql.backend.auxiliary.schema_reader import data_facts, read_source, value_ranges
from dpsql.catalog.loader import load_policy
from dpsql.catalog.policy import Column, Policy, Table
from dpsql.catalog.scaffold import TARGET_QUERIES, guess_privacy_unit, scaffold
from dpsql.execution.probe import check_policy_views


def build_parser() -> argparse.ArgumentParser:
    """`dpsql policy init|check` options."""
    parser = argparse.ArgumentParser(prog="dpsql policy", description="Write or check a dpsql policy file.")
    sub = parser.add_subparsers(dest="action", required=True)
    init = sub.add_parser("init", help="write a policy skeleton from a Parquet/CSV file or a DuckDB database")
    init.add_argument("source", type=Path, help="a .parquet or .csv file, or a DuckDB database file")
    init.add_argument("-o", "--output", type=Path, help="write the policy here (default: print it)")
    init.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    init.add_argument("--suggest-bounds", action="store_true",
                      help="READS DATA: fill numeric bounds from the data's own range, rounded outward "
                           "(a disclosure unless the rounded bounds are public knowledge; review them)")
    init.add_argument("--suggest", action="store_true",
                      help="READS DATA: --suggest-bounds, and max_rows and max_groups from the 99th percentile of rows and "
                           "keys per person, and the values of low-cardinality columns (each a disclosure unless public "
                           "knowledge: review them)")
    init.add_argument("--queries", type=int, default=TARGET_QUERIES, metavar="N",
                      help=f"propose the smallest budget that fits N queries at the default epsilon (default {TARGET_QUERIES})")
    check = sub.add_parser("check", help="validate a policy and print what each analyst may query")
    check.add_argument("policy", type=Path, help="the policy TOML file")
    check.add_argument("--database", type=Path, help="DuckDB database file holding tables the policy names")
    check.add_argument("--data", action="store_true", help="also open every source and check its declared columns")
    return parser


def policy_main(argv: list[str]) -> int:
    """Entry point of `dpsql policy ...`."""
    args = build_parser().parse_args(argv)
    try:
        if args.action == "init":
            return _init(args, sys.stdout, sys.stderr)
        return _check(args, sys.stdout)
    except errors.Error as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1


def _init(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    source = args.source.expanduser().resolve()
    tables = read_source(source)
    if not tables:
        print(f"ERROR: {source} holds no table", file=err)
        return 1
    target = args.output.expanduser().resolve() if args.output else None
    if target is not None and target.exists() and not args.force:
        print(f"ERROR: {target} exists (give --force to overwrite it)", file=err)
        return 1
    base = target.parent if target is not None else Path.cwd()
    lines = {}
    for table in tables:
        if table.source is None:
            lines[table.name] = f'table = "{table.name}"          # a table of the DuckDB database given to dpsql'
        else:
            lines[table.name] = f'source = "{_relative(Path(table.source), base)}"'
    ranges = facts = None
    if args.suggest_bounds or args.suggest:
        read = ("its ranges, rows and keys per person and the values of low-cardinality columns" if args.suggest
                else "its minimum and maximum")
        print(f"WARNING: {'--suggest' if args.suggest else '--suggest-bounds'} read the data: {read}. What is derived from "
              "the data is itself a disclosure (the largest value is one person's); keep each REVIEW line only if it is "
              "public knowledge.", file=err)
        ranges = {t.name: value_ranges(t, source if t.source is None else None) for t in tables}
    if args.suggest:
        facts = {t.name: data_facts(t, unit, source if t.source is None else None)
                 for t in tables if (unit := guess_privacy_unit(t)) is not None}
    ledger = (target.stem if target is not None else "policy") + ".ledger.sqlite"
    if args.queries < 1:
        print("ERROR: --queries must be at least 1", file=err)
        return 1
    text = scaffold(tables, lines, ranges, facts, ledger=ledger, queries=args.queries)
    if target is None:
        out.write(text)
    else:
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}: review it, then run `dpsql policy check {target}`", file=err)
    return 0


def _relative(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path, base)
    except ValueError:  # another drive
        return str(path)


def _check(args: argparse.Namespace, out: TextIO) -> int:
    policy = load_policy(args.policy)
    check_policy_views(policy)  # each [views.<name>] a row-level SELECT over the policy's tables (DP001 otherwise)
    out.write(describe_policy(policy))
    if args.data or args.database:
        from dpsql.dbapi.connection import connect  # opens the engine: only with --data

        with connect(database=args.database, policy=policy) as connection:
            for table in policy.tables.values():
                connection.session.engine.ensure_source(table)
        out.write("data: every declared column was found in its source\n")
    return 0


def _fmt(value: object) -> str:
    return f"{float(value):g}"  # type: ignore[arg-type]


def describe_policy(policy: Policy) -> str:
    """What the policy allows, in words: budgets, analysts, and per column the aggregates it takes."""
    budget = policy.budget
    lines = [
        f"policy {policy.path}: valid" if policy.path else "policy: valid",
        f"budget per analyst: epsilon {_fmt(budget.total.epsilon)}, delta {_fmt(budget.total.delta)} "
        f"(a query that names none spends epsilon {_fmt(budget.default_query.epsilon)}, delta {_fmt(budget.default_query.delta)})",
    ]
    if policy.analysts:
        for analyst in policy.analysts.values():
            own = (f"own budget epsilon {_fmt(analyst.budget.epsilon)}, delta {_fmt(analyst.budget.delta)}"
                   if analyst.budget else "the policy's budget")
            login = "may log in to `dpsql serve`" if analyst.password else "no password: cannot log in to `dpsql serve`"
            lines.append(f"analyst {analyst.name}: {own}; {login}")
    else:
        lines.append("analysts: none declared, so `dpsql serve` has nobody to let in (add [analysts.<name>])")
    for table in policy.tables.values():
        lines.append(_table_line(table))
        if not table.public:
            width = max(len(name) for name in table.columns)
            lines += [f"  {name.ljust(width)}  {_column_uses(table, column)}" for name, column in table.columns.items()]
    for view in policy.views.values():
        about = f" ({view.description})" if view.description else ""
        lines.append(f"view {view.name}{about}: {view.sql}; read like a row-level subquery (its table's bounds, limits and cost)")
    return "\n".join(lines) + "\n"


def _table_line(table: Table) -> str:
    where = f"source {table.source}" if table.source else (f"table {table.engine_table}" if table.engine_table else "a table of the database")
    if table.public:
        return f"table {table.name} (public; {where}): read exactly, no noise, no cost"
    return (f"table {table.name} (private; {where}; privacy unit {table.privacy_unit}; at most {table.max_rows} row(s) "
            f"and {table.max_groups} group(s) per person)")


def _column_uses(table: Table, column: Column) -> str:
    if column.name == table.privacy_unit:
        return f"{column.type}: the privacy unit (COUNT(DISTINCT {column.name}); never grouped or released)"
    uses = ["COUNT"]
    if column.numeric and column.bounded:
        uses += ["SUM", "AVG", "MEDIAN/QUANTILE/IQR"]
    elif column.type == "date" and column.bounded:
        uses += ["MEDIAN/QUANTILE/IQR"]
    if column.type in ("date", "timestamp") and column.bounded:
        uses.append("GROUP BY date_trunc/EXTRACT (keys derived from the bounds)")
    if column.public_domain:
        uses.append(f"GROUP BY (all {len(column.values or ())} public keys released)")
    else:
        uses.append("GROUP BY (keys chosen by partition selection: needs delta > 0)")
    uses.append("MODE")
    bounds = f" {column.bounds_text(_fmt)}" if column.bounded else ""
    missing = "" if column.bounded or not column.numeric else "; declare lower/upper to SUM, AVG or rank it"
    return f"{column.type}{bounds}: {', '.join(uses)}{missing}"
