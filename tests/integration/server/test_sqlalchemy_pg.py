"""SQLAlchemy's postgresql dialect against `dpsql serve`: table reflection and pandas.read_sql."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.integration.server.conftest import PASSWORDS, PgServer

sa = pytest.importorskip("sqlalchemy", reason="SQLAlchemy is not installed (pip install -e '.[test]')")


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2", "pg8000"])
def test_reflection_and_read_sql(pg_server: PgServer, driver: str) -> None:
    pytest.importorskip(driver, reason=f"{driver} is not installed (pip install -e '.[test]')")
    engine = sa.create_engine(f"postgresql+{driver}://alice:{PASSWORDS['alice']}@{pg_server.host}:{pg_server.port}/anydb")
    try:
        inspector = sa.inspect(engine)
        assert inspector.get_table_names() == ["people"]
        assert inspector.has_table("people") and not inspector.has_table("secrets")
        columns = {c["name"]: str(c["type"]) for c in inspector.get_columns("people")}
        assert columns == {"person_id": "BIGINT", "age": "BIGINT", "income": "DOUBLE PRECISION", "dept": "TEXT", "region": "TEXT"}
        assert inspector.get_pk_constraint("people")["constrained_columns"] == []
        assert inspector.get_foreign_keys("people") == [] and inspector.get_indexes("people") == []
        assert "privacy unit person_id" in (inspector.get_table_comment("people")["text"] or "")
        table = sa.Table("people", sa.MetaData(), autoload_with=engine)
        assert list(table.columns.keys()) == ["person_id", "age", "income", "dept", "region"]
        frame = pd.read_sql("SELECT dept, COUNT(*) AS n, AVG(income) AS mean FROM people GROUP BY dept", engine)
        assert frame.shape == (12, 3) and frame["n"].dtype.kind == "i" and frame["mean"].dtype.kind == "f"
    finally:
        engine.dispose()
