"""Notebook helpers, headless (matplotlib's Agg backend): a grouped answer drawn with one error bar
per group and a caption with the cost; the rich HTML display with ± cells, cost and remaining
budget; interval columns in-process (ci_columns)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib", reason="the plot extra (pip install 'dpsql[plot]')")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from dpsql.dbapi import notebook
from dpsql.render import rounded  # noqa: E402

QUERY = "SELECT dept, COUNT(*) AS n, AVG(income) AS avg_income FROM people GROUP BY dept"


def error_bars(ax: object) -> list[tuple[float, float]]:
    """The (low, high) ends of every vertical error bar drawn on the axes."""
    bars = []
    for container in ax.containers:  # type: ignore[attr-defined]
        if type(container).__name__ == "ErrorbarContainer":
            for collection in container.lines[2]:
                bars += [(min(y for _, y in seg), max(y for _, y in seg)) for seg in collection.get_segments()]
    return bars


def check_one_bar_per_group(ax: object, values: list[float], widths: list[float],
                            ends: list[tuple[float, float]] | None = None) -> bool:
    """The check of the test: one error bar per group, spanning value ± its 95% half-width (or
    the interval's ends, when given: a count's interval is clipped at 0)."""
    bars = sorted(error_bars(ax))
    expected = sorted(ends if ends is not None else [(v - w, v + w) for v, w in zip(values, widths)])
    return len(bars) == len(values) and all(math.isclose(a, c) and math.isclose(b, d) for (a, b), (c, d) in zip(bars, expected))


def test_plot_draws_one_error_bar_per_group_with_the_cost(connect) -> None:
    con = connect(random_seed=2)
    cur = con.execute(QUERY)
    rows, widths = cur.result.rows, cur.cell_ci95
    ends = [(low[1], high[1]) for low, high in zip(cur.cell_ci_low, cur.cell_ci_high)]
    assert all(low == max(r[1] - w[1], 0) and high == r[1] + w[1] for (low, high), r, w in zip(ends, rows, widths))
    ax = cur.plot(y="n")
    assert check_one_bar_per_group(ax, [float(r[1]) for r in rows], [float(w[1]) for w in widths], ends)
    assert [t.get_text() for t in ax.get_xticklabels()] == [r[0] for r in rows]
    caption = ax.get_title(loc="left")
    assert "95% intervals" in caption and "epsilon 0.1" in caption
    plt.close(ax.figure)
    # Negative control: the same check catches a plot drawn without the intervals.
    _, broken = plt.subplots()
    broken.bar(range(len(rows)), [float(r[1]) for r in rows])
    assert not check_one_bar_per_group(broken, [float(r[1]) for r in rows], [float(w[1]) for w in widths], ends)
    plt.close(broken.figure)


def test_plot_reads_fetchdf_and_interval_columns(connect) -> None:
    con = connect(random_seed=3)
    frame = con.execute(QUERY).fetchdf()
    ax = notebook.plot(frame, y="avg_income", kind="line")
    assert len(error_bars(ax)) == len(frame)
    plt.close(ax.figure)
    con.execute("SET dpsql.ci_columns = on")
    frame = con.execute(QUERY).fetchdf()  # what pd.read_sql over `dpsql://...?ci_columns=on` gives too
    assert list(frame.columns) == ["dept", "n", "n_ci95", "n_ci_low", "n_ci_high",
                                   "avg_income", "avg_income_ci95", "avg_income_ci_low", "avg_income_ci_high"]
    bare = pd.DataFrame(frame.to_dict("list"))  # no attrs (as pd.read_sql gives): the _ci95 columns alone
    assert not bare.attrs
    ax = notebook.plot(bare)
    assert len(error_bars(ax)) == 2 * len(frame)  # both noisy columns, one bar per group each
    plt.close(ax.figure)


def test_rich_display_shows_intervals_cost_and_budget(connect) -> None:
    con = connect(random_seed=4)
    cur = con.execute(QUERY)
    page = cur._repr_html_()
    first = cur.result.rows[0]
    shown = rounded(cur.result).rows[0]  # displayed values are rounded to their interval's precision
    assert f">{shown[1]} ± " in page and "cost: epsilon 0.1, delta 0" in page
    assert "remaining budget: epsilon 9.9" in page and "95% interval" in page
    assert shown[1] != first[1] and f">{first[1]} ± " not in page  # the control: rounding did change it
    con.execute("SET dpsql.round = off")
    assert f">{first[1]} ± " in cur._repr_html_()  # exact values on request
    assert "<script" not in page
    assert "no statement executed yet" in con.cursor()._repr_html_()


def test_ci_columns_in_process(connect) -> None:
    con = connect(random_seed=5, ci_columns=True)
    cur = con.execute(QUERY)
    names = [d[0] for d in cur.description]
    assert names == ["dept", "n", "n_ci95", "n_ci_low", "n_ci_high",
                     "avg_income", "avg_income_ci95", "avg_income_ci_low", "avg_income_ci_high"]
    for number, (row, widths) in enumerate(zip(cur.fetchall(), cur.result.cell_ci95)):
        assert row[2] == widths[1] and row[6] == widths[5]
        assert (row[3], row[4]) == cur.result.interval(number, 1) and (row[7], row[8]) == cur.result.interval(number, 5)
        assert row[3] == max(row[1] - row[2], 0)  # a count's interval stops at 0
    assert con.execute("SHOW dpsql.ci_columns").fetchall() == [("on",)]
    con.execute("SET dpsql.ci_columns = off")
    assert [d[0] for d in con.execute(QUERY).description] == ["dept", "n", "avg_income"]
