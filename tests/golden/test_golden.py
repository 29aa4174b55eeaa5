"""Golden files for the compile stages: SQL -> accepted/refused (code), SQL -> plan text, SQL -> engine SQL.

Everything here compiles against the demo policy with no data: `compile_statement` is pure (no
engine, no budget), so these tests are fast and deterministic.

Layout (tests/golden/):
    analysis/accept/*.sql   one statement per file that must compile (comments allowed).
    analysis/reject/*.sql   first line `-- expect: DPxxx`, then one statement that must be refused
                            with that code; when the error has a span, str(error) shows a caret.
    planner/*.plan          cases: SQL -> plan_text(plan) lines.
    sqlgen/duckdb/*.sql     cases: SQL -> render(compiled.engine), the DuckDB SQL that runs.

Case files (planner/, sqlgen/) hold cases separated by blank lines; each case is
    # free comment lines (optional)
    # params: [30, "north"]        optional: the DB-API qmark parameters, as a JSON list
    SELECT ... ;                    the SQL, one or more lines, the last one ending with ';'
    expected output lines           verbatim
    ;                               a line holding only ';' ends the case

Regenerate the expected parts after an intended change with
    DPSQL_UPDATE_GOLDEN=1 python -m pytest tests/golden
and review the diff: comments, parameters and SQL are kept, expected outputs (and the codes of
reject files) are rewritten. Accept files are never rewritten: they must compile.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from dpsql.analysis.context import AnalysisContext
from dpsql.backend.engines.duckdb_engine import render
from dpsql.catalog.loader import policy_from_dict
from dpsql.catalog.policy import Policy
from dpsql.demo.people import policy_text
from dpsql.errors import Error
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.ir.printer import plan_text

GOLDEN = Path(__file__).parent
ACCEPT = sorted((GOLDEN / "analysis" / "accept").glob("*.sql"))
REJECT = sorted((GOLDEN / "analysis" / "reject").glob("*.sql"))
PLAN_FILES = sorted((GOLDEN / "planner").glob("*.plan"))
SQLGEN_FILES = sorted((GOLDEN / "sqlgen" / "duckdb").glob("*.sql"))
UPDATE = os.environ.get("DPSQL_UPDATE_GOLDEN") == "1"
EXPECT = re.compile(r"^--\s*expect:\s*(DP\d{3})\s*$")


@cache
def demo_policy() -> Policy:
    """The demo policy without a data source (compiling needs no data)."""
    return policy_from_dict(tomllib.loads(policy_text(None)))


def compile_sql(sql: str, parameters: list[object] | None = None) -> object:
    """Compile one statement against the demo policy with its default per-query budget."""
    policy = demo_policy()
    _, compiled = compile_statement(sql, parameters, AnalysisContext(policy, policy.budget.default_query))
    return compiled


# --- analysis: accept / reject ----------------------------------------------------------------


def test_golden_sets_are_large_enough() -> None:
    assert len(ACCEPT) >= 15
    assert len(REJECT) >= 25
    assert PLAN_FILES and SQLGEN_FILES


@pytest.mark.parametrize("path", ACCEPT, ids=lambda p: p.stem)
def test_accept(path: Path) -> None:
    compile_sql(path.read_text(encoding="utf-8"))  # any dpsql error fails the test with its message


def read_reject(path: Path) -> tuple[str, str]:
    """(expected code, SQL) of a reject file."""
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    match = EXPECT.match(first)
    assert match, f"{path.name}: the first line must be '-- expect: DPxxx'"
    return match.group(1), rest.strip()


@pytest.mark.parametrize("path", REJECT, ids=lambda p: p.stem)
def test_reject(path: Path) -> None:
    code, sql = read_reject(path)
    with pytest.raises(Error) as info:
        compile_sql(sql)
    err = info.value
    if UPDATE and err.code != code and err.code is not None:
        path.write_text(f"-- expect: {err.code}\n{sql}\n", encoding="utf-8")
        code = err.code
    assert err.code == code, f"{path.name}: expected {code}, got {err.code}: {err}"
    text = str(err)
    assert text.startswith(f"{code}: "), text
    if err.span is not None:
        caret = err.caret()
        assert caret and "^" in caret.splitlines()[-1], text
        assert caret in text, text
        assert 0 <= err.span.start < err.span.end <= len(sql) + 1, err.span


# --- case files: planner and sqlgen -----------------------------------------------------------


@dataclass
class Case:
    """One case of a case file: its comment lines, SQL, parameters and expected lines."""

    comments: list[str]
    sql: str
    expected: list[str]
    params: list[object] | None = None
    line: int = 0


def parse_cases(path: Path) -> list[Case]:
    """Read a case file (format in the module docstring)."""
    cases: list[Case] = []
    comments: list[str] = []
    sql_lines: list[str] = []
    expected: list[str] | None = None
    start = 0
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.rstrip()
        if expected is not None:  # inside the expected block
            if line == ";":
                cases.append(_case(comments, sql_lines, expected, start, path))
                comments, sql_lines, expected = [], [], None
            else:
                expected.append(line)
            continue
        if not sql_lines and (not line or line.startswith("#")):
            if line:
                comments.append(line)
            continue
        if not sql_lines:
            start = number
        sql_lines.append(line)
        if line.endswith(";"):
            expected = []
    assert expected is None and not sql_lines, f"{path.name}: the last case is not closed by a ';' line"
    return cases


def _case(comments: list[str], sql_lines: list[str], expected: list[str], line: int, path: Path) -> Case:
    params = None
    for comment in comments:
        if comment.startswith("# params:"):
            params = json.loads(comment.removeprefix("# params:"))
            assert isinstance(params, list), f"{path.name}:{line}: params must be a JSON list"
    sql = "\n".join(sql_lines).rstrip()[:-1].rstrip()
    return Case(comments=list(comments), sql=sql, expected=list(expected), params=params, line=line)


def write_cases(path: Path, cases: list[Case]) -> None:
    """Write a case file back (used only with DPSQL_UPDATE_GOLDEN=1)."""
    blocks = []
    for case in cases:
        blocks.append("\n".join([*case.comments, f"{case.sql};", *case.expected, ";"]))
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def plan_output(case: Case) -> list[str]:
    compiled = compile_sql(case.sql, case.params)
    assert isinstance(compiled, CompiledQuery), f"not a private query: {case.sql}"
    return plan_text(compiled.plan)


def engine_output(case: Case) -> list[str]:
    compiled = compile_sql(case.sql, case.params)
    assert isinstance(compiled, CompiledQuery), f"not a private query: {case.sql}"
    # Then each robust aggregate's raw request (MEDIAN/IQR/MODE), and its exact fallback if any.
    robust = [f"-- request {i}{suffix}: {render(q)}" for i, query in enumerate(compiled.robust_queries)
              for suffix, q in (("", query.main), (" scan", query.scan), (" fallback", query.fallback)) if q is not None]
    return [render(compiled.engine), *robust]


def check_case_file(path: Path, produce: Callable[[Case], list[str]]) -> None:
    cases = parse_cases(path)
    assert cases, f"{path.name} holds no case"
    if UPDATE:
        for case in cases:
            case.expected = produce(case)
        write_cases(path, cases)
        return
    failures = []
    for case in cases:
        actual = produce(case)
        if actual != case.expected:
            failures.append(
                f"{path.name}:{case.line}: {case.sql}\n--- expected\n" + "\n".join(case.expected)
                + "\n--- actual\n" + "\n".join(actual)
            )
    assert not failures, "\n\n".join(failures) + "\n\n(DPSQL_UPDATE_GOLDEN=1 regenerates after an intended change)"


@pytest.mark.parametrize("path", PLAN_FILES, ids=lambda p: p.stem)
def test_planner(path: Path) -> None:
    check_case_file(path, plan_output)


@pytest.mark.parametrize("path", SQLGEN_FILES, ids=lambda p: p.stem)
def test_sqlgen_duckdb(path: Path) -> None:
    check_case_file(path, engine_output)


def test_case_file_format_round_trips(tmp_path: Path) -> None:
    source = "# a comment\n# params: [1, \"x\"]\nSELECT COUNT(*)\nFROM people WHERE age > ?;\nline one; with a semicolon\n;\n"
    path = tmp_path / "one.plan"
    path.write_text(source, encoding="utf-8")
    cases = parse_cases(path)
    assert len(cases) == 1
    assert cases[0].sql == "SELECT COUNT(*)\nFROM people WHERE age > ?"
    assert cases[0].params == [1, "x"]
    assert cases[0].expected == ["line one; with a semicolon"]
    write_cases(path, cases)
    assert path.read_text(encoding="utf-8") == source
