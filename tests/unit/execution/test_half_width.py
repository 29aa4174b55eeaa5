"""intervals.half_width over mixed number types: a DECIMAL output (`6.8 * SUM(1)`, DuckDB's type
for a decimal literal times an integer) with float interval ends."""

from __future__ import annotations

from decimal import Decimal

from dpsql.execution.intervals import half_width


def test_decimal_value_with_float_ends() -> None:
    assert half_width(Decimal("10.5"), 8.0, 14.5) == 4.0


def test_not_a_number_has_no_half_width() -> None:  # control: text or a flag gets none
    assert half_width("x", 1.0, 2.0) is None and half_width(True, 0.0, 1.0) is None
