"""A clamped release's 95% interval is clipped at the bound it was clamped to, and shown as
`value [low, high]` wherever `value ± half-width` would mislead: the CLI/REPL table, the DB-API
cursor's attributes and df.attrs, the plot helper's error bars and the replay store.

Hypothesis: at epsilon 0.01 over empty and tiny groups (a COUNT's 95% half-width is ~900 around a
true count of 0 or 2, a SUM of ages ~80,000 around 0 or 170), a released COUNT or SUM of a
non-negative column clamped at 0 has the interval [0, half-width] (CI_LOW 0), and every cell's
interval is [value - half-width, value + half-width] cut at 0. Negative control: with
OPTIONS (clamp = false) every interval is symmetric and some reach below 0. Seeds are fixed in
process; the CLI's noise is not seeded, so its assertions hold with the probability stated.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.catalog.loader import policy_from_dict
from dpsql.execution import replay_codec
from dpsql.render import render_table
from tests.conftest import make_policy_text

GROUPED = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01{extra}) dept, COUNT(*) AS n, SUM(age) AS s "
           "FROM people WHERE age > 80 GROUP BY dept")
AGES = [30] * 20 + [85] * 2  # one tiny group over 80 (sales), every other group empty


def tiny_people() -> pd.DataFrame:
    return pd.DataFrame({"person_id": range(len(AGES)), "age": AGES, "income": [1000.0] * len(AGES),
                         "dept": ["sales"] * len(AGES), "region": ["north"] * len(AGES)})


def connect(seed: int, **kwargs: object) -> dpsql.Connection:
    policy = policy_from_dict(tomllib.loads(make_policy_text(epsilon=100)))
    return dpsql.connect(tables={"people": tiny_people()}, policy=policy, random_seed=seed, **kwargs)


def cells(cur: dpsql.Cursor, column: int) -> list[tuple[float, float, float, float]]:
    """(value, half-width, low, high) of one column, from the cursor's attributes."""
    return [(row[column], widths[column], low[column], high[column])
            for row, widths, low, high in zip(cur.result.rows, cur.cell_ci95, cur.cell_ci_low, cur.cell_ci_high)]


def test_dbapi_attrs_and_frame_attrs_hold_the_clipped_ends() -> None:
    with connect(3) as con:
        cur = con.execute(GROUPED.format(extra=""))
        for column in (1, 2):  # COUNT and SUM of a non-negative column
            found = cells(cur, column)
            assert all(low == max(v - w, 0) and high == v + w for v, w, low, high in found)
            assert any(v == 0 and low == 0 and high == w for v, w, low, high in found)  # [0, half-width]
        info = cur.noise_info[1]
        assert info is not None and all(low >= 0 for low in info["ci_low"])
        frame = con.execute(GROUPED.format(extra="")).fetchdf()
        assert frame.attrs["ci_low"] == [tuple(r) for r in frame.attrs["ci_low"]]
        assert all(low[1] >= 0 and low[2] >= 0 and low[0] is None for low in frame.attrs["ci_low"])
        assert all(high[1] == row[1] + widths[1] for high, row, widths in
                   zip(frame.attrs["ci_high"], frame.itertuples(index=False), frame.attrs["ci95"]))


def test_table_prints_low_high_where_clipped_and_plus_minus_where_symmetric() -> None:
    with connect(3) as con:
        result = con.execute(GROUPED.format(extra="")).result
        text = render_table(result)
        lines = {line.split("|")[0].strip(): line for line in text.splitlines()[2:14]}
        for number, row in enumerate(result.rows):
            low, high = result.interval(number, 1)
            assert (" [0, " in lines[row[0]].split("|")[1]) == (low == 0)
            assert (" ± " in lines[row[0]].split("|")[1]) == (low > 0)
        assert "± and [low, high] are 95% intervals" in text
    with connect(3) as con:  # negative control: unclamped, ± everywhere and values below 0
        text = render_table(con.execute(GROUPED.format(extra=", clamp = false")).result)
        assert " [" not in text and " ± -" not in text and "| -" in text.replace("|  ", "| ").replace("|  ", "| ")


matplotlib = pytest.importorskip("matplotlib", reason="the plot extra (pip install 'dpsql[plot]')")


def error_bars(ax: object) -> list[tuple[float, float]]:
    """The (low, high) ends of every vertical error bar drawn on the axes, in bar order."""
    bars = []
    for container in ax.containers:  # type: ignore[attr-defined]
        if type(container).__name__ == "ErrorbarContainer":
            for collection in container.lines[2]:
                bars += [(min(y for _, y in seg), max(y for _, y in seg)) for seg in collection.get_segments()]
    return bars


@pytest.mark.parametrize("clamp", [True, False])
def test_plot_draws_asymmetric_error_bars_at_a_clamped_zero(clamp: bool) -> None:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with connect(3) as con:
        cur = con.execute(GROUPED.format(extra="" if clamp else ", clamp = false"))
        ax = cur.plot(x="dept", y="n")
        found = cells(cur, 1)
        bars = error_bars(ax)
        plt.close(ax.figure)
    assert len(bars) == len(found) == 12
    assert all(math.isclose(a, low, abs_tol=1e-9) and math.isclose(b, high) for (a, b), (_, _, low, high) in zip(bars, found))
    below, above = zip(*[(v - a, b - v) for (a, b), (v, *_) in zip(bars, found)])
    if clamp:  # a bar at a clamped 0 goes up by the half-width and not down
        assert any(d == 0 and u > 100 for d, u in zip(below, above)) and all(a >= 0 for a, _ in bars)
    else:  # negative control: symmetric bars, some below 0
        assert all(math.isclose(d, u) for d, u in zip(below, above)) and any(a < 0 for a, _ in bars)


# --- replay ------------------------------------------------------------------------------------------

# An answer as the replay store kept it before the interval's ends were computed (format 1, no
# `bounds`): a clamped COUNT of 0 with its half-width only. It still decodes, as value ± half-width.
OLD_STORED = json.dumps({
    "format": 1, "kind": "query", "columns": [["dept", "VARCHAR"], ["n", "BIGINT"]],
    "rows": [["hr", 0], ["sales", 12]],
    "noise": [None, {"mechanism": "laplace", "scale": 300.0, "ci95": 899.0, "epsilon": 0.01, "delta": 0.0}],
    "ci95": [[None, 899.0], [None, 899.0]], "cost": [["1", "100"], ["0", "1"]], "message": None,
})


def test_old_stored_replays_still_decode() -> None:
    old = replay_codec.loads(OLD_STORED)
    assert old.rows == [("hr", 0), ("sales", 12)] and old.cell_bounds is None
    assert old.interval(0, 1) == (-899.0, 899.0)  # as it was shown when it was kept
    with pytest.raises(replay_codec.Unstorable):  # the control: damaged text is refused, not misread
        replay_codec.loads(OLD_STORED.replace('"rows"', '"rowz"'))


def test_replay_store_keeps_the_clipped_ends() -> None:
    with connect(3) as con:
        result = con.execute(GROUPED.format(extra="")).result
    kept = replay_codec.loads(replay_codec.dumps(result))
    assert kept.cell_bounds == result.cell_bounds and result.cell_bounds is not None
    assert [kept.interval(r, 1) for r in range(12)] == [result.interval(r, 1) for r in range(12)]
    assert any(kept.interval(r, 1)[0] == 0 and kept.rows[r][1] == 0 for r in range(12))


def test_replayed_answer_through_a_connection_keeps_the_clipped_ends(tmp_path: Path) -> None:
    write_parquet(tiny_people(), tmp_path / "people.parquet")
    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(source="people.parquet", replay_seconds=3600), encoding="utf-8")
    opened = [dpsql.connect(policy=policy, tables={}, ledger=tmp_path / "ledger.sqlite", analyst="ana") for _ in range(2)]
    try:
        first = opened[0].execute(GROUPED.format(extra=""))
        second = opened[1].execute(GROUPED.format(extra=""))
        assert second.result.replay is not None and first.result.replay is None
        assert second.cell_ci_low == first.cell_ci_low and second.cell_ci_high == first.cell_ci_high
        assert render_table(second.result).split("(12 rows)")[0] == render_table(first.result).split("(12 rows)")[0]
    finally:
        for con in opened:
            con.close()


# --- the CLI -----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_cli_prints_zero_low_high_for_a_clamped_count(tmp_path: Path) -> None:
    """`dpsql -c`: a clamped COUNT prints `0 [0, high]`, never `0 ± high` (the CLI's noise is not
    seeded: no cell at 0 among 12 groups has probability about 2^-12)."""
    write_parquet(tiny_people(), tmp_path / "people.parquet")
    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(source="people.parquet"), encoding="utf-8")
    command = [sys.executable, "-m", "dpsql", "--policy", str(policy), "--ledger", ":memory:", "-c",
               GROUPED.format(extra="") + "; " + GROUPED.format(extra=", clamp = false") + ";"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    clamped, unclamped = out.split("(12 rows)")[:2]
    counts = [line.split("|")[1].strip() for line in clamped.splitlines() if line.count("|") == 2 and "dept" not in line]
    assert len(counts) == 12 and all("±" not in c or not c.startswith("0 ") for c in counts)
    assert any(c.startswith("0 [0, ") for c in counts)
    # Negative control: unclamped, every count is `value ± half-width`, some below 0 (about 1 - 2^-12).
    rows = [line.split("|")[1].strip() for line in unclamped.splitlines() if line.count("|") == 2 and "dept" not in line]
    assert rows and all(" ± " in r and "[" not in r for r in rows) and any(r.startswith("-") for r in rows)


DERIVED = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01{extra}) dept, COUNT(*) + 1 AS n1, "
           "SUM(age) / COUNT(*) AS ratio FROM people WHERE age > 80 GROUP BY dept")


def test_derived_outputs_use_clamped_corners_and_state_unbounded_ratios() -> None:
    """`COUNT(*) + 1` is evaluated at clamped corners (each COUNT corner >= 0), so its interval
    never reaches below 1; a ratio whose COUNT corner is 0 has no finite interval and says so
    (inf), never NaN and never a finite interval from the other corners alone. Control: with
    clamp = false the corners are raw, and some interval of COUNT(*) + 1 reaches below 1."""
    lows, control_lows, ratios = [], [], []
    for seed in range(5):
        with connect(seed) as con:
            result = con.execute(DERIVED.format(extra="")).result
            lows += [result.interval(r, 1)[0] for r in range(len(result.rows))]
            ratios += [result.interval(r, 2) for r in range(len(result.rows))
                       if result.rows[r][2] is not None and math.isfinite(result.rows[r][2])]
        with connect(seed) as con:
            control = con.execute(DERIVED.format(extra=", clamp = false")).result
            control_lows += [control.interval(r, 1)[0] for r in range(len(control.rows))]
    assert min(lows) >= 1
    assert min(control_lows) < 1
    assert all(not math.isnan(low) and not math.isnan(high) for low, high in ratios)
    assert any(math.isinf(high) for _, high in ratios)  # empty groups: a COUNT corner at 0
