"""Golden files for joins: SQL -> EXPLAIN (plan, fan-out and max_rows lines, engine SQL), and
SQL -> refusal code, over a small fixed policy with private tables sharing the privacy unit
(under the same and under other column names, with an order identifier), a private table of
another unit, and public lookup tables (tests/golden/joins/).

Join plans depend on public facts (a public table's fan-out and domains), read from the public
rows by the session: these cases compile in a real session over fixed data, and charge nothing
(EXPLAIN). Case format as in test_golden.py (`SQL;` then expected lines then a line `;`);
regenerate with DPSQL_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.analysis.context import AnalysisContext
from dpsql.catalog.loader import policy_from_dict
from dpsql.execution.compiled import compile_statement

HERE = Path(__file__).parent / "joins"
UPDATE = os.environ.get("DPSQL_UPDATE_GOLDEN") == "1"

POLICY = """
[budget]
epsilon = 10.0
delta = 1e-5
default_query_epsilon = 1.0
default_query_delta = 1e-7

[tables.people]
privacy_unit = "person_id"
max_rows = 2
max_groups = 1
[tables.people.columns]
person_id = { type = "int" }
age = { type = "int", lower = 18, upper = 90 }
dept = { type = "text" }

[tables.visits]
privacy_unit = "person_id"
max_rows = 3
join_max_rows = 4
[tables.visits.columns]
person_id = { type = "int" }
site = { type = "text", values = ["north", "south"] }
minutes = { type = "float", lower = 0, upper = 60 }

[tables.depts]
public = true
[tables.depts.columns]
name = { type = "text" }
floor = { type = "int" }

[tables.sites]
public = true
[tables.sites.columns]
site = { type = "text" }
city = { type = "text" }

[tables.badges]
privacy_unit = "badge_id"
[tables.badges.columns]
badge_id = { type = "int" }

# The unit of people and visits (person_id, by default) under other column names, and an order
# key both tables declare as the identifier "order".
[tables.orders]
privacy_unit = "owner"
unit = "person_id"
max_rows = 2
[tables.orders.columns]
owner = { type = "int" }
order_id = { type = "int", identifier = "order" }
total = { type = "float", lower = 0, upper = 100 }

[tables.lines]
privacy_unit = "buyer"
unit = "person_id"
max_rows = 3
[tables.lines.columns]
buyer = { type = "int" }
order_id = { type = "int", identifier = "order" }
qty = { type = "int", lower = 0, upper = 10 }
site = { type = "text" }

# Another unit whose column has the same name as people's: never joined with them.
[tables.students]
privacy_unit = "person_id"
unit = "student"
[tables.students.columns]
person_id = { type = "int" }
grade = { type = "int", lower = 0, upper = 10 }
"""


def tables() -> dict[str, pd.DataFrame]:
    """Fixed data: `depts` has a unique name except 'hr' (two floors: fan-out 2); `sites` is unique."""
    return {
        "people": pd.DataFrame({"person_id": [1, 1, 2, 3], "age": [30, 30, 40, 50], "dept": ["eng", "eng", "ops", "hr"]}),
        "visits": pd.DataFrame({"person_id": [1, 2, 2], "site": ["north", "south", "north"], "minutes": [5.0, 7.5, 9.0]}),
        "depts": pd.DataFrame({"name": ["eng", "ops", "hr", "hr"], "floor": [1, 2, 3, 4]}),
        "sites": pd.DataFrame({"site": ["north", "south"], "city": ["Oslo", "Rome"]}),
        "badges": pd.DataFrame({"badge_id": [1, 2]}),
        "orders": pd.DataFrame({"owner": [1, 1, 2], "order_id": [10, 11, 20], "total": [5.0, 7.0, 9.0]}),
        "lines": pd.DataFrame({"buyer": [1, 1, 2, 2], "order_id": [10, 10, 20, 20], "qty": [1, 6, 2, 7],
                               "site": ["north", "south", "north", "north"]}),
        "students": pd.DataFrame({"person_id": [1, 2], "grade": [5, 6]}),
    }


@pytest.fixture(scope="module")
def connection(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("joins") / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    con = dpsql.connect(policy=str(path), tables=tables(), random_seed=1)
    yield con
    con.close()


def cases(path: Path) -> list[tuple[str, list[str]]]:
    found, sql, expected, in_sql = [], [], [], True
    for line in path.read_text(encoding="utf-8").splitlines():
        if in_sql:
            if not sql and (not line.strip() or line.startswith("#")):
                continue
            sql.append(line)
            if line.rstrip().endswith(";"):
                in_sql = False
        elif line == ";":
            found.append(("\n".join(sql).rstrip()[:-1], expected))
            sql, expected, in_sql = [], [], True
        else:
            expected.append(line)
    return found


def write(path: Path, results: list[tuple[str, list[str]]]) -> None:
    path.write_text("\n\n".join(f"{sql};\n" + "".join(f"{line}\n" for line in lines) + ";" for sql, lines in results) + "\n",
                    encoding="utf-8")


def outcome(con: dpsql.Connection, sql: str, explain: bool) -> list[str]:
    try:
        rows = con.execute(("EXPLAIN (VERBOSE) " if explain else "") + sql).fetchall()  # the engine SQL too
    except dpsql.Error as error:
        return [f"{error.code}: {str(error).splitlines()[0].split(': ', 1)[1]}"]
    return [row[0] for row in rows[1:]] if explain else ["answered"]


@pytest.mark.parametrize("name", ["explain.sql", "reject.sql"])
def test_join_golden(connection, name: str) -> None:
    path = HERE / name
    found = cases(path)
    assert found, f"{name} holds no case"
    results = [(sql, outcome(connection, sql, explain=name == "explain.sql")) for sql, _ in found]
    if UPDATE:
        write(path, results)
        return
    for (sql, expected), (_, actual) in zip(found, results):
        assert actual == expected, f"{name}: {sql}"
    assert connection.ledger() == []  # EXPLAIN and refusals charge nothing


def test_a_public_join_compiled_without_a_session_is_refused() -> None:
    policy = policy_from_dict(tomllib.loads(POLICY))
    with pytest.raises(dpsql.Error) as info:
        compile_statement("SELECT COUNT(*) FROM people p JOIN depts d ON p.dept = d.name", None,
                          AnalysisContext(policy, policy.budget.default_query))
    assert info.value.code == "DP139"
    # A private join needs no public facts: it compiles without a session.
    compile_statement("SELECT COUNT(*) FROM people p JOIN visits v USING (person_id)", None,
                      AnalysisContext(policy, policy.budget.default_query))


def test_a_sum_over_a_joined_float_column_is_answered(tmp_path: Path) -> None:
    # The joined relation's dry run carries the prepared fixed-point columns that SUM/AVG of a
    # bounded float read (before, the dry run lacked them and refused with DP123).
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    with dpsql.connect(policy=str(path), tables=tables(), random_seed=1) as con:
        rows = con.execute("SELECT COUNT(*), SUM(v.minutes), AVG(v.minutes) FROM people p JOIN visits v USING (person_id)").fetchall()
        assert len(rows) == 1 and len(con.ledger()) == 1
