"""Rendering: aligned tables with ±, and ⊥ with a note where a mechanism refused."""

from __future__ import annotations

from dpsql.accounting.cost import PrivacyCost
from dpsql.render import DEFAULT_REFUSAL, aligned, render_table
from dpsql.result import NoisyResult, ResultColumn


def result(rows: list[tuple[object, ...]], widths: list[tuple[float | None, ...]], infos: tuple[dict[str, object] | None, ...]) -> NoisyResult:
    columns = (ResultColumn("dept", "VARCHAR"), ResultColumn("median", "DOUBLE"))
    return NoisyResult("query", columns, rows, infos, widths, PrivacyCost(1))


def test_noisy_cells_show_their_interval() -> None:
    text = render_table(result([("eng", 10.0)], [(None, 2.5)], (None, {"mechanism": "laplace"})))
    assert "10 ± 2.5" in text and "± is a 95% interval" in text


def test_refused_cell_shows_bottom_and_the_mechanisms_sentence() -> None:
    reason = "MEDIAN(income) refused: the median is not stable on this data. Budget was spent."
    info = {"mechanism": "ptr", "refusal": reason}
    text = render_table(result([("eng", None), ("ops", 4.0)], [(None, None), (None, 1.0)], (None, info)))
    lines = text.splitlines()
    assert lines[2].split("|")[1].strip() == "⊥"
    assert lines[3].split("|")[1].strip() == "4 ± 1"
    assert lines[-1] == f"⊥ in median: {reason}"


def test_generic_refusal_note_and_plain_nulls() -> None:
    refused = render_table(result([("eng", None)], [(None, None)], (None, {"mechanism": "ptr", "refused": True})))
    assert refused.splitlines()[-1] == f"⊥ in median: {DEFAULT_REFUSAL}"
    plain = render_table(result([("eng", None)], [(None, None)], (None, {"mechanism": "laplace"})))
    assert "⊥" not in plain and "NULL" in plain
    released = render_table(result([("eng", 3.0)], [(None, 1.0)], (None, {"mechanism": "ptr", "refused": True})))
    assert "⊥" not in released, "no note when every cell was released"


def test_aligned_pads_and_right_aligns() -> None:
    assert aligned(["a", "bb"], [["xyz", "1"]], [False, True]) == ["a   | bb", "----+---", "xyz |  1"]


def test_a_value_inside_its_own_interval_gets_a_utility_note() -> None:
    info = {"mechanism": "laplace"}
    swamped = result([("a", 5), ("b", 400)], [(None, 270.0), (None, 270.0)], (None, info))
    text = render_table(swamped)
    assert "median: the 95% interval is wider than the value in 1 of 2 rows" in text
    assert "a larger epsilon (SET dpsql.epsilon), coarser groups or tighter policy bounds" in text
    pinned = result([("a", 65269.5)], [(None, 65269.5)], (None, info))  # AVG pinned at its interval
    assert "wider than the value in 1 of 1 row:" in render_table(pinned)
    clear = result([("a", 5000), ("b", 400)], [(None, 270.0), (None, 270.0)], (None, info))
    assert "wider than the value" not in render_table(clear)
