"""NoisyResult -> aligned text with a `±` 95% interval on every noisy cell (CLI, REPL)."""

from __future__ import annotations

from typing import Any

from dpsql.result import NoisyResult


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


def render_table(result: NoisyResult) -> str:
    """Rows as an aligned table; numbers right-aligned."""
    if result.message and not result.columns:
        return result.message
    headers = [c.name for c in result.columns]
    cells = [[format_cell(v, w) for v, w in zip(row, widths)] for row, widths in zip(result.rows, result.cell_ci95)]
    sizes = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [c.type_name in ("BIGINT", "DOUBLE", "HUGEINT", "INTEGER", "DECIMAL") for c in result.columns]

    def line(parts: list[str]) -> str:
        return " | ".join(p.rjust(s) if n else p.ljust(s) for p, s, n in zip(parts, sizes, numeric)).rstrip()

    out = [line(headers), "-+-".join("-" * s for s in sizes)]
    out.extend(line(r) for r in cells)
    footer = f"({len(cells)} row{'s' if len(cells) != 1 else ''})"
    if result.kind == "query":
        footer += f"  cost: epsilon {float(result.cost.epsilon):.4g}, delta {float(result.cost.delta):.3g}; ± is a 95% interval"
    out.append(footer)
    return "\n".join(out)
