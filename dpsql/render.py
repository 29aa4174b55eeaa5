"""NoisyResult -> aligned text with a 95% interval on every noisy cell (CLI, REPL), and released
values rounded to the precision their interval supports (every door that shows them).

An interval is printed `value ± half-width` when it is symmetric, and `value [low, high]` when it
is not (an AVG clamped at its bound: `± 52797.67` around 52797.67 would hide that it is [0, upper]).

Rounding (`rounded`) is presentation only, after the release: what was charged, the noise and
the kept answer (replay) are unchanged. A value is rounded to two significant digits of its 95%
half-width (52797.6712 ± 3456 shows as 52800 ± 3500; a count 67 ± 18 stays 67), the half-width
up and the interval's ends outward, so the interval shown still holds the one computed; an
integer is never given decimals, and a value without an interval is left as it is.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from dpsql.result import Interval, NoisyResult, symmetric

# Shown as ± (the wider side, which is the cell's half-width) when the two sides differ by at
# most this share of the wider one: the ± then holds the interval and overstates its narrow side
# by at most 10%; `[low, high]` is kept for what ± would misstate (a clipped or bent interval).
DISPLAY_SYMMETRY = 0.1


def plus_minus(value: Any, interval: Interval) -> bool:
    """Whether `value ± half-width` shows an interval without misstating it: nearly symmetric
    (DISPLAY_SYMMETRY), and ± crosses 0 only where the interval does (a COUNT or AVG clipped at 0
    stays `[0, high]`, never `± w` that reads as possibly negative)."""
    if not symmetric(value, interval, DISPLAY_SYMMETRY):
        return False
    low, high = interval
    wider = max(float(value) - low, high - float(value))
    return (float(value) - wider < 0) == (low < 0) and (float(value) + wider > 0) == (high > 0)

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


def format_cell(value: Any, half_width: float | None, interval: Interval | None = None) -> str:
    """A cell with its 95% interval: `± half-width`, or `[low, high]` when not symmetric."""
    text = format_value(value)
    if half_width is None or value is None:
        return text
    if interval is not None and not plus_minus(value, interval):
        return f"{text} {format_interval(interval)}"
    return f"{text} ± {format_value(float(half_width))}"


def format_interval(interval: Interval) -> str:
    """`[low, high]`."""
    return f"[{format_value(float(interval[0]))}, {format_value(float(interval[1]))}]"


# --- rounding to the interval's precision --------------------------------------------------------

def precision(half_width: float) -> int | None:
    """The decimal exponent a value with this 95% half-width is rounded to (two significant
    digits of the half-width); None for no usable half-width."""
    if not isinstance(half_width, (int, float)) or not math.isfinite(half_width) or half_width <= 0:
        return None
    return math.floor(math.log10(half_width)) - 1


def round_to(value: Any, exponent: int) -> Any:
    """A number rounded to a multiple of 10**exponent; an int keeps its type (no decimals)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if exponent <= 0 else int(round(value, -exponent))
    if isinstance(value, float):
        if not math.isfinite(value):
            return value
        return round(value, -exponent)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return value
        return value.quantize(Decimal(1).scaleb(exponent)) if exponent <= 0 else Decimal(int(round(value, -exponent)))
    return value


def _outward(number: float, exponent: int, up: bool) -> float:
    unit = 10.0 ** exponent
    steps = math.ceil(number / unit) if up else math.floor(number / unit)
    return round(steps * unit, max(0, -exponent))


def shown(result: NoisyResult, round_values: bool = True) -> tuple[NoisyResult, list[list[str | None]]]:
    """The answer as shown (values rounded to their interval's precision when `round_values`) and
    each cell's interval text: `± half-width`, `[low, high]` where the computed interval is not
    symmetric (decided before rounding, which could make a clamped interval look symmetric), or
    None (an exact value, a ⊥, no interval)."""
    flags = [[(ends := result.interval(r, c)) is not None and not plus_minus(value, ends) for c, value in enumerate(row)]
             for r, row in enumerate(result.rows)]
    out = rounded(result) if round_values else result
    texts: list[list[str | None]] = []
    for r, row in enumerate(out.rows):
        line: list[str | None] = []
        for c in range(len(row)):
            ends = out.interval(r, c)
            widths = out.cell_ci95[r] if r < len(out.cell_ci95) else ()
            width = widths[c] if c < len(widths) else None
            if ends is None or width is None:
                line.append(None)
            else:
                line.append(format_interval(ends) if flags[r][c] else f"± {format_value(float(width))}")
        texts.append(line)
    return out, texts


def rounded(result: NoisyResult) -> NoisyResult:
    """The answer with each noisy value rounded to its interval's precision, the half-width up
    and the interval's ends outward (module docstring); nothing else changes."""
    if not result.rows or not any(info is not None for info in result.noise_info):
        return result
    rows, widths, bounds = [], [], []
    for r, row in enumerate(result.rows):
        values, spans, ends = list(row), list(result.cell_ci95[r]) if r < len(result.cell_ci95) else [], []
        given = result.cell_bounds[r] if result.cell_bounds is not None and r < len(result.cell_bounds) else ()
        ends = list(given) + [None] * (len(row) - len(given))
        for c, value in enumerate(row):
            interval = result.interval(r, c) if c < len(spans) else None
            if interval is None or isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
                continue
            number = float(value)
            half = max(interval[1] - number, number - interval[0])
            exponent = precision(half)
            if exponent is None:
                continue
            shown = round_to(value, exponent)
            shift = abs(float(shown) - number)
            values[c] = shown
            # The interval shown holds the computed one: widened by the rounding of the value.
            spans[c] = _outward(half + shift, exponent, up=True) if not isinstance(value, int) or exponent > 0 else \
                float(math.ceil(half + shift))
            ends[c] = (_outward(interval[0], exponent, up=False), _outward(interval[1], exponent, up=True)) \
                if not plus_minus(value, interval) else None
        rows.append(tuple(values))
        widths.append(tuple(spans))
        bounds.append(tuple(ends))
    return dataclasses.replace(result, rows=rows, cell_ci95=widths, cell_bounds=bounds)


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


def render_table(result: NoisyResult, round_values: bool = True) -> str:
    """Rows as an aligned table; numbers right-aligned; ⊥ (with a note) where a mechanism refused;
    noisy values rounded to their interval's precision unless `round_values` is off (SET dpsql.round)."""
    if result.message and not result.columns:
        return result.message
    legend = "± and [low, high] are 95% intervals" if asymmetric(result) else "± is a 95% interval"
    exact = result
    result, intervals = shown(result, round_values)
    reasons = [refusal(info) for info in result.noise_info] + [None] * (len(result.columns) - len(result.noise_info))
    sure = list(zip(*[confidences(info, len(result.rows)) for info in result.noise_info])) or [()] * len(result.rows)
    cells = [
        [REFUSED if v is None and reason else format_value(v) if text is None else f"{format_value(v)} {text}"
         for v, text, reason in zip(row, texts, reasons)]
        for row, texts in zip(result.rows, intervals)
    ]
    for row_cells, row_sure in zip(cells, sure):  # MODE: the confidence that the value is the mode
        for i, confidence in enumerate(row_sure):
            if confidence is not None and i < len(row_cells):
                row_cells[i] += f" (mode with {format_confidence(confidence)} confidence)"
    out = aligned([c.name for c in result.columns], cells, [c.type_name in NUMERIC_TYPES for c in result.columns])
    footer = f"({len(cells)} row{'s' if len(cells) != 1 else ''})"
    if result.kind == "query" and result.replay is not None:
        footer += f"  {replay_text(result)}; {legend}"
    elif result.kind == "query":
        footer += f"  cost: epsilon {float(result.cost.epsilon):.4g}, delta {float(result.cost.delta):.3g}; {legend}"
    out.append(footer)
    for i, (column, reason) in enumerate(zip(result.columns, reasons)):
        if reason and any(row[i] is None for row in result.rows):
            out.append(f"{REFUSED} in {column.name}: {reason}")
    out.extend(utility_notes(exact))
    if result.kind == "probe" and result.message:  # a column probe: say why there are no rows
        out.append(result.message)
    layer = next((info for info in result.noise_info if info and info.get("kind")), None)
    if layer is not None:
        out.append(f"median mechanism: {LAYER_KINDS.get(layer['kind'], layer['kind'])}; "
                   f"{layer.get('hard_slots_left')} hard slot(s) left")
    return "\n".join(out)


def asymmetric(result: NoisyResult, column: int | None = None) -> bool:
    """Whether some cell (of one column, or of any) has an interval that ± would misstate."""
    for r, row in enumerate(result.rows):
        for c, value in enumerate(row):
            if column is not None and c != column:
                continue
            interval = result.interval(r, c)
            if interval is not None and not plus_minus(value, interval):
                return True
    return False


def replay_text(result: NoisyResult) -> str:
    """`replayed: the answer released at <UTC time> (charged epsilon e, delta d then); no cost now`."""
    replay = result.replay
    assert replay is not None
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(replay.released_at))
    return (f"replayed: the answer released to you at {when} (charged epsilon {float(replay.cost.epsilon):.4g}, "
            f"delta {float(replay.cost.delta):.3g} then); no cost now")


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
            wide += float(width) > 0 and abs(float(value)) <= float(width)  # the interval reaches zero
        if wide:
            notes.append(f"{column.name}: the 95% interval is wider than the value in {wide} of {total} row"
                         f"{'s' if total != 1 else ''}: the noise dominates there; a larger epsilon "
                         "(SET dpsql.epsilon), coarser groups or tighter policy bounds would help")
    return notes
