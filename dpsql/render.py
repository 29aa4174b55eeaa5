"""NoisyResult -> aligned text with a `±` 95% interval on every noisy cell (CLI, REPL)."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Mapping
import math
from typing import Any

from dpsql.result import NoisyResult

NUMERIC_TYPES = frozenset({"BIGINT", "DOUBLE", "HUGEINT", "INTEGER", "DECIMAL"})
REFUSED = "⊥"
# Said of a cell a mechanism refused to release (PTR, A_samp). Public words only: never data.
DEFAULT_REFUSAL = "not released: the answer was not stable enough on this data; the budget was still spent"


def format_value(value: Any) -> str:
    """A cell value as text."""
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e15 else f"{value:.6e}"
    return str(value)


def format_cell(value: Any, half_width: float | None) -> str:
    """A cell with its 95% interval."""
    text = format_value(value)
    if half_width is None or value is None:
        return text
    return f"{text} ± {format_value(float(half_width))}"


def format_confidence(confidence: float) -> str:
    """A MODE release's confidence as a percentage, rounded down (never overstated): `95.3%`, `> 99.9%`."""
    if confidence >= 0.999:
        return "> 99.9%"
    return f"{math.floor(confidence * 1000) / 10:.1f}%"


def confidences(info: Mapping[str, Any] | None, rows: int) -> list[float | None]:
    """Per row, the confidence a MODE column's release states (None: no MODE, or ⊥)."""
    value = info.get("confidence") if info else None
    if value is None:
        return [None] * rows
    if isinstance(value, tuple):
        return list(value)
    return [float(value)] * rows


def refusal(info: Mapping[str, Any] | None) -> str | None:
    """The public reason a column's cells may be ⊥, when its mechanism says it can refuse.

    A mechanism marks this in the column's noise_info: `refusal` holds its (data-free) sentence,
    or `refused` is true for the generic one. A None cell of such a column is a ⊥, not a NULL.
    """
    if not info:
        return None
    reason = info.get("refusal")
    if isinstance(reason, str) and reason:
        return reason
    return DEFAULT_REFUSAL if info.get("refused") else None


def aligned(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None) -> list[str]:
    """Text rows under their headers, columns padded to one width; `right` columns right-aligned."""
    sizes = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    flags = list(right) if right is not None else [False] * len(headers)

    def line(parts: Sequence[str]) -> str:
        return " | ".join(p.rjust(s) if r else p.ljust(s) for p, s, r in zip(parts, sizes, flags)).rstrip()

    return [line(headers), "-+-".join("-" * s for s in sizes), *(line(r) for r in rows)]


def render_table(result: NoisyResult) -> str:
    """Rows as an aligned table; numbers right-aligned; ⊥ (with a note) where a mechanism refused."""
    if result.message and not result.columns:
        return result.message
    reasons = [refusal(info) for info in result.noise_info] + [None] * (len(result.columns) - len(result.noise_info))
    sure = list(zip(*[confidences(info, len(result.rows)) for info in result.noise_info])) or [()] * len(result.rows)
    cells = [
        [REFUSED if v is None and reason else format_cell(v, w) for v, w, reason in zip(row, widths, reasons)]
        for row, widths in zip(result.rows, result.cell_ci95)
    ]
    for row_cells, row_sure in zip(cells, sure):  # MODE: the confidence that the value is the mode
        for i, confidence in enumerate(row_sure):
            if confidence is not None and i < len(row_cells):
                row_cells[i] += f" (mode with {format_confidence(confidence)} confidence)"
    out = aligned([c.name for c in result.columns], cells, [c.type_name in NUMERIC_TYPES for c in result.columns])
    footer = f"({len(cells)} row{'s' if len(cells) != 1 else ''})"
    if result.kind == "query":
        footer += f"  cost: epsilon {float(result.cost.epsilon):.4g}, delta {float(result.cost.delta):.3g}; ± is a 95% interval"
    out.append(footer)
    for i, (column, reason) in enumerate(zip(result.columns, reasons)):
        if reason and any(row[i] is None for row in result.rows):
            out.append(f"{REFUSED} in {column.name}: {reason}")
    out.extend(utility_notes(result))
    if result.kind == "probe" and result.message:  # a column probe: say why there are no rows
        out.append(result.message)
    layer = next((info for info in result.noise_info if info and info.get("kind")), None)
    if layer is not None:
        out.append(f"median mechanism: {LAYER_KINDS.get(layer['kind'], layer['kind'])}; "
                   f"{layer.get('hard_slots_left')} hard slot(s) left")
    return "\n".join(out)


LAYER_KINDS = {
    "easy": "easy answer (the learned model's answer, checked by the sparse vector; no cost)",
    "measured": "post-processing of the layer's noisy histogram or marginals (no data read, no cost)",
    "hard": "hard answer (counted from the data with fresh noise; no cost beyond the reservation)",
    "repeat": "repeat (the answer released before; no data read)",
}


def utility_notes(result: NoisyResult) -> list[str]:
    """Where a released value is smaller than its own 95% half-width, say so and what would help.

    Post-processing of what was released (values and their intervals): no data, no budget.
    """
    notes = []
    for index, column in enumerate(result.columns):
        info = result.noise_info[index] if index < len(result.noise_info) else None
        if info is None:
            continue
        wide = total = 0
        for row, widths in zip(result.rows, result.cell_ci95):
            value, width = row[index], widths[index] if index < len(widths) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or width is None:
                continue
            total += 1
            wide += 0 < float(width) and abs(float(value)) <= float(width)  # the interval reaches zero
        if wide:
            notes.append(f"{column.name}: the 95% interval is wider than the value in {wide} of {total} row"
                         f"{'s' if total != 1 else ''}: the noise dominates there; a larger epsilon "
                         "(SET dpsql.epsilon), coarser groups or tighter policy bounds would help")
    return notes
