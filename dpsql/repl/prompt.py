"""The interactive prompt: prompt_toolkit wiring only. Everything it prints comes from the Runner."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.output import Output as TerminalOutput
from pygments.lexers.sql import SqlLexer

from dpsql.repl.backslash import Output, ReplState, number
from dpsql.repl.completion import PolicyCompleter
from dpsql.repl.keys import repl_key_bindings
from dpsql.repl.runner import Runner, emit
from dpsql.repl.script import split_script
from dpsql.repl.toolbar import toolbar_text
from dpsql.session import Session

PROMPT = "dpsql> "
CONTINUATION = "   ..> "


def history_path(environ: Mapping[str, str] = os.environ) -> Path:
    """$DPSQL_HISTORY, else `history` in $DPSQL_CACHE_DIR, else in the user's data directory."""
    if environ.get("DPSQL_HISTORY"):
        return Path(environ["DPSQL_HISTORY"]).expanduser()
    if environ.get("DPSQL_CACHE_DIR"):
        return Path(environ["DPSQL_CACHE_DIR"]).expanduser() / "history"
    if sys.platform == "win32":
        base = Path(environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = environ.get("XDG_DATA_HOME", "")
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "dpsql" / "history"


def open_history(path: Path) -> History:
    """A history file readable by its owner only; in memory when the file cannot be created."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch(mode=0o600, exist_ok=True)
        return FileHistory(str(path))
    except OSError:
        return InMemoryHistory()


class Toolbar:
    """The bottom toolbar; the remaining budget is re-read after each input, not on every redraw."""

    def __init__(self, session: Session, state: ReplState) -> None:
        self.session = session
        self.state = state
        self.remaining = session.remaining
        self.queries_left: int | None = None

    def refresh(self) -> None:
        """Re-read the remaining budget (the ledger may be shared with other sessions)."""
        self.remaining = self.session.remaining
        self.queries_left = self.session.queries_left

    def __call__(self) -> str:
        return toolbar_text(self.session.analyst, self.remaining, self.session.total_budget, self.state.last_cost,
                            self.state.timing, self.queries_left)


class Repl:
    """One interactive run: the prompt, its toolbar and the Runner that answers each input."""

    def __init__(self, session: Session, *, confirm_share: float = 0.25, input: Input | None = None,  # noqa: A002
                 output: TerminalOutput | None = None, out: TextIO | None = None, err: TextIO | None = None,
                 history: History | None = None) -> None:
        self.session = session
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.state = ReplState(confirm_share=confirm_share)
        asker: PromptSession[str] = PromptSession(input=input, output=output)
        self.runner = Runner(session, self.state, confirm=lambda question: _ask(asker, question))
        self.toolbar = Toolbar(session, self.state)
        self.prompt: PromptSession[str] = PromptSession(
            PROMPT, multiline=True, prompt_continuation=CONTINUATION, lexer=PygmentsLexer(SqlLexer),
            completer=PolicyCompleter(session.policy, session.sql_functions()), complete_while_typing=True,
            auto_suggest=AutoSuggestFromHistory(), bottom_toolbar=self.toolbar, key_bindings=repl_key_bindings(),
            history=history if history is not None else open_history(history_path()), input=input, output=output,
        )

    def run(self) -> int:
        """Read statements and commands until `\\q`, `quit` or end of input; returns the exit status (0)."""
        print(_banner(self.session), file=self.out)
        while True:
            try:
                text = self.prompt.prompt()
            except KeyboardInterrupt:
                continue
            except EOFError:
                return 0
            if text.strip().lower() in ("quit", "exit"):
                return 0
            for item in split_script(text):
                answer = _run(self.runner, item)
                emit(answer, self.out, self.err)
                if answer.quit:
                    return 0
            self.toolbar.refresh()


def run_repl(session: Session, *, confirm_share: float = 0.25, input: Input | None = None,  # noqa: A002
             output: TerminalOutput | None = None, out: TextIO | None = None, err: TextIO | None = None,
             history: History | None = None) -> int:
    """Run the REPL over `session` (see `Repl`); returns the exit status."""
    gc.freeze()  # start-up's objects live as long as the prompt: keep them out of full collections (server/transport.run)
    return Repl(session, confirm_share=confirm_share, input=input, output=output, out=out, err=err, history=history).run()


def _run(runner: Runner, item: str) -> Output:
    try:
        return runner.run(item)
    except KeyboardInterrupt:
        return Output(error="Cancelled (a query charged before the interrupt stays charged).", ok=False)
    except Exception as error:  # noqa: BLE001 - keep the prompt alive; dpsql errors are handled by the runner
        # Only the class name: the text of an unexpected exception could quote data.
        return Output(error=f"INTERNAL ERROR ({type(error).__name__}): a dpsql bug, please report it.", ok=False)


def _ask(asker: PromptSession[str], question: str) -> bool:
    try:
        answer = asker.prompt(question)
    except (EOFError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def _banner(session: Session) -> str:
    remaining, total = session.remaining, session.total_budget
    return (f"dpsql: differentially private SQL. Analyst {session.analyst}: epsilon {number(remaining.epsilon)} of "
            f"{number(total.epsilon)} and delta {number(remaining.delta)} of {number(total.delta)} remain.\n"
            "End statements with ';'. \\d lists tables, \\help shows help, \\q quits.")
