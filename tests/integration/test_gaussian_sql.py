"""Through SQL: discrete Gaussian noise (OPTIONS and the policy default), accuracy-first ci95,
EXPLAIN's view of the budget, and an (epsilon, delta) audit of the Gaussian COUNT with a
negative control (a mechanism with too little noise is caught by the same audit)."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest
from scipy.stats import beta

from dpsql.mechanisms.gaussian import GaussianSpec
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
    assert sum("discrete Gaussian" in line for line in lines) == 3  # AVG's sum and count too
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
    con = connect(policy_file(epsilon=1.0, delta=1e-6, default_epsilon=0.01, default_delta=0.0))
    lines = explain(con, "SELECT COUNT(*) FROM people")
    line = lines[lines.index(next(x for x in lines if x.startswith("Cost: "))) + 1]
    # One COUNT at epsilon 0.01 (sensitivity 3): the PLD's epsilon at 1e-6 is at most 0.01.
    assert line.startswith("Budget after this query (pld accountant): epsilon 0.0") and "at delta 1e-06, of epsilon 1;" in line
    fit = int(line.split("; ")[1].split()[0])
    assert fit > 300 and con.queries_left is None
    con.execute("SELECT COUNT(*) FROM people").fetchone()
    assert con.queries_left == fit - 1
    assert any(f"; {fit - 1} such queries fit now" in x for x in explain(con, "SELECT COUNT(*) FROM people"))


def _audit(connect, policy_file, people_frame, n: int) -> float:  # type: ignore[no-untyped-def]
    """A lower confidence bound (99.9%) on the epsilon the Gaussian COUNT really spends at delta, from
    n answers on two neighbouring tables (one person removed) and the event "answer >= threshold"."""
    unit = people_frame["person_id"].value_counts()
    person = unit[unit >= 3].index[0]
    neighbour = people_frame[people_frame["person_id"] != person]
    policy = policy_file(epsilon=1e6, delta=0.5)
    sql = f"{W} (noise = 'gaussian', epsilon = 1, delta = 1e-5) COUNT(*) FROM people"
    d = connect(policy, tables={"people": people_frame}, random_seed=5)
    d2 = connect(policy, tables={"people": neighbour}, random_seed=6)
    exact = len(people_frame)  # max_rows keeps everyone's rows when none has more than 3
    big = [d.execute(sql).fetchone()[0] for _ in range(n)]
    small = [d2.execute(sql).fetchone()[0] for _ in range(n)]
    threshold = exact
    k1, k2 = sum(x >= threshold for x in big), sum(x >= threshold for x in small)
    p1_low = beta.ppf(0.0005, k1, n - k1 + 1) if k1 else 0.0
    p2_high = beta.ppf(0.9995, k2 + 1, n - k2) if k2 < n else 1.0
    return math.log(max(p1_low - 1e-5, 1e-300) / p2_high) if p2_high > 0 else math.inf


@pytest.mark.slow  # a thousand answers through SQL
def test_the_gaussian_count_passes_an_epsilon_delta_audit_and_a_broken_one_does_not(
        connect, policy_file, people_frame, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    if people_frame["person_id"].value_counts().max() > 3:
        pytest.skip("the audit's exact count assumes no person has more than max_rows rows")
    assert _audit(connect, policy_file, people_frame, 500) <= 1.0
    # Negative control: sigma 10x too small (what a unit slip in the calibration would do).
    real = GaussianSpec.sigma2
    monkeypatch.setattr(GaussianSpec, "sigma2", property(lambda self: real.fget(self) / 100))  # type: ignore[attr-defined]
    assert _audit(connect, policy_file, people_frame, 500) > 1.0
