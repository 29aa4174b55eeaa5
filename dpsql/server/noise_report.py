"""What a wire client learns about an answer's noise: a NoticeResponse text and optional interval
columns (`_ci95`, `_ci_low`, `_ci_high`).

Everything here is post-processing of what was released (values, their 95% half-widths, the
mechanism's public ⊥ sentence) and of the analyst's own ledger (cost, remaining budget): no data
is read, nothing is charged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpsql.accounting.cost import PrivacyCost
from dpsql.execution.charge import more_text
from dpsql.render import REFUSED, confidences, format_confidence, format_value, refusal, replay_text, shown, utility_notes
from dpsql.result import CI_SUFFIX, CI_SUFFIXES, NoisyResult, ResultColumn, noisy_flags  # noqa: F401 - re-exported
from dpsql.result import with_ci_columns as result_with_ci_columns


def budget_text(cost: PrivacyCost) -> str:
    """`epsilon 0.1, delta 0` (a cost or budget as short text)."""
    return f"epsilon {float(cost.epsilon):.6g}, delta {float(cost.delta):.3g}"


def _interval(widths: Sequence[float]) -> str:
    low, high = min(widths), max(widths)
    if low == high:
        return f"± {format_value(float(low))}"
    return f"± {format_value(float(low))} to {format_value(float(high))}"


def notice_text(result: NoisyResult, remaining: PrivacyCost, queries_left: int | None = None, round_values: bool = True) -> str | None:
    """The notice sent after a private answer: each noisy column's 95% interval (± half-width, or
    [low, high] where it is not symmetric; rounded like the values when `round_values`), the cost
    (or that the answer was replayed, free), the remaining budget, and why a ⊥ cell was not
    released. None for anything but a private query."""
    if result.kind != "query":
        return None
    exact = result
    result, texts = shown(result, round_values)
    intervals, reasons, modes = [], [], []
    for index, (column, info) in enumerate(zip(result.columns, result.noise_info)):
        if info is None:
            continue
        widths = [float(w) for row in result.cell_ci95 if (w := row[index]) is not None]
        mechanism = info.get("mechanism", "")
        bent = [text for line in texts if (text := line[index]) is not None and text.startswith("[")]
        even = [float(w) for row, line in zip(result.cell_ci95, texts)
                if (w := row[index]) is not None and (text := line[index]) is not None and not text.startswith("[")]
        if bent and len(widths) == 1:
            intervals.append(f"{column.name} {bent[0]} ({mechanism})")
        elif bent:  # ± would misstate these rows (a clamped count's [0, high]): no ± for them
            rows = len(widths)
            symmetric = f"{_interval(even)} in {len(even)} of {rows} rows, " if even else ""
            intervals.append(f"{column.name} {symmetric}[low, high] in {len(bent)} of {rows} rows "
                             f"(per row in dpsql.last_query) ({mechanism})")
        elif widths:
            intervals.append(f"{column.name} {_interval(widths)} ({mechanism})")
        elif info.get("rank_error95") is not None:
            # The exponential mechanism's error is known in ranks only (a value interval would need
            # the data's density): say so rather than show nothing.
            intervals.append(f"{column.name} within ± {format_value(float(info['rank_error95']))} ranks ({mechanism})")
        sure = sorted({c for c in confidences(info, len(result.rows)) if c is not None})
        if sure:  # MODE: the confidence (lowest to highest over rows) that the released value is the mode
            low, high = format_confidence(sure[0]), format_confidence(sure[-1])
            modes.append(f"{column.name} mode with {low} confidence" if low == high
                         else f"{column.name} mode with {low} to {high} confidence")
        reason = refusal(info)
        if reason and any(row[index] is None for row in result.rows):
            reasons.append(f"{REFUSED} in {column.name}: {reason}")
    lines = []
    if intervals:
        lines.append("dpsql: 95% intervals: " + "; ".join(intervals))
    if modes:
        lines.append("dpsql: " + "; ".join(modes) + f" ({info_mechanisms(result)})")
    spent = f"{replay_text(result)}" if result.replay is not None else f"cost {budget_text(result.cost)}"
    lines.append(f"dpsql: {spent}; remaining budget {budget_text(remaining)}"
                 + (f"; {more_text(queries_left)} more queries like this fit" if queries_left is not None else ""))
    lines.extend(reasons)
    lines.extend(f"dpsql: {note}" for note in utility_notes(exact))
    return "\n".join(lines)


def info_mechanisms(result: NoisyResult) -> str:
    """The mechanisms of an answer's MODE columns, for the notice."""
    return ", ".join(sorted({str(info["mechanism"]) for info in result.noise_info if info is not None and info.get("confidence") is not None}))


def ci_column_names(columns: Sequence[str], noisy: Sequence[bool]) -> list[tuple[str, bool]]:
    """Output names with `<col>_ci95`, `<col>_ci_low` and `<col>_ci_high` after each noisy column;
    each with whether it is an interval column."""
    names: list[tuple[str, bool]] = []
    for name, flag in zip(columns, list(noisy) + [False] * (len(columns) - len(noisy))):
        names.append((name, False))
        if flag:
            names += [(name + suffix, True) for suffix in CI_SUFFIXES]
    return names


def with_ci_columns(result: NoisyResult) -> tuple[tuple[ResultColumn, ...], list[tuple[Any, ...]]]:
    """The answer's columns and rows with `<col>_ci95` (DOUBLE, the 95% half-width), `<col>_ci_low`
    and `<col>_ci_high` (its ends; NULL for a ⊥ cell) after each noisy column (dpsql.result.with_ci_columns)."""
    expanded = result_with_ci_columns(result)
    return expanded.columns, expanded.rows
