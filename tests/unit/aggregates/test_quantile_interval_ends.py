"""The exponential-mechanism quantile and IQR carry their interval's own ends (`Cell.low`,
`Cell.high`), so an interval that reached a column bound reads `[low, high]`, not a symmetric
`value ± half-width` that runs past the bound (or below 0)."""

from __future__ import annotations

from fractions import Fraction

from dpsql.aggregates.quantiles import IQREstimate, QuantileEstimate, fine_values
from dpsql.catalog.policy import Column
from dpsql.ir.plan import Cell
from dpsql.mechanisms.window_exponential import Bracketed

INCOME = Column("income", "int", lower=Fraction(0), upper=Fraction(500_000))
AMOUNT = Column("amount", "float", lower=Fraction(0), upper=Fraction(1000), precision=Fraction(1, 2))


def _quantile(column: Column) -> QuantileEstimate:
    return QuantileEstimate(0, fine_values(column), exact=True, smed=False)


def test_an_interval_cut_at_a_bound_keeps_its_ends() -> None:
    # Value 120,000; the width draw chose 390,000: the ends were cut at 0 and 500,000.
    cell = _quantile(INCOME).decode(Bracketed(120_000, 0, 500_000))
    assert (cell.value, cell.low, cell.high) == (120_000, 0.0, 500_000.0)
    assert cell.half_width == 380_000  # the symmetric half-width holding both ends (CI95)
    assert cell.interval() == (0.0, 500_000.0)  # what is displayed: [0, 500000], not 120000 ± 380000


def test_a_symmetric_interval_stays_symmetric() -> None:
    cell = _quantile(INCOME).decode(Bracketed(42_000, 41_000, 43_000))
    assert cell.interval() == (41_000.0, 43_000.0) and cell.half_width == 1000


def test_ends_on_a_grid_are_widened_by_the_rounding_slack_and_cut_at_the_bounds() -> None:
    values = fine_values(AMOUNT)
    grid = float(values.grid)  # type: ignore[arg-type]
    index = lambda x: int(Fraction(x) / values.grid)  # noqa: E731 - a grid index of a column value
    cell = _quantile(AMOUNT).decode(Bracketed(index(10), index(0), index(20)))
    assert cell.low == 0.0  # 0 - grid/2 cut at the lower bound
    assert cell.high == 20 + grid / 2
    assert cell.value - cell.half_width <= cell.low and cell.high <= cell.value + cell.half_width


def test_iqr_ends_are_widths_within_the_range() -> None:
    estimate = IQREstimate(0, fine_values(INCOME))
    cell = estimate.decode(Bracketed(20_000, 0, 500_000))
    assert (cell.low, cell.high) == (0.0, 500_000.0)
    assert Cell(cell.value, cell.half_width).interval() != cell.interval()  # ± would have read below 0
