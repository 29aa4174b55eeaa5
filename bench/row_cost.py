"""Per-row engine work: DP125's static bound (dpsql/analysis/row_cost.py) against DuckDB's time.

Two tables of figures, both from the same harness: a table of `CHUNKS * 2048` rows in which the
predicate `TRY(CASE WHEN id % 2048 = 7 THEN <expr> ELSE false END)` evaluates `<expr>` on one
row per vector (the attack's shape: one selected row, the engine's fixed costs not amortised),
timed against the same SQL selecting no row (`= -7`); the difference over CHUNKS is the time of
`<expr>` on one row (minimum of --runs runs each, one DuckDB thread).

- `calibrate`: expressions of every priced kind, most far over the caps (inputs of 8,192
  characters, adversarial for RE2's DFA), with the bound in steps and the measured nanoseconds
  per step: the weights of row_cost.py are right when no ratio is far above 1.
- `admitted`: the most expensive expressions the caps still accept (each checked through
  `check_bounded_expressions`), and their time per row: the per-row cap in seconds, measured.

    python bench/row_cost.py                       # both tables
    python bench/row_cost.py --table admitted --chunks 200 --runs 7
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import sqlglot

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dpsql  # noqa: E402
from dpsql.analysis import row_cost  # noqa: E402
from dpsql.analysis.function_arguments import check_bounded_expressions, length_bound  # noqa: E402
from dpsql.errors import UnsupportedQueryError  # noqa: E402

REGION = "north"  # the column every expression reads: l = 5 characters
_RNG = random.Random(25)  # public test input, not privacy noise
AB_8K = "".join(_RNG.choice("ab") for _ in range(8192))
AB_64K = "".join(_RNG.choice("ab") for _ in range(65_000))
PAD_8K = f"lpad(region || '1', 8192, '{AB_8K}')"  # 8,192 random a/b characters, not constant-folded
PAD_64K = f"lpad(region || '1', 65536, '{AB_64K}')"
A_8K = "lpad(region || '1', 8192, 'a')"  # 'aaa...': every position a partial match
A_64K = "lpad(region || '1', 65536, 'a')"


def _balanced(items: list[str], op: str) -> str:
    while len(items) > 1:
        items = [f"({items[i]} {op} {items[i + 1]})" if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


CALIBRATE: list[tuple[str, str]] = [
    ("regex [ab]{9}", f"regexp_matches({PAD_8K}, '[ab]*a[ab]{{9}}c')"),
    ("regex [ab]{30}", f"regexp_matches({PAD_8K}, '[ab]*a[ab]{{30}}c')"),
    ("regex [ab]{99}", f"regexp_matches({PAD_8K}, '[ab]*a[ab]{{99}}c')"),
    ("regex [ab]{999}", f"regexp_matches({PAD_8K}, '[ab]*a[ab]{{999}}c')"),
    ("regex (a|b){99}", f"regexp_matches({PAD_8K}, '(a|b)*a(a|b){{99}}c')"),
    ("regex (a|ab|b){60}", f"regexp_matches({PAD_8K}, '(a|ab|b)*a(a|ab|b){{60}}c')"),
    ("regex (?:a|b){99}", f"regexp_matches({PAD_8K}, '(?:a|b)*a(?:a|b){{99}}c')"),
    ("regex .{99}", f"regexp_matches({PAD_8K}, '.*a.{{99}}c')"),
    ("regex (?i)(a|b){99}", f"regexp_matches({PAD_8K}, '(?i)(a|b)*a(a|b){{99}}c')"),
    ("regex \\pL{30}", f"regexp_matches({PAD_8K}, '\\pL*a\\pL{{30}}c')"),
    ("regex literal", f"regexp_matches({PAD_8K}, 'abbabababbbabbbac')"),
    ("full match (a|b){99}", f"regexp_full_match({PAD_8K}, '(a|b)*a(a|b){{99}}c')"),
    ("similar to _{99}", f"{PAD_8K} SIMILAR TO '%a{'_' * 99}c%'"),
    ("like _a x500 over a...", f"{A_8K} LIKE '%{'_a' * 500}c%'"),
    ("ilike _a x500 over a...", f"{A_8K} ILIKE '%{'_a' * 500}c%'"),
    ("glob ?a x500 over a...", f"{A_8K} GLOB '*{'?a' * 500}c*'"),
    ("like %a x500% over a...", f"{A_8K} LIKE '%{'a' * 500}c%'"),
    ("like %literal%", f"{PAD_64K} LIKE '%abbabababbbabbbac%'"),
    ("contains 9 chars", f"contains({PAD_64K}, 'abbabbbac')"),
    ("contains a x500 over a...", f"contains({A_8K}, '{'a' * 500}c')"),
    ("strpos a x500 over a...", f"strpos({A_8K}, '{'a' * 500}c') > 0"),
    ("replace a x500 over a...", f"length(replace({A_8K}, '{'a' * 500}c', 'b')) > 0"),
    ("trim 26 chars", f"length(trim({PAD_64K}, 'cdefghijklmnopqrstuvwxyzAB')) > 0"),
    ("lower", f"length(lower({PAD_64K})) > 0"),
    ("upper + reverse", f"length(reverse(upper({PAD_64K}))) > 0"),
    ("trim chars", f"length(trim({PAD_64K}, 'abc')) > 0"),
    ("substring", f"length(substring({PAD_64K}, 2, 60000)) > 0"),
    ("concat", f"length({PAD_64K} || region) > 0"),
    ("compare", f"{PAD_64K} = {PAD_64K.replace('region', 'upper(region)')}"),
    ("lpad 65536", f"length({PAD_64K}) > 0"),
    ("OR of 500 comparisons", _balanced([f"length(region) = {i}" for i in range(500)], "OR")),
    ("IN list of 500", "length(region) IN (" + ", ".join(str(i) for i in range(500)) + ")"),
    ("CASE of 500 branches", "CASE " + " ".join(f"WHEN length(region) < {i} THEN {i}" for i in range(500)) + " END > 0"),
    ("500 string calls", _balanced([f"lower(region || '{i}') = 'x'" for i in range(500)], "OR")),
]


def _largest(family: Callable[[int], str], top: int) -> int:
    """The largest k in [1, top] whose expression DP125 admits (admission is monotone in k)."""
    low, high = 0, top
    while low < high:
        middle = (low + high + 1) // 2
        if bound(family(middle))[1]:
            low = middle
        else:
            high = middle - 1
    return low


def _admitted() -> list[tuple[str, str]]:
    """The worst expression of each kind that the caps accept: its size parameter pushed to the
    largest value `check_bounded_expressions` admits."""
    pad = {n: f"lpad(region || '1', {n}, '{AB_8K}')" for n in (1024, 4096)}
    families: list[tuple[str, Callable[[int], str], int]] = [
        ("regex (a|b){k} over 4096 chars", lambda k: f"regexp_matches({pad[4096]}, '(a|b)*a(a|b){{{k}}}c')", 1000),
        ("regex (a|b){k} over 1024 chars", lambda k: f"regexp_matches({pad[1024]}, '(a|b)*a(a|b){{{k}}}c')", 1000),
        ("regex .{k} over 1024 chars", lambda k: f"regexp_matches({pad[1024]}, '.*a.{{{k}}}c')", 1000),
        ("regex (a|b){k} over the column", lambda k: f"regexp_matches(region, '(a|b)*a(a|b){{{k}}}c')", 1000),
        ("like _a x k over 8192 a's", lambda k: f"lpad(region || '1', 8192, 'a') LIKE '%{'_a' * k}c%'", 4000),
        ("contains a x k over 8192 a's", lambda k: f"contains(lpad(region || '1', 8192, 'a'), '{'a' * k}c')", 8000),
        ("lower(lpad(.., k)) compared", lambda k: f"lower(lpad(region || '1', {k}, 'ab')) = 'x'", 65536),
        ("IN list of k", lambda k: "length(region) IN (" + ", ".join(str(i) for i in range(k)) + ")", 4000),
        ("OR of k comparisons", lambda k: _balanced([f"length(region) = {i}" for i in range(k)], "OR"), 8000),
        ("CASE of k branches", lambda k: "CASE " + " ".join(f"WHEN length(region) < {i} THEN {i}" for i in range(k)) + " END > 0",
         8000),
    ]
    cases = []
    for label, family, top in families:
        k = _largest(family, top)
        cases.append((label.replace(" k ", f" {k} ").replace("{k}", f"{{{k}}}").replace(" k", f" {k}"), family(k)))
    return cases


def bound(expr: str) -> tuple[row_cost.Work, bool]:
    """The static bound of `expr` as a WHERE predicate of the demo table, and whether DP125 admits it."""
    sql = f"SELECT COUNT(*) FROM people WHERE {expr}"
    tree = sqlglot.parse_one(sql, read="duckdb")
    memo: dict[int, object] = {}
    work = row_cost.work_of(tree, lambda node: length_bound(node, sql, memo))  # type: ignore[arg-type]
    try:
        check_bounded_expressions(tree, sql)
        admitted = True
    except UnsupportedQueryError:
        admitted = False
    return work, admitted


@dataclass
class Harness:
    chunks: int
    runs: int

    def __post_init__(self) -> None:
        self.con = duckdb.connect()
        self.con.execute("SET threads = 1")
        self.con.execute(f"CREATE TABLE people AS SELECT range AS id, '{REGION}' AS region FROM range({2048 * self.chunks})")

    def _best(self, sql: str) -> float:
        times = []
        for _ in range(self.runs):
            start = time.perf_counter()
            self.con.execute(sql).fetchall()
            times.append(time.perf_counter() - start)
        return min(times)

    def per_row(self, expr: str) -> float:
        """Seconds `expr` costs one selected row (the selecting run minus the same SQL selecting none)."""
        template = "SELECT COUNT(*) FROM people WHERE TRY(CASE WHEN id % 2048 = {k} THEN {expr} ELSE false END)"
        on, off = template.format(k=7, expr=expr), template.format(k=-7, expr=expr)
        self.con.execute(on).fetchall()
        pairs = [(self._best(on), self._best(off)) for _ in range(3)]
        return statistics.median(a - b for a, b in pairs) / self.chunks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=("calibrate", "admitted", "all"), default="all")
    parser.add_argument("--chunks", type=int, default=20, help="selected rows per run (one per 2,048-row vector)")
    parser.add_argument("--runs", type=int, default=3, help="runs per timing (the minimum is kept)")
    args = parser.parse_args(argv)
    print(f"command: python bench/row_cost.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; dpsql {dpsql.__version__}, duckdb {duckdb.__version__}, "
          f"python {platform.python_version()}; cores {os.cpu_count()}; load {os.getloadavg()[0]:.2f}")
    print(f"caps: {row_cost.MAX_ROW_WORK:,} steps + {row_cost.MAX_ROW_GROWTH:,} per character; weights NODE {row_cost.NODE}, "
          f"IN_ITEM {row_cost.IN_ITEM}, CHAR {row_cost.CHAR}, MATCH_STEP {row_cost.MATCH_STEP}, REGEX_STEP {row_cost.REGEX_STEP}")
    harness = Harness(args.chunks, args.runs)
    tables = {"calibrate": CALIBRATE, "admitted": _admitted()}
    for name in ("calibrate", "admitted") if args.table == "all" else (args.table,):
        print(f"\n{name}: {'case':40s} {'admitted':>8s} {'bound (steps)':>16s} {'time/row':>12s} {'ns/step':>8s}")
        worst = 0.0
        for label, expr in tables[name]:
            work, admitted = bound(expr)
            steps = work.growth * len(REGION) + work.constant
            seconds = harness.per_row(expr)
            worst = max(worst, seconds) if admitted else worst
            print(f"{'':11s}{label:40s} {'yes' if admitted else 'no':>8s} {steps:16,d} {seconds * 1e6:10.1f}us "
                  f"{seconds * 1e9 / steps:8.3f}", flush=True)
        print(f"{'':11s}worst admitted expression: {worst * 1e6:.1f} us per row")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
