"""Released values rounded to the precision their interval supports (render.rounded), and
asymmetric intervals shown as [low, high] (render.shown).

Hypothesis: the interval shown after rounding always holds the interval computed (rounding is
presentation: it may widen what is shown, never narrow it), and a value keeps two significant
digits of its half-width. The negative control is a naive rounding (value and half-width rounded
to nearest, the shift of the value ignored): the same containment check catches it on the same
fixed-seed cases.
"""

from __future__ import annotations

import math
import random

import pytest

from dpsql.accounting.cost import PrivacyCost
from dpsql.render import precision, render_table, round_to, rounded, shown
from dpsql.result import NoisyResult, ResultColumn

INFO = {"mechanism": "laplace"}


def _result(value: float | int, width: float, bounds: tuple[float, float] | None = None) -> NoisyResult:
    kind = "BIGINT" if isinstance(value, int) else "DOUBLE"
    return NoisyResult("query", (ResultColumn("x", kind),), [(value,)], (INFO,), [(width,)], PrivacyCost(1),  # type: ignore[arg-type]
                       cell_bounds=[(bounds,)])


def _holds(shown_result: NoisyResult, low: float, high: float) -> bool:
    ends = shown_result.interval(0, 0)
    assert ends is not None
    return ends[0] <= low + 1e-9 * max(1.0, abs(low)) and ends[1] >= high - 1e-9 * max(1.0, abs(high))


def _naive(result: NoisyResult) -> NoisyResult:
    """The negative control: value and half-width rounded to nearest, the value's shift ignored."""
    value, width = result.rows[0][0], result.cell_ci95[0][0]
    exponent = precision(width)
    assert exponent is not None and width is not None
    return NoisyResult("query", result.columns, [(round_to(value, exponent),)], result.noise_info,
                       [(round(width, -exponent),)], result.cost, cell_bounds=[(None,)])


def _cases() -> list[tuple[float, float]]:
    rng = random.Random(20261128)
    return [(rng.uniform(-1e6, 1e6), 10 ** rng.uniform(-3, 5)) for _ in range(500)]


def test_the_interval_shown_holds_the_computed_one() -> None:
    for value, width in _cases():
        result = _result(value, width)
        assert _holds(rounded(result), value - width, value + width), (value, width)


def test_negative_control_naive_rounding_is_caught() -> None:
    failures = sum(not _holds(_naive(_result(value, width)), value - width, value + width) for value, width in _cases())
    assert failures > 100  # a rounding that forgets the value's shift narrows the interval, and is caught


def test_two_significant_digits_of_the_half_width() -> None:
    out = rounded(_result(52797.6712, 3456.0))
    assert out.rows == [(52800.0,)] and out.cell_ci95 == [(3500.0,)]  # 52797.6712 ± 3456
    assert rounded(_result(67, 18.0)).rows == [(67,)]  # a count keeps its integer; 18 has no decimals to drop
    assert isinstance(rounded(_result(1204, 270.0)).rows[0][0], int)
    assert rounded(_result(1204, 270.0)).rows == [(1200,)]


def test_clamped_interval_is_shown_as_low_high() -> None:
    result = _result(52797.67, 447202.33, (0.0, 500000.0))  # an AVG clamped to its bounds [0, 500000]
    text = render_table(result, round_values=False)
    assert "±" not in text.splitlines()[2] and "52797.7 [0, 500000]" in text
    _, texts = shown(result, round_values=True)
    assert texts[0][0] is not None and texts[0][0].startswith("[0, ")
    symmetric_text = render_table(_result(10.0, 2.5), round_values=False)
    assert "10 ± 2.5" in symmetric_text and "[" not in symmetric_text.splitlines()[2]


@pytest.mark.parametrize("width", [0.0, math.inf, math.nan])
def test_no_usable_half_width_leaves_the_value(width: float) -> None:
    assert rounded(_result(3.14159, width)).rows == [(3.14159,)]
