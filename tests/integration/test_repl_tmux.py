"""The REPL in a real terminal: tmux runs `python -m dpsql`, types into it and reads the screen."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it as root)"),
]

TIMEOUT_S = 60.0
UTF8 = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


class Tmux:
    """A private tmux server (its own socket) holding one detached session."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.target = "repl"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **UTF8}
        return subprocess.run(["tmux", "-u", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True,
                              text=True, env=env, check=check, timeout=30)

    def start(self, command: str) -> None:
        self("new-session", "-d", "-s", self.target, "-x", "150", "-y", "45", command)

    def type(self, text: str) -> None:
        # tmux reads an argument ending in ';' as a command separator; '\\;' is a literal one.
        self("send-keys", "-t", self.target, "-l", text[:-1] + "\\;" if text.endswith(";") else text)

    def key(self, name: str) -> None:
        self("send-keys", "-t", self.target, name)

    def screen(self) -> str:
        result = self("capture-pane", "-p", "-t", self.target, check=False)
        return result.stdout if result.returncode == 0 else ""

    def alive(self) -> bool:
        return self("has-session", "-t", self.target, check=False).returncode == 0

    def wait_for(self, *needles: str, timeout: float = TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(n in screen for n in needles):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"waited {timeout}s for {needles!r}; the screen shows:\n{screen}")


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    server = Tmux(f"dpsql-test-{uuid.uuid4().hex[:8]}")
    yield server
    server("kill-server", check=False)  # only this test's private server


def test_query_in_a_real_terminal(tmux: Tmux, tmp_path: Path, policy_file: Callable[..., Path],
                                  people_frame: pd.DataFrame) -> None:
    people_frame.to_csv(tmp_path / "people.csv", index=False)
    policy = policy_file(source="people.csv")
    env = {**UTF8, "DPSQL_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path), "TERM": "xterm-256color",
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    tmux.start(f"cd {shlex.quote(str(tmp_path))} && env -i {assignments} {shlex.quote(sys.executable)} -m dpsql "
               f"--policy {shlex.quote(str(policy))} --analyst ann")

    tmux.wait_for("dpsql>", "analyst ann | remaining epsilon 10 of 10")
    tmux.type("SELECT COUNT(*)")
    tmux.key("Enter")  # no ';' yet: a new line, nothing runs
    tmux.type("FROM peo")
    tmux.wait_for("people")  # the completion menu offers the policy's table
    tmux.key("Tab")
    tmux.type(";")
    tmux.key("Enter")
    screen = tmux.wait_for("±", "(1 row)  cost: epsilon 0.1", "remaining epsilon 9.9 of 10", "last query epsilon 0.1")
    assert "   ..> FROM people;" in screen

    tmux.type("\\budget")
    tmux.key("Enter")
    tmux.wait_for("Budget of analyst ann:", "█")

    tmux.type("\\q")
    tmux.key("Enter")
    deadline = time.monotonic() + TIMEOUT_S
    while tmux.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not tmux.alive(), "\\q ends the REPL"
    history = (tmp_path / "cache" / "history").read_text(encoding="utf-8")
    assert "+SELECT COUNT(*)\n+FROM people;" in history
