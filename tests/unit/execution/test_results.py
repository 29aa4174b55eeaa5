"""What execution hands back: NoiseInfo read as a mapping (cursor.noise_info keeps its dicts),
the ledger's record of each release's privacy loss, typed plan references, SessionOptions."""

from __future__ import annotations

from fractions import Fraction

import pytest
from sqlglot import exp

import dpsql
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.errors import ProgrammingError
from dpsql.ir.query import ColumnRef
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.laplace import cost as laplace_cost
from dpsql.result import NoiseInfo
from dpsql.session import SessionOptions

EPS = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) "


def test_noise_info_is_a_mapping_with_absent_optional_keys() -> None:
    info = NoiseInfo(mechanism="smed", scale=None, ci95=None, epsilon=1.0, delta=1e-6, threshold=9, cap=50,
                     refusal="MEDIAN(x) refused: ...", refused=False, rank_shift=2)
    assert list(info) == ["mechanism", "scale", "ci95", "epsilon", "delta", "threshold", "cap", "refusal", "refused", "rank_shift"]
    assert info["refused"] is False and info.get("bound") is None and "bound" not in info
    with pytest.raises(KeyError):
        info["bound"]
    assert info == dict(info) and info.replace(refused=True)["refused"] is True and info.refused is False
    with pytest.raises(AttributeError):
        info.refused = True  # type: ignore[misc]  # frozen


def test_cursor_noise_info_is_one_dict_per_column(connect) -> None:
    con = connect()
    cur = con.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, quantile_mechanism = 'smed') "
                      "region, COUNT(*) AS n, MEDIAN(age) AS m, COUNT(*) + 1 AS n1 FROM people GROUP BY region")
    cur.fetchall()
    infos = cur.noise_info
    assert infos[0] is None and all(type(i) is dict for i in infos[1:])
    # The interval's ends too (ci_low, ci_high: not value -/+ ci95 where the interval is not symmetric).
    assert list(infos[1]) == ["mechanism", "scale", "ci95", "epsilon", "delta", "ci_low", "ci_high"]
    assert infos[1]["mechanism"] == "laplace"
    assert infos[2]["mechanism"] == "smed" and {"threshold", "cap", "refusal", "refused", "rank_shift"} <= set(infos[2])
    assert infos[3]["mechanism"].startswith("laplace (count, post-processed)") and infos[3]["ci95"] is not None


def test_costs_keep_their_loss_terms_and_compare_by_epsilon_delta() -> None:
    one = laplace_cost(LaplaceSpec(Fraction(2), Fraction(1, 2)))
    assert one.losses == (PrivacyLoss("discrete_laplace", "laplace", Fraction(1, 2), Fraction(0), sensitivity=Fraction(2),
                                      scale=Fraction(4)),)
    both = one + one
    assert both == PrivacyCost(1) and len(both.losses) == 2  # equality is the (epsilon, delta) pair
    assert one.losses[0].record() == {"family": "discrete_laplace", "mechanism": "laplace", "epsilon": "1/2", "delta": "0",
                                      "sensitivity": "2", "scale": "4"}


def test_the_ledger_records_every_loss_term(connect) -> None:
    con = connect()
    con.execute(EPS + "COUNT(*), AVG(age), MEDIAN(age) FROM people").fetchall()
    losses = con.ledger()[-1].params["losses"]
    assert [loss["family"] for loss in losses] == ["discrete_laplace"] * 3 + ["bounded_range"]  # MEDIAN: the EM
    assert sum(Fraction(loss["epsilon"]) for loss in losses) == Fraction(1)


def test_placeholders_carry_typed_references_through_copies() -> None:
    node = ColumnRef("aggregate", 3).column()
    tree = exp.Add(this=node, expression=exp.Literal.number(1)).copy()
    assert ColumnRef.of(tree.this) == ColumnRef("aggregate", 3) and tree.this.name == "__a3"
    assert ColumnRef.of(exp.column("__a3")) is None  # a name alone is not a reference


def test_session_options_are_the_connect_parameters_in_order(connect, people_frame) -> None:
    assert [f.name for f in SessionOptions.__dataclass_fields__.values()] == [
        "database", "policy", "analyst", "ledger", "tables", "random_seed", "engine", "spark", "master", "remote", "progress",
        "prepare", "shared", "ci_columns", "round"]
    with pytest.raises(ProgrammingError):
        dpsql.connect(random_seed="1")
    with pytest.raises(TypeError):
        dpsql.connect(nonsense=1)
