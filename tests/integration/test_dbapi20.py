"""The PEP 249 compliance suite (dbapi-compliance's dbapi20.py) run against dpsql.connect.

The suite creates tables and INSERTs rows to read them back exactly. dpsql answers SELECT only
and never releases private rows, so the suite runs over *public* tables of the policy (CSV
sources, `public = true`), which dpsql answers exactly, next to the private demo `people` table:
- dbapi20test_booze holds the suite's six `samples` (what its INSERTs would have written), and
  `_populate` returns no statements;
- dbapi20test_barflys is empty (what the suite expects right after its CREATE TABLE);
- dbapi20test_trouble holds the rows `_paraminsert` and `test_None` would have inserted.
`ddl1`/`ddl2`/`xddl1`/`xddl2` become `SET dpsql...` statements: statements that return no rows
and that dpsql accepts. Every test that needs writes, stored procedures or several result sets is
adapted or skipped below, each with a one-line reason.
"""

from __future__ import annotations

import shutil
import tempfile
from fractions import Fraction
from pathlib import Path

import dbapi20
import pandas as pd
import pytest

import dpsql
from dpsql.demo.people import DEPTS, generate_people
from tests.conftest import make_policy_text

TROUBLE = "thi%s :may ca%(u)se? troub:1e"  # the suite's string with every paramstyle's markers


def _public(name: str, source: str, columns: tuple[str, ...]) -> str:
    cols = "".join(f'{c} = {{ type = "text" }}\n' for c in columns)
    return f'\n[tables.{name}]\npublic = true\nsource = "{source}"\n\n[tables.{name}.columns]\n{cols}'


class TestDpsqlDBAPI20(dbapi20.DatabaseAPI20Test):
    driver = dpsql
    connect_args = ()
    connect_kw_args: dict = {}
    table_prefix = "dbapi20test_"
    # Statements that return no rows and that dpsql accepts (DDL is refused: see test_ddl_and_dml_are_refused).
    ddl1 = "SET dpsql.epsilon = 0.1"
    ddl2 = "SET dpsql.delta = 1e-8"
    xddl1 = "SET dpsql.epsilon = 0.1"
    xddl2 = "SET dpsql.delta = 1e-8"
    lower_func = "lower"

    @classmethod
    def setUpClass(cls) -> None:
        cls._dir = Path(tempfile.mkdtemp(prefix="dpsql-dbapi20-"))
        pd.DataFrame({"name": cls.samples}).to_csv(cls._dir / "booze.csv", index=False)
        (cls._dir / "barflys.csv").write_text("name,drink\n", encoding="utf-8")
        pd.DataFrame({"name": ["Victoria Bitter", "Cooper's", "a"], "drink": [TROUBLE, TROUBLE, None]}).to_csv(
            cls._dir / "trouble.csv", index=False
        )
        policy = make_policy_text(epsilon=1e6)
        policy += _public("dbapi20test_booze", "booze.csv", ("name",))
        policy += _public("dbapi20test_barflys", "barflys.csv", ("name", "drink"))
        policy += _public("dbapi20test_trouble", "trouble.csv", ("name", "drink"))
        (cls._dir / "policy.toml").write_text(policy, encoding="utf-8")
        cls.connect_kw_args = {"policy": cls._dir / "policy.toml", "tables": {"people": generate_people(2000)}, "random_seed": 1}

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls._dir, ignore_errors=True)

    def _populate(self) -> list[str]:
        """No INSERTs: dpsql never writes (DP102); dbapi20test_booze is pre-populated with `samples`."""
        return []

    def _paraminsert(self, cur: dpsql.Cursor) -> None:
        """Adapted: the suite INSERTs two rows with qmark parameters and a literal full of
        parameter markers, then reads them back. dpsql never writes, so the same parameter and
        literal handling is checked by SELECTs: over a public table (exact rows) and over the
        private table (a noisy count, charged)."""
        self.executeDDL2(cur)
        cur.execute(f"select name, drink from {self.table_prefix}trouble where drink = '{TROUBLE}' and name <> ?", ("a",))
        assert cur.rowcount in (-1, 2)
        res = cur.fetchall()
        assert len(res) == 2, "cursor.fetchall returned too few rows"
        assert sorted(r[0] for r in res) == ["Cooper's", "Victoria Bitter"]
        assert [r[1] for r in res] == [TROUBLE, TROUBLE]
        cur.execute(f"select drink from {self.table_prefix}trouble where name = ?", ("Cooper's",))
        assert cur.fetchall() == [(TROUBLE,)]
        cur.execute(f"SELECT COUNT(*) FROM people WHERE region <> '{TROUBLE}' AND age > ?", (40,))
        rows = cur.fetchall()
        assert len(rows) == 1 and isinstance(rows[0][0], int)

    # --- adapted tests -------------------------------------------------------------------------

    def test_cursor_isolation(self) -> None:
        """Adapted: no CREATE/INSERT (DP forbids writes); cursors of one connection share its session settings."""
        con = self._connect()
        try:
            cur1, cur2 = con.cursor(), con.cursor()
            cur1.execute("SET dpsql.epsilon = 0.2")
            cur2.execute("SELECT COUNT(*) FROM people")
            assert con.ledger()[-1].cost.epsilon == Fraction(1, 5)
            cur2.execute(f"select name from {self.table_prefix}booze where name = ?", ("Victoria Bitter",))
            assert cur2.fetchall() == [("Victoria Bitter",)]
        finally:
            con.close()

    def test_rowcount(self) -> None:
        """Adapted: no INSERT, so no rowcount on DML (DP forbids writes); SELECT rowcounts are checked."""
        con = self._connect()
        try:
            cur = con.cursor()
            assert cur.rowcount == -1
            self.executeDDL1(cur)
            assert cur.rowcount in (-1, 0)
            cur.execute(f"select name from {self.table_prefix}booze")
            assert cur.rowcount in (-1, len(self.samples))
            cur.execute("SELECT dept, COUNT(*) FROM people GROUP BY dept")  # public domain: 12 keys, never data-dependent
            assert cur.rowcount in (-1, len(DEPTS))
            self.executeDDL2(cur)
            assert cur.rowcount in (-1, 0)
        finally:
            con.close()

    def test_callproc(self) -> None:
        """Adapted: DP forbids stored procedures (arbitrary code over private rows); callproc is optional and absent."""
        con = self._connect()
        try:
            assert not hasattr(con.cursor(), "callproc")
        finally:
            con.close()

    @pytest.mark.skip(reason="not a DP rule: dpsql's close() is idempotent on purpose, like sqlite3's and psycopg's; "
                             "the suite itself calls this test disputed")
    def test_non_idempotent_close(self) -> None:
        super().test_non_idempotent_close()

    def test_executemany(self) -> None:
        """Adapted: executemany of SELECTs (DP forbids INSERT); every private execution is charged."""
        con = self._connect()
        try:
            cur = con.cursor()
            cur.executemany(f"select name from {self.table_prefix}booze where name = ?", [("Cooper's",), ("Redback",)])
            assert cur.fetchall() == [("Redback",)]  # the last execution's result
            charged = len(con.ledger())
            cur.executemany("SELECT COUNT(*) FROM people WHERE age > ?", [(30,), (60,)])
            assert len(con.ledger()) == charged + 2
            assert len(cur.fetchall()) == 1
        finally:
            con.close()

    def test_fetchone(self) -> None:
        """Adapted: no INSERT (DP forbids writes); an empty and a one-row SELECT of public tables instead."""
        con = self._connect()
        try:
            cur = con.cursor()
            self.assertRaises(self.driver.Error, cur.fetchone)
            self.executeDDL1(cur)
            self.assertRaises(self.driver.Error, cur.fetchone)
            cur.execute(f"select name from {self.table_prefix}barflys")
            assert cur.fetchone() is None
            assert cur.rowcount in (-1, 0)
            self.executeDDL2(cur)
            self.assertRaises(self.driver.Error, cur.fetchone)
            cur.execute(f"select name from {self.table_prefix}booze where name = ?", ("Victoria Bitter",))
            r = cur.fetchone()
            assert len(r) == 1 and r[0] == "Victoria Bitter"
            assert cur.fetchone() is None
            assert cur.rowcount in (-1, 1)
        finally:
            con.close()

    def test_nextset(self) -> None:
        """Adapted: one statement gives one result (several statements are refused, DP101; procedures, DP102)."""
        con = self._connect()
        try:
            assert not hasattr(con.cursor(), "nextset")
        finally:
            con.close()

    def test_setoutputsize(self) -> None:
        """Adapted: setoutputsize is accepted and ignored (no LONG columns); the cursor still works."""
        con = self._connect()
        try:
            cur = con.cursor()
            cur.setoutputsize(10)
            cur.setoutputsize(10, 0)
            cur.execute(f"select name from {self.table_prefix}booze")
            assert len(cur.fetchall()) == len(self.samples)
        finally:
            con.close()

    def test_None(self) -> None:  # noqa: N802 - the suite's name
        """Adapted: the NULL comes from a public table, not an INSERT (DP forbids writes)."""
        con = self._connect()
        try:
            cur = con.cursor()
            cur.execute(f"select drink from {self.table_prefix}trouble where name = 'a'")
            r = cur.fetchall()
            assert r == [(None,)], "NULL value not returned as None"
        finally:
            con.close()

    # --- dpsql additions in the suite's spirit ----------------------------------------------------

    def test_ddl_and_dml_are_refused(self) -> None:
        """DP forbids writes: the suite's DDL and INSERTs raise ProgrammingError (DP102) and cost nothing."""
        con = self._connect()
        try:
            cur = con.cursor()
            for sql in (dbapi20.DatabaseAPI20Test.ddl1, dbapi20.DatabaseAPI20Test.xddl1,
                        f"insert into {self.table_prefix}booze values ('Victoria Bitter')"):
                with pytest.raises(self.driver.ProgrammingError) as caught:
                    cur.execute(sql)
                assert caught.value.code == "DP102"
            assert con.ledger() == []
        finally:
            con.close()

    def test_fetch_on_a_private_query(self) -> None:
        """Exact values of private rows are what DP forbids: shapes, keys and types are checked instead."""
        con = self._connect()
        try:
            cur = con.cursor()
            cur.execute("SELECT dept, COUNT(*) AS n, AVG(income) AS mean FROM people GROUP BY dept")
            assert [d[0] for d in cur.description] == ["dept", "n", "mean"]
            assert cur.description[0][1] == self.driver.STRING and cur.description[1][1] == self.driver.NUMBER
            first = cur.fetchone()
            rest = cur.fetchmany(4) + cur.fetchall()
            rows = [first, *rest]
            assert sorted(r[0] for r in rows) == sorted(DEPTS)
            assert all(isinstance(r[1], int) and isinstance(r[2], float) for r in rows)
            assert cur.fetchone() is None
        finally:
            con.close()
