"""`dpsql hash-password` and `dpsql serve` dispatch from the main CLI."""

from __future__ import annotations

import io

import pytest

from dpsql import cli
from dpsql.server import scram


def test_hash_password_reads_stdin_and_prints_a_verifier(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret\n"))
    assert cli.main(["hash-password"]) == 0
    verifier = capsys.readouterr().out.strip()
    parsed = scram.parse_verifier(verifier)
    assert verifier.startswith("SCRAM-SHA-256$4096:") and parsed.iterations == 4096
    assert scram.make_verifier("s3cret", salt=parsed.salt) == verifier  # the newline is not part of the password


def test_hash_password_refuses_an_empty_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert cli.main(["hash-password"]) == 1


def test_serve_requires_a_policy(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve"])
    assert exited.value.code == 2 and "--policy" in capsys.readouterr().err


def test_serve_reports_a_bad_policy(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--policy", "/nonexistent/policy.toml", "--port", "0"]) == 1
    assert "policy file not found" in capsys.readouterr().err
