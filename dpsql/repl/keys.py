"""Key bindings of the prompt: Enter submits a finished statement, else starts a new line."""

from __future__ import annotations

from prompt_toolkit.enums import DEFAULT_BUFFER
from prompt_toolkit.filters import has_focus
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from dpsql.repl.script import is_complete


def repl_key_bindings() -> KeyBindings:
    """Enter: take the highlighted completion, or submit when `is_complete`, or insert a newline."""
    bindings = KeyBindings()

    @bindings.add("enter", filter=has_focus(DEFAULT_BUFFER))
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
        elif is_complete(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.newline(copy_margin=False)

    return bindings
