"""The minimal CLI's statement splitter (the CLI as a subprocess: tests/slow/test_cli_subprocess.py)."""

from dpsql.cli import split_statements


def test_split_statements_respects_quotes_and_comments() -> None:
    text = "SELECT 'a;b' FROM t; -- c; d\nSELECT 2;;"
    assert list(split_statements(text)) == ["SELECT 'a;b' FROM t", "-- c; d\nSELECT 2"]
