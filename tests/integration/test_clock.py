"""now(), current_date and the other clocks: read once at plan time, as a UTC literal
(dpsql/frontend/clock.py; grammar/semantic_rules.md, "The clock").

Hypotheses: (1) a statement with now() releases exactly what the same statement with the literal
written by hand releases (same seed, same noise draws): the engine never reads its own clock;
(2) the literal is part of the plan's identity, so a repeat is replayed (free, identical) only
when it was planned at the same instant, and charged anew at another; (3) a WHERE range built
from the clock narrows a derived time key's domain like a literal range. Negative controls: the
same hand-written statement at another instant releases other counts (so the first comparison is
not vacuous), a repeat planned at another instant is charged, and the key domain without the
WHERE range is the policy's whole span.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.errors import CatalogError
from dpsql.frontend import clock

POLICY = """
[budget]
epsilon = 1000
delta = 1e-3
default_query_epsilon = 1
default_query_delta = 1e-8
{replay}
[tables.visits]
privacy_unit = "uid"
max_rows = 2
max_groups = 2
[tables.visits.columns]
uid = {{ type = "int" }}
seen = {{ type = "timestamp", lower = 2024-01-01T00:00:00, upper = 2025-12-31T23:59:59 }}
day = {{ type = "date", lower = 2024-01-01, upper = 2025-12-31 }}
{views}
"""
AT = dt.datetime(2025, 6, 15, 9, 30, 0, 250000)
# One visit per person per day of 2024-2025 (uid = day number), at 08:00 and at 20:00.
DAYS = [dt.datetime(2024, 1, 1) + dt.timedelta(days=i) for i in range(731)]
FRAME = pd.DataFrame({
    "uid": [i for i in range(731) for _ in (0, 1)],
    "seen": [d + dt.timedelta(hours=h) for d in DAYS for h in (8, 20)],
    "day": [d.date() for d in DAYS for _ in (0, 1)],
})
QUERY = "SELECT COUNT(*) AS n, SUM(1) AS s FROM visits WHERE seen >= now() - INTERVAL 30 DAY AND day <= current_date"


def by_hand(instant: dt.datetime) -> str:
    return ("SELECT COUNT(*) AS n, SUM(1) AS s FROM visits "
            f"WHERE seen >= CAST('{instant.isoformat(sep=' ', timespec='microseconds')}' AS TIMESTAMP) - INTERVAL 30 DAY "
            f"AND day <= CAST('{instant.date().isoformat()}' AS DATE)")


def open_(tmp_path: Path, *, seed: int | None = 5, replay: str = "", views: str = "", ledger: Path | None = None) -> dpsql.Connection:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY.format(replay=replay, views=views), encoding="utf-8")
    return dpsql.connect(policy=str(policy), tables={"visits": FRAME}, random_seed=seed,
                         ledger=str(ledger) if ledger else None)


@pytest.fixture
def at(monkeypatch: pytest.MonkeyPatch) -> list[dt.datetime]:
    """The clock dpsql reads: the list's last instant (a test appends to move it)."""
    instants = [AT]
    monkeypatch.setattr(clock, "utc_now", lambda: instants[-1])
    return instants


def test_now_releases_what_the_literal_written_by_hand_releases(tmp_path: Path, at: list[dt.datetime]) -> None:
    with open_(tmp_path) as con:
        with_clock = con.execute(QUERY).fetchall()
    with open_(tmp_path) as con:
        written = con.execute(by_hand(AT)).fetchall()
    with open_(tmp_path) as con:  # control: the same seed at another instant is another answer
        later = con.execute(by_hand(AT + dt.timedelta(days=400))).fetchall()  # past the data: no row
    assert with_clock == written
    assert later != written


def test_explain_shows_the_literal_and_the_engine_sql_reads_no_clock(tmp_path: Path, at: list[dt.datetime]) -> None:
    with open_(tmp_path) as con:
        plan = "\n".join(r[0] for r in con.execute("EXPLAIN (VERBOSE) " + QUERY).fetchall())
    assert "CAST('2025-06-15 09:30:00.250000' AS TIMESTAMP)" in plan and "CAST('2025-06-15' AS DATE)" in plan
    lowered = plan.lower()
    assert "now()" not in lowered.replace("explain (verbose) " + QUERY.lower(), "")
    assert "current_date" not in lowered.replace(QUERY.lower(), "")


def test_a_repeat_replays_only_when_planned_at_the_same_instant(tmp_path: Path, at: list[dt.datetime]) -> None:
    ledger = tmp_path / "ledger.sqlite"
    with open_(tmp_path, seed=None, replay="replay_seconds = 3600", ledger=ledger) as con:
        first = con.execute(QUERY).fetchall()
        again = con.execute(QUERY)  # the same instant: the same plan, replayed
        assert again.fetchall() == first and again.result.replay is not None
        assert len(con.ledger()) == 1
        at.append(AT + dt.timedelta(seconds=1))  # control: a second later is another plan, charged
        later = con.execute(QUERY)
        later.fetchall()
        assert later.result.replay is None and len(con.ledger()) == 2


def test_a_clock_range_narrows_a_derived_time_key(tmp_path: Path, at: list[dt.datetime]) -> None:
    narrowed = ("SELECT date_trunc('week', seen) AS w, COUNT(*) FROM visits "
                "WHERE seen >= date_trunc('month', now() + INTERVAL '-3 month') AND seen < date_trunc('month', now()) GROUP BY 1")
    with open_(tmp_path) as con:
        weeks = [r[0] for r in con.execute(narrowed).fetchall()]
        every = [r[0] for r in con.execute("SELECT date_trunc('week', seen) AS w, COUNT(*) FROM visits GROUP BY 1").fetchall()]
    # 2025-03-01 .. 2025-05-31: the Mondays from 2025-02-24 to 2025-05-26 (14 weeks)
    assert min(weeks) == dt.datetime(2025, 2, 24) and max(weeks) == dt.datetime(2025, 5, 26) and len(weeks) == 14
    assert len(every) == 105  # control: without the range, every week of the policy's two years


def test_a_view_may_not_read_the_clock(tmp_path: Path) -> None:
    views = '[views.recent]\nsql = "SELECT uid, seen FROM visits WHERE seen >= now() - INTERVAL 30 DAY"\n'
    with pytest.raises(CatalogError) as caught:
        open_(tmp_path, views=views).execute("SELECT COUNT(*) FROM recent")
    assert caught.value.code == "DP001" and "clock" in caught.value.message
