"""Where budgets are kept: the demo's ledger in the user cache directory (surviving runs of the CLI
and of dpsql.connect(), `:memory:` for a throwaway one), a data owner's `[budget] ledger` that no
analyst can swap for a fresh one, and `dpsql serve` refusing a policy nobody can log in to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dpsql
from dpsql.catalog.loader import load_policy
from dpsql.cli import main
from dpsql.errors import CatalogError, InterfaceError
from dpsql.server.cli_args import serve_main
from dpsql.session import DEMO_LEDGER
from tests.conftest import make_policy_text

QUERY = "SELECT COUNT(*) FROM people"
OTHER = "SELECT COUNT(*) FROM people WHERE age > 30"
THIRD = "SELECT COUNT(*) FROM people WHERE age > 40"


def _remaining(output: str) -> float:
    match = re.search(r"budget remaining: epsilon ([0-9.]+)", output)
    assert match, output
    return float(match.group(1))


def test_cli_demo_keeps_its_budget_across_runs(capsys: pytest.CaptureFixture[str], isolated_demo_cache: Path) -> None:
    assert main(["-c", QUERY]) == 0
    first = _remaining(capsys.readouterr().out)
    assert main(["-c", OTHER]) == 0
    second = _remaining(capsys.readouterr().out)
    assert first - second == pytest.approx(0.1)  # the second run saw the first run's charge
    assert (isolated_demo_cache / "demo-v1" / DEMO_LEDGER).is_file()
    assert main(["--ledger", ":memory:", "-c", QUERY]) == 0  # a throwaway run: a fresh budget, nothing recorded
    assert _remaining(capsys.readouterr().out) == pytest.approx(first)
    assert main(["-c", QUERY]) == 0  # the first run's answer, kept in the demo's ledger: replayed, free
    out = capsys.readouterr().out
    assert "replayed" in out and _remaining(out) == pytest.approx(second)
    assert main(["-c", THIRD]) == 0
    assert _remaining(capsys.readouterr().out) == pytest.approx(second - 0.1)


def test_connect_demo_shares_the_persistent_ledger() -> None:
    with dpsql.connect() as con:
        con.cursor().execute(QUERY)
        spent = con.session.spent.epsilon
    with dpsql.connect() as con:
        assert con.session.spent.epsilon == spent > 0
    with dpsql.connect(ledger=":memory:") as con:
        assert con.session.spent.epsilon == 0


def _owned_policy(tmp_path: Path, people_path: Path, ledger: str = "budget/ledger.sqlite") -> Path:
    text = make_policy_text(source=str(people_path))
    text, count = re.subn(r"(?m)^\[budget\][^\n]*\n", lambda m: m.group(0) + f'ledger = "{ledger}"\n', text, count=1)
    assert count == 1
    policy = tmp_path / "owner" / "policy.toml"
    policy.parent.mkdir(exist_ok=True)
    policy.write_text(text, encoding="utf-8")
    return policy


@pytest.fixture
def people_path(tmp_path: Path, people_frame: object) -> Path:
    from dpsql.backend.auxiliary.files import write_parquet

    path = tmp_path / "people.parquet"
    write_parquet(people_frame, path)  # type: ignore[arg-type]
    return path


def test_policy_ledger_is_relative_to_the_policy_and_fixed(tmp_path: Path, people_path: Path) -> None:
    policy = _owned_policy(tmp_path, people_path)
    fixed = tmp_path / "owner" / "budget" / "ledger.sqlite"
    assert load_policy(policy).budget.ledger == str(fixed.resolve())
    with dpsql.connect(policy=policy) as con:
        con.cursor().execute(QUERY)
    assert fixed.is_file()
    with dpsql.connect(policy=policy, ledger=fixed) as con:  # the same ledger, named again: accepted
        assert con.session.spent.epsilon > 0
    for other in (tmp_path / "fresh.sqlite", ":memory:"):
        with pytest.raises(InterfaceError, match=r"the policy fixes the budget ledger"):
            dpsql.connect(policy=policy, ledger=other)
    assert main(["--policy", str(policy), "--ledger", str(tmp_path / "fresh.sqlite"), "-c", QUERY]) == 1
    assert not (tmp_path / "fresh.sqlite").exists()


@pytest.mark.parametrize("value", ['":memory:"', '""', "3"])
def test_policy_ledger_must_be_a_file_or_url(tmp_path: Path, people_path: Path, value: str) -> None:
    policy = _owned_policy(tmp_path, people_path, "x")
    policy.write_text(policy.read_text(encoding="utf-8").replace('ledger = "x"', f"ledger = {value}"), encoding="utf-8")
    with pytest.raises(CatalogError, match="budget.ledger"):
        load_policy(policy)


def test_serve_refuses_a_policy_without_analysts(tmp_path: Path, people_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(make_policy_text(source=str(people_path)), encoding="utf-8")
    assert serve_main(["--policy", str(policy), "--port", "0"]) == 1
    assert "declares no analysts, so nobody could log in" in capsys.readouterr().err


def test_serve_refuses_another_ledger_than_the_policy_fixes(tmp_path: Path, people_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpsql.server.scram import make_verifier

    policy = _owned_policy(tmp_path, people_path)
    policy.write_text(policy.read_text(encoding="utf-8") + f'\n[analysts.alice]\npassword = "{make_verifier("pw")}"\n', encoding="utf-8")
    assert serve_main(["--policy", str(policy), "--port", "0", "--ledger", str(tmp_path / "fresh.sqlite")]) == 1
    assert "the policy fixes the budget ledger" in capsys.readouterr().err
