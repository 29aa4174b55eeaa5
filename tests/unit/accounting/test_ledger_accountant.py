"""The ledger's check under a composing accountant: as many charges as the accountant allows,
never more, across ledger objects and processes; the cached composition never loosens the check."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpsql.accounting.accountant import accountant
from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.ledger import Ledger, open_ledger
from dpsql.errors import BudgetExhaustedError

SPAWN = multiprocessing.get_context("spawn")
BUDGET = PrivacyCost(1, Fraction(1, 10**6))
COUNT = PrivacyCost.of(PrivacyLoss("discrete_laplace", "laplace", Fraction(1, 100), Fraction(0),
                                   sensitivity=Fraction(1), scale=Fraction(100)))


def fits_of(name: str) -> int:
    """How many COUNT charges the accountant itself admits within BUDGET."""
    composition, n = accountant(name).empty(), 0
    while (after := composition.add(COUNT.losses)).fits(BUDGET):
        composition, n = after, n + 1
    return n


PLD_FITS = fits_of("pld")


def charge(led: Ledger, name: str = "pld", cost: PrivacyCost = COUNT, params: dict[str, Any] | None = None,
           analyst: str = "alice") -> None:
    led.charge(analyst=analyst, session="s", query="SELECT COUNT(*) FROM t", plan_hash="h", mechanism="laplace",
               params={"losses": [x.record() for x in cost.losses]} if params is None else params,
               cost=cost, budget=BUDGET, accountant=name)


def charge_until_refused(led: Ledger, name: str = "pld", **kw: Any) -> int:
    n = 0
    while True:
        try:
            charge(led, name, **kw)
        except BudgetExhaustedError:
            return n
        n += 1


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_server").new_database())
    return str(tmp_path / "ledger.db")


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with open_ledger(tmp_path / "l.db") as led:
        yield led


def test_each_accountant_admits_exactly_what_it_computes(target: str) -> None:
    assert PLD_FITS > 300 and fits_of("basic") == 100
    with open_ledger(target) as led:
        assert charge_until_refused(led, "pld") == PLD_FITS
        assert charge_until_refused(led, "basic", analyst="bob") == 100
        assert charge_until_refused(led, "zcdp", analyst="carol") == fits_of("zcdp")
        # What is shown is the accountant's view: epsilon at the budget's delta.
        spent = led.spent("alice", BUDGET, "pld")
        assert Fraction(99, 100) < spent.epsilon <= 1 and spent.delta == 0
        assert led.remaining("alice", BUDGET, "pld").epsilon < Fraction(1, 100)
        assert led.spent("alice") == PrivacyCost(Fraction(PLD_FITS, 100))  # basic: the exact sums, as before


def test_the_refusal_reports_the_accountants_remaining(ledger: Ledger) -> None:
    charge_until_refused(ledger)
    with pytest.raises(BudgetExhaustedError) as info:
        charge(ledger)
    assert info.value.remaining == ledger.remaining("alice", BUDGET, "pld")
    assert "remaining epsilon=" in str(info.value)
    assert len(ledger.entries("alice")) == PLD_FITS  # the refusal recorded nothing


def test_another_ledger_objects_charges_are_seen_by_a_warm_cache(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with open_ledger(path) as first, open_ledger(path) as second:
        for _ in range(300):
            charge(first)  # first's cache now covers 300 charges
        assert charge_until_refused(second) == PLD_FITS - 300
        with pytest.raises(BudgetExhaustedError):
            charge(first)  # its cache is stale: the count and largest id inside the transaction say so


def test_negative_control_a_cache_that_ignores_staleness_overspends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "shared.db"
    with open_ledger(path) as first, open_ledger(path) as second:
        for _ in range(300):
            charge(first)
        charge_until_refused(second)
        cached = dict(first._cache)
        monkeypatch.setattr(first._store, "summary", lambda analyst: cached[(analyst, "pld")][:2])
        charge(first)  # the broken check accepts a charge the budget does not allow...
        monkeypatch.undo()
        history = [e.params["losses"] for e in first.entries("alice")]
        assert len(history) == PLD_FITS + 1
        # ...which the test above's assertion (a refusal) would have caught.
        assert not accountant("pld").empty().add(COUNT.losses * len(history)).fits(BUDGET)


def test_entries_without_loss_terms_are_composed_as_their_charged_cost(ledger: Ledger) -> None:
    # A ledger written before the terms were recorded: params without "losses".
    for _ in range(200):
        charge(ledger, params={"kind": "laplace", "scale": "100"})
    assert charge_until_refused(ledger) == PLD_FITS - 200  # pure epsilon 0.01 each: the same PLD


def test_a_deleted_row_rebuilds_the_composition(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "l.db"
    with open_ledger(path) as led:
        for _ in range(10):
            charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("DELETE FROM charges WHERE id = 3")
        charge(led)
        count, max_id, composition = led._cache[("alice", "pld")]
        assert (count, max_id, composition.count) == (10, 11, 10)


def _charge_many(target: str, start: Any, n: int, results: Any) -> None:
    led = open_ledger(target)
    ok = refused = 0
    start.wait(timeout=60)
    for _ in range(n):
        try:
            charge(led)
            ok += 1
        except BudgetExhaustedError:
            refused += 1
    led.close()
    results.put((ok, refused))


@pytest.mark.slow  # several processes
def test_two_processes_cannot_overspend_under_pld(target: str) -> None:
    start, results = SPAWN.Barrier(2), SPAWN.Queue()
    procs = [SPAWN.Process(target=_charge_many, args=(target, start, 400, results)) for _ in range(2)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    assert sum(ok for ok, _ in outcomes) == PLD_FITS
    assert sum(refused for _, refused in outcomes) == 800 - PLD_FITS
    with open_ledger(target) as led:
        assert len(led.entries("alice")) == PLD_FITS
        assert led.spent("alice", BUDGET, "pld").epsilon <= 1
