"""NoisyResult: what every front end renders. Rows, columns and per-cell noise information."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from dpsql.accounting.cost import PrivacyCost

StatementKind = Literal["query", "explain", "set", "public", "show", "probe"]


@dataclass(frozen=True, slots=True)
class ResultColumn:
    """One output column: its name and engine type name (BIGINT, DOUBLE, VARCHAR, ...)."""

    name: str
    type_name: str


# The keys of a NoiseInfo mapping, in display order; the first five are always present.
NOISE_KEYS = ("mechanism", "kind", "scale", "ci95", "epsilon", "delta", "ci_low", "ci_high", "bound", "rank_error95",
              "candidates", "threshold", "cap", "refusal", "refused", "rank_shift", "blocks", "hard_slots_left", "mode",
              "confidence")
_ALWAYS = frozenset(NOISE_KEYS[:1] + NOISE_KEYS[2:6])


@dataclass(frozen=True, slots=True, eq=False)
class NoiseInfo(Mapping[str, Any]):
    """How one output column's values were released (public only), read as a mapping.

    Always: `mechanism`, `scale` (noise scale in value units, or None; a tuple when several
    releases feed the column), `ci95` (95% half-width: one number, one per row, or None),
    `epsilon`, `delta`. Where they apply: `ci_low` and `ci_high` (the 95% interval's ends: one
    number for a single row, else one per row, None for a cell without one; they differ from
    value ∓ ci95 where the interval is not symmetric, e.g. an AVG clamped at a bound), `bound` (PTR-Laplace's proposed bound), `rank_error95`
    and `candidates` (exponential mechanism), `threshold`, `cap`, `rank_shift`, `blocks`
    (stability tests), `refusal` (the public ⊥ sentence) and `refused` (True/False, or one flag
    per row), the Median Mechanism layer's `kind`, `hard_slots_left` and `mode`, and MODE's
    `confidence` (the confidence that the released value is the mode, in the sense its mechanism
    states: one number, or one per row with None for ⊥). A key whose value is None (outside the
    first five) is absent.
    """

    mechanism: str
    scale: float | tuple[float, ...] | None
    ci95: float | tuple[float | None, ...] | None
    epsilon: float
    delta: float
    kind: str | None = None
    ci_low: float | tuple[float | None, ...] | None = None
    ci_high: float | tuple[float | None, ...] | None = None
    bound: float | None = None
    rank_error95: int | None = None
    candidates: int | None = None
    threshold: int | None = None
    cap: int | None = None
    refusal: str | None = None
    refused: bool | tuple[bool, ...] | None = None
    rank_shift: int | None = None
    blocks: int | None = None
    hard_slots_left: int | None = None
    mode: str | None = None
    confidence: float | tuple[float | None, ...] | None = None

    def __getitem__(self, key: str) -> Any:
        if key not in NOISE_KEYS or (key not in _ALWAYS and getattr(self, key) is None):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return (key for key in NOISE_KEYS if key in _ALWAYS or getattr(self, key) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"NoiseInfo({dict(self)!r})"

    def replace(self, **changes: Any) -> NoiseInfo:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class Replay:
    """An answer given again: when it was first released (unix seconds) and what that release was
    charged. The replay itself is charged nothing (docs/privacy-model.md, "Replayed answers")."""

    released_at: float
    cost: PrivacyCost


Interval = tuple[float, float]  # (low, high) of a 95% interval


@dataclass(frozen=True, slots=True)
class NoisyResult:
    """An answer: rows, columns, noise information per column and 95% half-widths per cell.

    `noise_info` holds one NoiseInfo per output column (None for group keys and exact values):
    `mechanism`, `scale`, `ci95`, `epsilon`, `delta`, and more where they apply. Answers of the Median Mechanism layer
    (mechanism "median_mechanism") add `kind` ("easy": the candidates' median, checked by the
    sparse vector; "hard": counted from the data with fresh noise; "repeat": the answer released
    before), `hard_slots_left` and `mode`; their epsilon and delta are 0, the layer's
    reservation being charged once (the `cost` of the answer that made it).

    `cell_bounds` (when given) holds per cell the 95% interval's (low, high) where it is not
    value ± half-width (an AVG clamped at its bound, a VARIANCE, a corner evaluation), else None;
    `interval()` reads either. `replay` is set when the answer is one released before and given
    again for free (then `cost` is zero and `replay.cost` what the first release was charged).
    """

    kind: StatementKind
    columns: tuple[ResultColumn, ...]
    rows: list[tuple[Any, ...]]
    noise_info: tuple[NoiseInfo | None, ...]
    cell_ci95: list[tuple[float | None, ...]]
    cost: PrivacyCost = field(default_factory=PrivacyCost.zero)
    message: str | None = None
    cell_bounds: list[tuple[Interval | None, ...]] | None = None
    replay: Replay | None = None

    def interval(self, row: int, column: int) -> Interval | None:
        """The 95% interval (low, high) of one cell, or None (an exact value, a ⊥, no interval)."""
        value = self.rows[row][column]
        widths = self.cell_ci95[row] if row < len(self.cell_ci95) else ()
        width = widths[column] if column < len(widths) else None
        if value is None or width is None:
            return None
        if self.cell_bounds is not None and row < len(self.cell_bounds):
            bounds = self.cell_bounds[row]
            if column < len(bounds) and bounds[column] is not None:
                return bounds[column]
        number = _number(value)
        if number is None:
            return None
        return number - float(width), number + float(width)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    return float(value)


SYMMETRY_TOLERANCE = 1e-6  # float rounding of the two sides, nothing more


def symmetric(value: Any, interval: Interval, tolerance: float = SYMMETRY_TOLERANCE) -> bool:
    """Whether `value ± half-width` states an interval exactly: its two sides are equal (up to
    float rounding). An interval clamped at a bound (an AVG of a column bounded below by 0, near
    0) or bent by a ratio (AVG's sum over a noisy count) is not: it is shown as [low, high]."""
    number = _number(value)
    if number is None:
        return False
    below, above = number - interval[0], interval[1] - number
    wider = max(below, above)
    return wider <= 0 or abs(above - below) <= tolerance * wider


def with_interval_ends(result: NoisyResult) -> NoisyResult:
    """The answer with `ci_low`/`ci_high` in each noisy column's NoiseInfo (post-processing of the
    released values and their intervals: no data, no budget)."""
    if not result.rows or not any(info is not None for info in result.noise_info):
        return result
    infos = list(result.noise_info)
    for column, info in enumerate(result.noise_info):
        if info is None:
            continue
        ends = [result.interval(row, column) for row in range(len(result.rows))]
        if all(end is None for end in ends):
            continue
        lows = tuple(None if end is None else end[0] for end in ends)
        highs = tuple(None if end is None else end[1] for end in ends)
        infos[column] = info.replace(ci_low=lows[0] if len(lows) == 1 else lows, ci_high=highs[0] if len(highs) == 1 else highs)
    return dataclasses.replace(result, noise_info=tuple(infos))


CI_SUFFIX = "_ci95"
# The interval's ends beside the half-width: what CI_LOW(agg) / CI_HIGH(agg) give, clipped to the
# possible range where value ∓ ci95 would leave it (asymmetric error bars in a BI tool).
CI_LOW_SUFFIX, CI_HIGH_SUFFIX = "_ci_low", "_ci_high"
CI_SUFFIXES = (CI_SUFFIX, CI_LOW_SUFFIX, CI_HIGH_SUFFIX)


def noisy_flags(result: NoisyResult) -> list[bool]:
    """Which columns of an answer carry noise (a NoiseInfo)."""
    return [info is not None for info in result.noise_info] + [False] * (len(result.columns) - len(result.noise_info))


def with_ci_columns(result: NoisyResult) -> NoisyResult:
    """The answer with `<col>_ci95` (DOUBLE, the 95% half-width), `<col>_ci_low` and `<col>_ci_high`
    (the interval's ends, clipped to the possible range: not always value ∓ ci95) after each noisy
    column, NULL for a cell without an interval (⊥): post-processing of what was released, so any
    front end may show it."""
    flags = noisy_flags(result)
    if not any(flags):
        return result
    columns: list[ResultColumn] = []
    infos: list[NoiseInfo | None] = []
    for column, flag, info in zip(result.columns, flags, list(result.noise_info) + [None] * len(result.columns)):
        columns.append(column)
        infos.append(info)
        if flag:
            columns += [ResultColumn(column.name + suffix, "DOUBLE") for suffix in CI_SUFFIXES]
            infos += [None] * len(CI_SUFFIXES)
    rows, widths, ends = [], [], []
    for number, (row, cells) in enumerate(zip(result.rows, result.cell_ci95)):
        values: list[Any] = []
        spans: list[float | None] = []
        bounds: list[Interval | None] = []
        given = result.cell_bounds[number] if result.cell_bounds is not None and number < len(result.cell_bounds) else ()
        for index, (value, flag) in enumerate(zip(row, flags)):
            width = cells[index] if index < len(cells) else None
            values.append(value)
            spans.append(width)
            bounds.append(given[index] if index < len(given) else None)
            if flag:
                interval = result.interval(number, index) if width is not None and value is not None else None
                values += [None if width is None or value is None else float(width), *(interval or (None, None))]
                spans += [None] * len(CI_SUFFIXES)
                bounds += [None] * len(CI_SUFFIXES)
        rows.append(tuple(values))
        widths.append(tuple(spans))
        ends.append(tuple(bounds))
    return dataclasses.replace(result, columns=tuple(columns), rows=rows, noise_info=tuple(infos), cell_ci95=widths,
                               cell_bounds=ends if result.cell_bounds is not None else None)
