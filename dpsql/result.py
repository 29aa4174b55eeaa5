"""NoisyResult: what every front end renders. Rows, columns and per-cell noise information."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from dpsql.accounting.cost import PrivacyCost

StatementKind = Literal["query", "explain", "set", "public"]


@dataclass(frozen=True, slots=True)
class ResultColumn:
    """One output column: its name and engine type name (BIGINT, DOUBLE, VARCHAR, ...)."""

    name: str
    type_name: str


@dataclass(frozen=True, slots=True)
class NoisyResult:
    """An answer: rows, columns, noise information per column and 95% half-widths per cell.

    `noise_info` holds one dict per output column (None for group keys and exact values):
    `mechanism`, `scale`, `ci95`, `epsilon`, `delta`. Answers of the Median Mechanism layer
    (mechanism "median_mechanism") add `kind` ("easy": the candidates' median, checked by the
    sparse vector; "hard": counted from the data with fresh noise; "repeat": the answer released
    before), `hard_slots_left` and `mode`; their epsilon and delta are 0, the layer's
    reservation being charged once (the `cost` of the answer that made it).
    """

    kind: StatementKind
    columns: tuple[ResultColumn, ...]
    rows: list[tuple[Any, ...]]
    noise_info: tuple[dict[str, Any] | None, ...]
    cell_ci95: list[tuple[float | None, ...]]
    cost: PrivacyCost = field(default_factory=PrivacyCost.zero)
    message: str | None = None
