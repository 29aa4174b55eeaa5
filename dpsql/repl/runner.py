"""Run one item (a statement or a backslash command) against the Session and say what to print.

The same runner serves the prompt and scripts (`dpsql < file.sql`, `-c`). The only decision it
makes is a front-end one: whether to ask before a statement that would spend a large share of
the remaining epsilon. The cost it compares comes from `Session.cost_of` (pure, free); the
Session alone charges, and it charges exactly what it would have charged without the question.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction
from typing import TextIO

from dpsql import errors
from dpsql.accounting.cost import PrivacyCost
from dpsql.render import render_table
from dpsql.repl.backslash import Output, ReplState, number, run_command
from dpsql.repl.script import is_command, split_script
from dpsql.result import NoisyResult, with_ci_columns
from dpsql.session import Session

Confirm = Callable[[str], bool]


def needs_confirmation(cost: PrivacyCost, remaining: PrivacyCost, share: float) -> bool:
    """Whether a statement spends more than `share` of the remaining epsilon (and could run at all).

    Example:
        >>> needs_confirmation(PrivacyCost(3), PrivacyCost(10), 0.25), needs_confirmation(PrivacyCost(2), PrivacyCost(10), 0.25)
        (True, False)
    """
    if cost.epsilon <= 0 or not cost.fits_in(remaining):
        return False  # free, or refused by the Session anyway (with its own message)
    return cost.epsilon > Fraction(repr(float(share))) * remaining.epsilon


def confirmation_question(cost: PrivacyCost, remaining: PrivacyCost) -> str:
    """The question asked before an expensive statement."""
    return (f"This query spends epsilon {number(cost.epsilon)}, delta {number(cost.delta)} of the remaining "
            f"epsilon {number(remaining.epsilon)}, delta {number(remaining.delta)}. Run it? [y/N] ")


class Runner:
    """Runs statements and commands for one front end; `confirm` is None when nobody can answer."""

    def __init__(self, session: Session, state: ReplState | None = None, *, confirm: Confirm | None = None,
                 show_budget: bool = False, clock: Callable[[], float] = time.perf_counter) -> None:
        self.session = session
        self.state = state if state is not None else ReplState()
        self.confirm = confirm
        self.show_budget = show_budget
        self.clock = clock

    def run(self, item: str) -> Output:
        """Run one statement or backslash command."""
        if is_command(item):
            return run_command(item, self.session, self.state)
        if self.confirm is not None and not self._confirmed(item):
            return Output("Not run: nothing was charged.")
        start = self.clock()
        try:
            result = self.session.execute(item)
        except errors.Error as error:
            return Output(error=f"ERROR: {error}", ok=False)
        elapsed = self.clock() - start
        if result.kind in ("query", "public"):
            self.state.last_cost = result.cost
        return Output(self._text(result, elapsed))

    def _confirmed(self, sql: str) -> bool:
        assert self.confirm is not None
        try:
            cost = self.session.cost_of(sql)
        except errors.Error:
            return True  # execute reports the same refusal, with its caret
        remaining = self.session.remaining
        if not needs_confirmation(cost, remaining, self.state.confirm_share):
            return True
        return self.confirm(confirmation_question(cost, remaining))

    def _text(self, result: NoisyResult, elapsed: float) -> str:
        shown = with_ci_columns(result) if self.session.ci_columns and result.kind == "query" else result  # SET dpsql.ci_columns = on
        lines = [render_table(shown, self.session.round is not False)]  # rounded unless SET dpsql.round = off
        if self.show_budget and result.kind == "query":
            remaining = self.session.remaining
            lines.append(f"budget remaining: epsilon {float(remaining.epsilon):.4g}, delta {float(remaining.delta):.3g}")
        if self.state.timing:
            lines.append(f"Time: {elapsed * 1000:.1f} ms")
        return "\n".join(lines)


def run_script(session: Session, text: str, out: TextIO, err: TextIO) -> int:
    """Run every statement and command of a script; 1 when any was refused or failed, else 0."""
    runner = Runner(session, show_budget=True)
    ok = True
    for item in split_script(text):
        output = runner.run(item)
        emit(output, out, err)
        ok = ok and output.ok
        if output.quit:
            break
    return 0 if ok else 1


def emit(output: Output, out: TextIO, err: TextIO) -> None:
    """Print an Output: its text to `out`, its error to `err`."""
    if output.text:
        print(output.text, file=out)
    if output.error:
        print(output.error, file=err)
