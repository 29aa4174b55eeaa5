"""The bottom toolbar: who is charged, what remains, and what the last query cost."""

from __future__ import annotations

from dpsql.accounting.cost import PrivacyCost
from dpsql.execution.charge import more_text
from dpsql.repl.backslash import number


def toolbar_text(analyst: str, remaining: PrivacyCost, total: PrivacyCost, last_cost: PrivacyCost | None,
                 timing: bool = False, queries_left: int | None = None) -> str:
    r"""One line of public facts for the bottom of the screen.

    Example:
        >>> toolbar_text("ann", PrivacyCost(9), PrivacyCost(10), PrivacyCost(1))
        ' analyst ann | remaining epsilon 9 of 10, delta 0 of 0 | last query epsilon 1, delta 0 | \\help  \\q '
    """
    parts = [
        f" analyst {analyst}",
        f"remaining epsilon {number(remaining.epsilon)} of {number(total.epsilon)}, "
        f"delta {number(remaining.delta)} of {number(total.delta)}",
    ]
    if last_cost is not None:
        parts.append(f"last query epsilon {number(last_cost.epsilon)}, delta {number(last_cost.delta)}"
                     + (f", {more_text(queries_left)} more like it fit" if queries_left is not None else ""))
    if timing:
        parts.append("timing on")
    parts.append("\\help  \\q ")
    return " | ".join(parts)
