"""An (epsilon, delta) audit of the discrete Gaussian COUNT through SQL, with a negative control.

Databases: the people table D and D' = D without one person who has 3 rows (= max_rows, so
COUNT(*) moves by its full sensitivity 3). Query: `COUNT(*)` with `noise = 'gaussian'` at
epsilon 1, delta 1e-5 (sigma about 14.7). Event fixed in advance: S = {answer >= n_D} (the exact
count, public in this test). For a correct mechanism P_D(S) <= e^eps P_D'(S) + delta; here
P_D(S) ~ 0.51 and P_D'(S) = P(noise >= 3) ~ 0.42, a log-ratio ~ 0.2.

Check: from n answers per database (fixed seeds), a one-sided Clopper-Pearson lower bound L on
P_D(S) and upper bound U on P_D'(S) at confidence 1 - 5e-4 each; the audited epsilon
ln((L - delta) / U) must be <= epsilon. It exceeds it for a correct mechanism only if L > P_D(S)
or U < P_D'(S): probability <= 1e-3 (and, seeds being fixed, the outcome is deterministic).

Negative control: sigma^2 / 100 (a unit slip in the calibration): P_D'(S) = P(noise >= 3) ~ 0.02
with sigma ~ 1.5, a log-ratio ~ 3, which 500 answers per side detect far beyond the bounds' slack.
"""

from __future__ import annotations

import math

import pytest
from scipy.stats import beta

from dpsql.mechanisms.gaussian import GaussianSpec

pytestmark = pytest.mark.statistical
W = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS"


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
    threshold = exact  # S = {answer >= n_D}
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
