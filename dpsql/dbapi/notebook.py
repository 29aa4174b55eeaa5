"""Notebook helpers: a rich display of an answer (values with ±, cost, remaining budget) and a plot
of a grouped answer with its 95% intervals as error bars.

Both are post-processing of what was released (values, their public half-widths, the cost) and
of the analyst's own ledger: no data is read and nothing is charged. matplotlib is optional
(`pip install 'dpsql[plot]'`) and imported only by `plot`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpsql.accounting.cost import PrivacyCost
from dpsql.render import REFUSED, asymmetric, format_value, refusal, replay_text, shown
from dpsql.result import CI_HIGH_SUFFIX, CI_LOW_SUFFIX, CI_SUFFIX, CI_SUFFIXES, Interval, NoisyResult, noisy_flags

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MAX_HTML_ROWS = 200


def budget_line(cost: PrivacyCost | None, remaining: PrivacyCost | None, queries_left: int | None) -> str:
    """`cost: epsilon 0.1, delta 0; remaining budget: epsilon 9.9, delta 1e-05 (98 more queries like this fit)`."""
    parts = []
    if cost is not None:
        parts.append(f"cost: epsilon {float(cost.epsilon):.4g}, delta {float(cost.delta):.3g}")
    if remaining is not None:
        more = f" ({queries_left} more queries like this fit)" if queries_left is not None else ""
        parts.append(f"remaining budget: epsilon {float(remaining.epsilon):.4g}, delta {float(remaining.delta):.3g}{more}")
    return "; ".join(parts)


def html_table(result: NoisyResult, remaining: PrivacyCost | None = None, queries_left: int | None = None,
               round_values: bool = True) -> str:
    """An answer as an HTML table: each noisy cell `value ± half-width`, or `value [low, high]`
    where its interval is not symmetric (⊥ where a mechanism refused), values rounded to their
    interval's precision unless `round_values` is off, then the cost (or that it was replayed,
    free), the remaining budget and what the intervals mean."""
    if not result.columns:
        return f"<p>{html.escape(result.message or result.kind)}</p>"
    legend = "± and [low, high] are 95% intervals" if asymmetric(result) else "± is a 95% interval"
    result, intervals = shown(result, round_values)
    reasons = [refusal(info) for info in result.noise_info] + [None] * len(result.columns)
    head = "".join(f"<th>{html.escape(c.name)}</th>" for c in result.columns)
    body = []
    for row, texts in list(zip(result.rows, intervals))[:MAX_HTML_ROWS]:
        cells = []
        for index, value in enumerate(row):
            interval = texts[index] if index < len(texts) else None
            text = REFUSED if value is None and reasons[index] else \
                format_value(value) if interval is None else f"{format_value(value)} {interval}"
            align = ' style="text-align:right"' if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
            cells.append(f"<td{align}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = len(result.rows) - MAX_HTML_ROWS
    notes = [f"({len(result.rows)} row{'s' if len(result.rows) != 1 else ''}{f', first {MAX_HTML_ROWS} shown' if more > 0 else ''})"]
    if result.kind == "query" and result.replay is not None:
        notes.append("; ".join([replay_text(result), budget_line(None, remaining, queries_left), legend]))
    elif result.kind == "query":
        notes.append(budget_line(result.cost, remaining, queries_left) + f"; {legend}")
    elif result.message:
        notes.append(result.message)
    for index, (column, reason) in enumerate(zip(result.columns, reasons)):
        if reason and any(row[index] is None for row in result.rows):
            notes.append(f"{REFUSED} in {column.name}: {reason}")
    caption = "<br>".join(html.escape(n) for n in notes if n)
    return (f'<table class="dpsql-result"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
            f'<p style="font-size:smaller">{caption}</p>')


@dataclass(frozen=True, slots=True)
class _Table:
    """What a plot reads of an answer: names, rows, per-cell half-widths, which columns are noisy, the cost."""

    names: list[str]
    rows: list[tuple[Any, ...]]
    widths: list[tuple[float | None, ...]]
    noisy: list[bool]
    cost: PrivacyCost | None
    ends: list[tuple[Interval | None, ...]] | None = None  # each cell's (low, high), when known


def _interval_column(name: str, noisy: set[str]) -> bool:
    """Whether `name` is an interval column (`_ci95`, `_ci_low`, `_ci_high`) of a noisy column in `noisy`."""
    return any(name.endswith(suffix) and name[: -len(suffix)] in noisy for suffix in CI_SUFFIXES)


def _from_result(result: NoisyResult) -> _Table:
    flags = noisy_flags(result)
    names = [c.name for c in result.columns]
    noisy = {name for name, flag in zip(names, flags) if flag}
    keep = [i for i, name in enumerate(names) if flags[i] or not _interval_column(name, noisy)]
    return _Table([names[i] for i in keep], [tuple(r[i] for i in keep) for r in result.rows],
                  [tuple(w[i] if i < len(w) else None for i in keep) for w in result.cell_ci95], [flags[i] for i in keep],
                  result.cost if result.kind == "query" else None,
                  [tuple(result.interval(r, i) for i in keep) for r in range(len(result.rows))])


def _from_frame(frame: Any) -> _Table:
    names = [str(c) for c in frame.columns]
    rows = [tuple(None if _missing(v) else v for v in row) for row in frame.itertuples(index=False, name=None)]
    attrs = frame.attrs
    cost = PrivacyCost(attrs["epsilon"], attrs.get("delta", 0)) if "epsilon" in attrs else None
    infos, cells = attrs.get("noise_info"), attrs.get("ci95")
    lows, highs = attrs.get("ci_low"), attrs.get("ci_high")
    if isinstance(infos, list) and isinstance(cells, list) and len(infos) == len(names) and len(cells) == len(rows):
        ends = None  # fetchdf(): each cell's ends in attrs too (a frame from an older dpsql has ci95 only)
        if isinstance(lows, list) and isinstance(highs, list) and len(lows) == len(highs) == len(rows):
            ends = [tuple(None if lo is None or hi is None else (float(lo), float(hi)) for lo, hi in zip(low, high))
                    for low, high in zip(lows, highs)]
        return _Table(names, rows, [tuple(c) for c in cells], [i is not None for i in infos], cost, ends)
    # ci_columns (pd.read_sql over `dpsql://...?ci_columns=on` or the server): `<col>_ci95` after each
    # noisy column, then `<col>_ci_low` and `<col>_ci_high` (absent from an older server's answers).
    paired = {name: names.index(name + CI_SUFFIX) for name in names if name + CI_SUFFIX in names}
    keep = [i for i, name in enumerate(names) if not _interval_column(name, set(paired))]
    widths = [tuple(_float(row[paired[names[i]]]) if names[i] in paired else None for i in keep) for row in rows]
    sided = {name for name in paired if name + CI_LOW_SUFFIX in names and name + CI_HIGH_SUFFIX in names}
    pairs = [tuple(_ends(row, names, names[i]) if names[i] in sided else None for i in keep) for row in rows]
    return _Table([names[i] for i in keep], [tuple(row[i] for i in keep) for row in rows], widths,
                  [names[i] in paired for i in keep], cost, pairs if sided else None)


def _ends(row: tuple[Any, ...], names: list[str], name: str) -> Interval | None:
    low, high = _float(row[names.index(name + CI_LOW_SUFFIX)]), _float(row[names.index(name + CI_HIGH_SUFFIX)])
    return None if low is None or high is None else (low, high)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _float(value: Any) -> float | None:
    return None if _missing(value) else float(value)


def _table(source: Any) -> _Table:
    if isinstance(source, NoisyResult):
        return _from_result(source)
    result = getattr(source, "result", None)
    if isinstance(result, NoisyResult):  # a dpsql cursor
        return _from_result(result)
    if hasattr(source, "columns") and hasattr(source, "itertuples"):  # a pandas DataFrame
        return _from_frame(source)
    raise TypeError("plot() takes a dpsql cursor, a NoisyResult or a pandas DataFrame (fetchdf(), or read with ci_columns on)")


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def plot(source: Any, x: str | None = None, y: str | Sequence[str] | None = None, *, ax: Axes | None = None,  # noqa: C901 - one branch per accepted source and argument shape, each with its own message
         kind: str = "bar") -> Axes:
    """Draw a grouped answer with its 95% intervals as error bars, and a caption with its cost.

    `source`: a dpsql cursor after a query, its NoisyResult, or a DataFrame from `fetchdf()` or
    read with interval columns (`ci_columns`). `x`: the key column (default: the first column
    without noise; none: one bar per value column); `y`: the noisy column(s) to draw (default:
    every noisy numeric column). `kind`: "bar" or "line". A ⊥ cell is left out.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError("dpsql's plot needs matplotlib: pip install 'dpsql[plot]'") from error
    if kind not in ("bar", "line"):
        raise ValueError("kind must be 'bar' or 'line'")
    table = _table(source)
    if x is None:
        x = next((n for n, flag in zip(table.names, table.noisy) if not flag), None)
    wanted = [y] if isinstance(y, str) else list(y) if y is not None else [
        n for i, (n, flag) in enumerate(zip(table.names, table.noisy)) if flag and any(_numeric(r[i]) for r in table.rows)]
    for name in [*wanted, *([x] if x is not None else [])]:
        if name not in table.names:
            raise ValueError(f"no column {name!r} in the answer; columns: {', '.join(table.names)}")
    if not wanted:
        raise ValueError("the answer has no noisy numeric column to draw (name one with y=)")
    created = ax is None
    if ax is None:
        _, ax = plt.subplots()
    labels = [format_value(r[table.names.index(x)]) for r in table.rows] if x is not None else [""]
    rows = table.rows if x is not None else table.rows[:1]
    widths = table.widths if x is not None else table.widths[:1]
    ends = (table.ends if x is not None else table.ends[:1]) if table.ends is not None else None
    step = 0.8 / len(wanted)
    for offset, name in enumerate(wanted):
        index = table.names.index(name)
        values = [float(r[index]) if _numeric(r[index]) else math.nan for r in rows]
        errors: Any = [float(width) if (width := w[index]) is not None and _numeric(r[index]) else math.nan for r, w in zip(rows, widths)]
        if ends is not None:  # each bar's interval as computed: below and above may differ (a clamped AVG)
            pairs = [e[index] if e[index] is not None and _numeric(r[index]) else None for r, e in zip(rows, ends)]
            errors = [[v - p[0] if p is not None else math.nan for v, p in zip(values, pairs)],
                      [p[1] - v if p is not None else math.nan for v, p in zip(values, pairs)]]
        known = table.noisy[index]
        where = [p + (offset - (len(wanted) - 1) / 2) * step for p in range(len(rows))]
        if kind == "bar":
            ax.bar(where, values, step, yerr=errors if known else None, capsize=3, label=name)
        else:
            ax.errorbar(where, values, yerr=errors if known else None, marker="o", capsize=3, label=name)
    ax.set_xticks(range(len(rows)), labels if x is not None else [", ".join(wanted)])
    if sum(len(label) for label in labels) > 40:
        ax.tick_params(axis="x", labelrotation=45)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
    if x is not None:
        ax.set_xlabel(x)
    if len(wanted) > 1:
        ax.legend()
    noisy = any(table.noisy[table.names.index(n)] for n in wanted)
    caption = "error bars: 95% intervals" if noisy else "no intervals known for these values"
    if table.cost is not None:
        caption += f"; cost epsilon {float(table.cost.epsilon):.4g}, delta {float(table.cost.delta):.3g}"
    ax.set_title(f"dpsql: {caption}", loc="left", fontsize="small")
    if created:
        plt.tight_layout()
    return ax
