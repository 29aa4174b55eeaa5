"""Random functions are refused (DP113) with their own reason and fix, before the charge.

What must hold: RAND()/RANDOM()/UUID()/SETSEED() anywhere in a query over private rows, even
reading no column (SmartNoise's `SELECT PI(), RAND(), ...`), are refused naming the channel (the
engine's draws count the rows and groups it visits) and the fix (draw from the released result);
a function refused for another reason keeps its own message (the control).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpsql
from dpsql.errors import Error
from tests.conftest import make_policy_text


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(), encoding="utf-8")
    return path


@pytest.mark.parametrize("sql", [
    "SELECT PI(), RAND(), POWER(AVG(age), 2) FROM people",
    "SELECT COUNT(*) FROM people WHERE random() < 0.5",
    "SELECT SUM(age * RANDOM()) FROM people",
    "SELECT COUNT(*), uuid() FROM people",
    "SELECT setseed(0.5), COUNT(*) FROM people",
])
def test_random_functions_are_refused_with_the_reason_before_the_charge(people: pd.DataFrame, policy_path: Path,
                                                                        sql: str) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=1) as con:
        with pytest.raises(Error) as refused:
            con.execute(sql)
        assert refused.value.code == "DP113"
        assert "it is random" in str(refused.value) and "draw random values in your own code" in str(refused.value)
        assert con.ledger() == []


def test_other_forbidden_functions_keep_their_reason(people: pd.DataFrame, policy_path: Path) -> None:
    with dpsql.connect(tables={"people": people}, policy=policy_path, random_seed=1) as con:
        with pytest.raises(Error) as refused:
            con.execute("SELECT COUNT(*) FROM people WHERE getenv('HOME') = 'x'")
        assert refused.value.code == "DP113"
        assert "it is random" not in str(refused.value)
