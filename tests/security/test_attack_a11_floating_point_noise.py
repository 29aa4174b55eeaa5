"""A11: floating-point noise (Mironov 2012; Haney et al. 2022). Textbook Laplace noise computed in
floating point leaves holes and low-order bits that depend on the exact value, so the set of
possible outputs identifies the input; precision attacks read the same bits out of sums.

Pass criterion (grid closure): every released SUM is a multiple of the column's public grid
(income: 2^-12, ages: 1) and every COUNT an integer, whatever the data, including values built to
sit off the grid (1/3, 0.1, subnormals, a hair below the upper bound, out-of-bounds values), so
the low-order bits are the same (zero) on every database and carry nothing. Control: a build that
adds continuous floating-point Laplace noise is caught by the same check on its first answers.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pandas as pd
import pytest

from dpsql.mechanisms import laplace
from dpsql.mechanisms.rng import RandomSource

SQL = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) SUM(income), COUNT(*), SUM(age), COUNT(income), "
       "AVG(income) FROM people")
GROUPED = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) dept, SUM(income), COUNT(*) FROM people GROUP BY dept"
INCOME_GRID = Fraction(1, 2**12)  # 500000 has 19 bits: 2^(19 - 1 - 30), about 2^30 steps up to the bound
ODD_INCOMES = [1 / 3, 0.1, 5e-324, 2.2250738585072014e-308, 499999.99999999994, 500000.5, -0.0, -7.25,
               1e-300, 123456.78901234567, 2 ** -13, 3 * 2 ** -14]


def adversarial(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["income"] = [ODD_INCOMES[i % len(ODD_INCOMES)] for i in range(len(out))]
    return out


def on_grid(value: float, grid: Fraction) -> bool:
    return (Fraction(value) / grid).denominator == 1


def off_grid_outputs(connect, policy_file, frame: pd.DataFrame, runs: int) -> list[tuple]:
    con = connect(policy_file(epsilon=1000), tables={"people": frame}, random_seed=21)
    bad = []
    for _ in range(runs):
        s, n, ages, n_income, _avg = con.execute(SQL).fetchone()
        if not (on_grid(s, INCOME_GRID) and isinstance(n, int) and isinstance(n_income, int) and on_grid(ages, Fraction(1))):
            bad.append((s, n, ages, n_income))
        for _, s, n in con.execute(GROUPED).fetchall():
            if not (on_grid(s, INCOME_GRID) and isinstance(n, int)):
                bad.append((s, n))
    return bad


@pytest.mark.parametrize("data", ["people", "adversarial"])
def test_a11_every_released_sum_lies_on_the_public_grid(connect, policy_file, people_frame, data: str) -> None:
    frame = people_frame if data == "people" else adversarial(people_frame)
    assert off_grid_outputs(connect, policy_file, frame, runs=200) == []


def test_a11_negative_control_floating_point_laplace_leaves_the_grid(connect, policy_file, people_frame, monkeypatch) -> None:
    def textbook(self: object, spec: laplace.LaplaceSpec, raw: int, rng: RandomSource) -> float:
        u = (rng.randbelow(2**53) + 0.5) / 2**53 - 0.5  # Laplace by inversion, in doubles
        return raw - float(spec.scale) * math.copysign(1.0, u) * math.log(1 - 2 * abs(u))

    monkeypatch.setattr(laplace.Laplace, "release", textbook)
    assert len(off_grid_outputs(connect, policy_file, adversarial(people_frame), runs=3)) >= 3
