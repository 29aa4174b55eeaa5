"""NoisyResult: what every front end renders. Rows, columns and per-cell noise information."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dpsql.accounting.cost import PrivacyCost

StatementKind = Literal["query", "explain", "set", "public", "show", "probe"]


@dataclass(frozen=True, slots=True)
class ResultColumn:
    """One output column: its name and engine type name (BIGINT, DOUBLE, VARCHAR, ...)."""

    name: str
    type_name: str


# The keys of a NoiseInfo mapping, in display order; the first five are always present.
NOISE_KEYS = ("mechanism", "kind", "scale", "ci95", "epsilon", "delta", "bound", "rank_error95", "candidates", "threshold",
              "cap", "refusal", "refused", "rank_shift", "blocks", "hard_slots_left", "mode", "confidence")
_ALWAYS = frozenset(NOISE_KEYS[:1] + NOISE_KEYS[2:6])


@dataclass(frozen=True, slots=True, eq=False)
class NoiseInfo(Mapping[str, Any]):
    """How one output column's values were released (public only), read as a mapping.

    Always: `mechanism`, `scale` (noise scale in value units, or None; a tuple when several
    releases feed the column), `ci95` (95% half-width: one number, one per row, or None),
    `epsilon`, `delta`. Where they apply: `bound` (PTR-Laplace's proposed bound), `rank_error95`
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
class NoisyResult:
    """An answer: rows, columns, noise information per column and 95% half-widths per cell.

    `noise_info` holds one NoiseInfo per output column (None for group keys and exact values):
    `mechanism`, `scale`, `ci95`, `epsilon`, `delta`, and more where they apply. Answers of the Median Mechanism layer
    (mechanism "median_mechanism") add `kind` ("easy": the candidates' median, checked by the
    sparse vector; "hard": counted from the data with fresh noise; "repeat": the answer released
    before), `hard_slots_left` and `mode`; their epsilon and delta are 0, the layer's
    reservation being charged once (the `cost` of the answer that made it).
    """

    kind: StatementKind
    columns: tuple[ResultColumn, ...]
    rows: list[tuple[Any, ...]]
    noise_info: tuple[NoiseInfo | None, ...]
    cell_ci95: list[tuple[float | None, ...]]
    cost: PrivacyCost = field(default_factory=PrivacyCost.zero)
    message: str | None = None


CI_SUFFIX = "_ci95"


def noisy_flags(result: NoisyResult) -> list[bool]:
    """Which columns of an answer carry noise (a NoiseInfo)."""
    return [info is not None for info in result.noise_info] + [False] * (len(result.columns) - len(result.noise_info))


def with_ci_columns(result: NoisyResult) -> NoisyResult:
    """The answer with a `<col>_ci95` column (DOUBLE, the 95% half-width; NULL for a ⊥ cell) after
    each noisy column: post-processing of what was released, so any front end may show it."""
    flags = noisy_flags(result)
    if not any(flags):
        return result
    columns: list[ResultColumn] = []
    infos: list[NoiseInfo | None] = []
    for column, flag, info in zip(result.columns, flags, list(result.noise_info) + [None] * len(result.columns)):
        columns.append(column)
        infos.append(info)
        if flag:
            columns.append(ResultColumn(column.name + CI_SUFFIX, "DOUBLE"))
            infos.append(None)
    rows, widths = [], []
    for row, cells in zip(result.rows, result.cell_ci95):
        values: list[Any] = []
        spans: list[float | None] = []
        for index, (value, flag) in enumerate(zip(row, flags)):
            width = cells[index] if index < len(cells) else None
            values.append(value)
            spans.append(width)
            if flag:
                values.append(None if width is None or value is None else float(width))
                spans.append(None)
        rows.append(tuple(values))
        widths.append(tuple(spans))
    return dataclasses.replace(result, columns=tuple(columns), rows=rows, noise_info=tuple(infos), cell_ci95=widths)
