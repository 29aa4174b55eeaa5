"""A clamped release's interval through a real `dpsql serve` (psycopg2): clipped at the bound it
was clamped to, in every place a wire client reads it.

Hypothesis: at epsilon 0.01 on empty and tiny groups (a COUNT's 95% half-width is ~900 around a
true count of 0 or 2), the released COUNT is clamped at 0 in most groups, and then CI_LOW(COUNT(*))
is 0 (not value - CI95), CI_HIGH is value + CI95, the `n_ci_low`/`n_ci_high` columns say the same,
the notice prints `[0, high]`, and `dpsql.last_query` holds low 0. Negative control: with
OPTIONS (clamp = false) the same statement has symmetric intervals and CI_LOW below 0 (a noisy 0
with a half-width of ~900 is negative about half the time: 12 groups all at or above 0 would
have probability about 2^-12). The server's noise is not seeded: every assertion holds whatever
the draw, or fails with the probability stated beside it (at most 2^-12).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest

from dpsql.backend.auxiliary.files import write_parquet
from dpsql.server.scram import make_verifier
from dpsql.server.transport import ServerConfig, ServerThread
from tests.conftest import make_policy_text

psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2 is not installed (pip install -e '.[test]')")

PASSWORD = "ana-pw"
GROUPED = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01{extra}) dept, COUNT(*) AS n, "
           "CI_LOW(COUNT(*)) AS lo, CI_HIGH(COUNT(*)) AS hi, CI95(COUNT(*)) AS w FROM people WHERE age > 80 GROUP BY dept")


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    directory = tmp_path_factory.mktemp("clipped")
    ages = [30] * 20 + [85] * 2  # one tiny group over 80 (sales), every other group empty
    people = pd.DataFrame({"person_id": range(len(ages)), "age": ages, "income": [1000.0] * len(ages),
                           "dept": ["sales"] * len(ages), "region": ["north"] * len(ages)})
    write_parquet(people, directory / "people.parquet")
    analysts = f'[analysts.ana]\npassword = "{make_verifier(PASSWORD)}"\n'
    policy = directory / "policy.toml"
    policy.write_text(make_policy_text(source="people.parquet", extra=analysts, replay_seconds=0), encoding="utf-8")
    with ServerThread(ServerConfig(policy=policy, port=0, ledger=Path(directory / "ledger.sqlite"))) as server:
        yield server.port


@contextmanager
def connect(port: int, options: str = "") -> Iterator[psycopg2.extensions.connection]:
    """Values exact (not rounded to their interval's precision), to compare them with CI_LOW and CI_HIGH."""
    con = psycopg2.connect(host="127.0.0.1", port=port, user="ana", password=PASSWORD, dbname="warehouse",
                           sslmode="disable", options=f"-c dpsql.round=off {options}")
    con.autocommit = True
    try:
        yield con
    finally:
        con.close()


def test_ci_low_of_a_clamped_count_is_zero_not_value_minus_ci95(port: int) -> None:
    with connect(port) as con:
        cur = con.cursor()
        cur.execute(GROUPED.format(extra=""))
        rows = cur.fetchall()
        assert len(rows) == 12
        assert all(lo == max(n - w, 0) and hi == n + w and lo <= n <= hi for _, n, lo, hi, w in rows)
        assert all(lo >= 0 for _, _, lo, _, _ in rows)
        zeros = [(lo, hi, w) for _, n, lo, hi, w in rows if n == 0]
        assert zeros and all(lo == 0 and hi == w for lo, hi, w in zeros)  # [0, CI95] at a clamped 0
        # The notice says [low, high] where ± would mislead (several rows: per row in dpsql.last_query).
        bent = sum(n - w < 0 for _, n, _, _, w in rows)  # all 12 but with probability about 1 - 0.975^12
        assert f"[low, high] in {bent} of 12 rows (per row in dpsql.last_query)" in con.notices[-1]
        cur.execute("SELECT column_name, value, ci95, low, high FROM dpsql.last_query WHERE column_name = 'n'")
        kept = cur.fetchall()
        assert len(kept) == 12 and all(low == max(value - ci95, 0) and high == value + ci95 for _, value, ci95, low, high in kept)


def test_single_clamped_count_notice_and_interval_columns(port: int) -> None:
    with connect(port, "-c dpsql.ci_columns=on") as con:
        cur = con.cursor()
        for _ in range(16):  # a true 0: clamped about half the time; printed [0, high] whenever it is
            cur.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) COUNT(*) AS n FROM people WHERE age > 88")
            assert [d.name for d in cur.description] == ["n", "n_ci95", "n_ci_low", "n_ci_high"]
            n, width, low, high = cur.fetchone()
            assert low == max(n - width, 0) and high == n + width
            if n == 0:
                assert f"95% intervals: n [0, {high:g}] (laplace)" in con.notices[-1]
                break
        else:
            pytest.fail("16 releases of a true 0 were all above 0 (probability about 2^-16)")


def test_negative_control_clamp_false_is_symmetric_and_reaches_below_zero(port: int) -> None:
    with connect(port) as con:
        cur = con.cursor()
        cur.execute(GROUPED.format(extra=", clamp = false"))
        rows = cur.fetchall()
        assert all(lo == n - w and hi == n + w for _, n, lo, hi, w in rows)
        assert any(lo < 0 for _, _, lo, _, _ in rows) and any(n < 0 for _, n, _, _, _ in rows)
        assert f"intervals: n ± {rows[0][4]:g} (laplace)" in con.notices[-1] and "[low, high]" not in con.notices[-1]
