"""Through SQL: discrete Gaussian noise (OPTIONS and the policy default), accuracy-first ci95,
and EXPLAIN's view of the budget. The (epsilon, delta) audit is tests/statistical/test_gaussian_sql_audit.py."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from dpsql.planner.accuracy import width

W = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS"


def explain(con, sql: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [row[0] for row in con.execute("EXPLAIN " + sql).fetchall()]


def test_gaussian_per_query_and_as_the_policy_default(connect, policy_file) -> None:  # type: ignore[no-untyped-def]
    con = connect()
    cur = con.execute(f"{W} (noise = 'gaussian', delta = 1e-7) COUNT(*) FROM people")
    assert cur.noise_info[0]["mechanism"] == "gaussian" and cur.noise_info[0]["delta"] == pytest.approx(1e-7)
    (entry,) = con.ledger()
    assert [loss["family"] for loss in entry.params["losses"]] == ["discrete_gaussian"]
    path = policy_file()
    path.write_text(path.read_text(encoding="utf-8").replace("[budget]", '[budget]\nnoise = "gaussian"', 1), encoding="utf-8")
    con = connect(path)
    lines = explain(con, f"{W} (delta = 1e-7) COUNT(*), AVG(age) FROM people")
    releases = [line for line in lines if line.startswith("  Release ")]
    assert sum("discrete Gaussian" in line for line in releases) == 3  # AVG's sum and count too
    assert any("discrete Laplace" in line for line in explain(con, f"{W} (noise = 'laplace') COUNT(*) FROM people"))


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_ci95_derives_the_smallest_epsilon_before_anything_is_spent(connect, noise: str) -> None:  # type: ignore[no-untyped-def]
    con = connect()
    sql = f"{W} (ci95 = 500, noise = '{noise}', delta = 1e-7) COUNT(*), SUM(age) FROM people"
    lines = explain(con, sql)
    assert con.ledger() == []  # EXPLAIN spends nothing
    releases = [line for line in lines if line.startswith("  Release ")]
    epsilons = [Fraction(re.search(r"epsilon ([0-9.e-]+)", line).group(1)) for line in releases]  # type: ignore[union-attr]
    total = Fraction(next(line for line in lines if line.startswith("Cost: ")).split()[2].rstrip(","))
    assert float(total) == pytest.approx(float(sum(epsilons)), rel=1e-5)  # each release gets its own smallest epsilon
    delta = Fraction(1, 10**7) / 2
    # COUNT(*): sensitivity 3; SUM(age): 3 x 90 on the integer grid. Each within +-500, and each
    # release's epsilon the smallest (6 significant digits) that gives it.
    for sensitivity, epsilon in zip((Fraction(3), Fraction(270)), epsilons):
        assert width(noise, sensitivity, epsilon, delta) <= 500
        assert width(noise, sensitivity, epsilon * Fraction(999, 1000), delta) > 500
    cur = con.execute(sql)
    assert all(info["ci95"] <= 500 for info in cur.noise_info)
    assert float(con.ledger()[0].cost.epsilon) == pytest.approx(float(total), rel=1e-5)


def test_explain_shows_the_total_after_the_query_and_how_many_fit(connect, policy_file) -> None:  # type: ignore[no-untyped-def]
    # Replay off: the repeat's EXPLAIN is about a charge (with replay on, the repeat would be free).
    con = connect(policy_file(epsilon=1.0, delta=1e-6, default_epsilon=0.01, default_delta=0.0, replay_seconds=0))
    lines = explain(con, "SELECT COUNT(*) FROM people")
    line = lines[lines.index(next(x for x in lines if x.startswith("Cost: "))) + 1]
    # One COUNT at epsilon 0.01 (sensitivity 3): the filter holds it at epsilon at most 0.01.
    assert line.startswith("Budget after this query (adaptive privacy filter): epsilon 0.0") and "at delta 1e-06, of epsilon 1;" in line
    fit = int(line.split("; ")[1].split()[0])
    assert fit > 300 and con.queries_left is None
    con.execute("SELECT COUNT(*) FROM people").fetchone()
    assert con.queries_left == fit - 1
    assert any(f"; {fit - 1} such queries fit now" in x for x in explain(con, "SELECT COUNT(*) FROM people"))
