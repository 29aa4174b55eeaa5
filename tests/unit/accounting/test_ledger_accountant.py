"""The ledger's check under a privacy filter: as many charges as the filter admits, never more,
across ledger objects and processes; the cached history never loosens the check, and a ledger
that lost charges is refused rather than rebuilt."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpsql.accounting.cost import PrivacyCost, PrivacyLoss
from dpsql.accounting.filters import Filter, History, charge_of
from dpsql.accounting.ledger import Ledger, open_ledger
from dpsql.errors import BudgetExhaustedError, LedgerError
from tests.conftest import POSTGRES

SPAWN = multiprocessing.get_context("spawn")
BUDGET = PrivacyCost(1, Fraction(1, 10**6))
COUNT = PrivacyCost.of(PrivacyLoss("discrete_laplace", "laplace", Fraction(1, 100), Fraction(0),
                                   sensitivity=Fraction(1), scale=Fraction(100)))


def fits_of(name: str) -> int:
    """How many COUNT charges the filter itself admits within BUDGET."""
    history, n, chosen = History(), 0, Filter(name, BUDGET)  # type: ignore[arg-type]
    while chosen.admits(after := history.add(charge_of(COUNT.losses))):
        history, n = after, n + 1
    return n


FITS = fits_of("adaptive")


def charge(led: Ledger, name: str = "adaptive", cost: PrivacyCost = COUNT, params: dict[str, Any] | None = None,
           analyst: str = "alice") -> None:
    led.charge(analyst=analyst, session="s", query="SELECT COUNT(*) FROM t", plan_hash="h", mechanism="laplace",
               params={"losses": [x.record() for x in cost.losses]} if params is None else params,
               cost=cost, budget=BUDGET, accountant=name)


def charge_until_refused(led: Ledger, name: str = "adaptive", **kw: Any) -> int:
    n = 0
    while True:
        try:
            charge(led, name, **kw)
        except BudgetExhaustedError:
            return n
        n += 1


@pytest.fixture(params=["sqlite", POSTGRES])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_server").new_database())
    return str(tmp_path / "ledger.db")


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with open_ledger(tmp_path / "l.db") as led:
        yield led


def test_each_filter_admits_exactly_what_it_computes(target: str) -> None:
    assert FITS > 500 and fits_of("basic") == 100 and fits_of("zcdp") > 400
    with open_ledger(target) as led:
        assert charge_until_refused(led, "adaptive") == FITS
        assert charge_until_refused(led, "basic", analyst="bob") == 100
        assert charge_until_refused(led, "zcdp", analyst="carol") == fits_of("zcdp")
        # "pld" in an older policy is the same valid filter.
        assert charge_until_refused(led, "pld", analyst="dave") == FITS
        # What is shown is the filter's view: the smallest epsilon at which one of its classes holds.
        spent = led.spent("alice", BUDGET, "adaptive")
        assert Fraction(99, 100) < spent.epsilon <= 1 and spent.delta == 0
        assert led.remaining("alice", BUDGET, "adaptive").epsilon < Fraction(1, 100)
        assert led.spent("alice") == PrivacyCost(Fraction(FITS, 100))  # basic: the exact sums, as before


def test_the_refusal_reports_the_accountants_remaining(ledger: Ledger) -> None:
    charge_until_refused(ledger)
    with pytest.raises(BudgetExhaustedError) as info:
        charge(ledger)
    assert info.value.remaining == ledger.remaining("alice", BUDGET, "adaptive")
    assert "remaining epsilon=" in str(info.value)
    assert len(ledger.entries("alice")) == FITS  # the refusal recorded nothing


def test_another_ledger_objects_charges_are_seen_by_a_warm_cache(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with open_ledger(path) as first, open_ledger(path) as second:
        for _ in range(300):
            charge(first)  # first's cache now covers 300 charges
        assert charge_until_refused(second) == FITS - 300
        with pytest.raises(BudgetExhaustedError):
            charge(first)  # its cache is stale: the count and largest id inside the transaction say so


def test_negative_control_a_cache_that_ignores_staleness_overspends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "shared.db"
    with open_ledger(path) as first, open_ledger(path) as second:
        for _ in range(300):
            charge(first)
        charge_until_refused(second)
        cached = dict(first._cache)
        monkeypatch.setattr(first._store, "summary", lambda analyst: cached[analyst][:2])
        monkeypatch.setattr(first, "_check_grown", lambda *args: None)
        charge(first)  # the broken check accepts a charge the budget does not allow...
        monkeypatch.undo()
        history = [e.params["losses"] for e in first.entries("alice")]
        assert len(history) == FITS + 1
        # ...which the test above's assertion (a refusal) would have caught.
        assert not Filter("adaptive", BUDGET).admits(History().add(charge_of(COUNT.losses), len(history)))


def test_entries_without_loss_terms_are_composed_as_their_charged_cost(ledger: Ledger) -> None:
    # A ledger written before the terms were recorded: params without "losses".
    for _ in range(200):
        charge(ledger, params={"kind": "laplace", "scale": "100"})
    # Pure epsilon 0.01 each: the same (epsilon, delta) unit, so the same homogeneous chain.
    assert charge_until_refused(ledger) == FITS - 200


@pytest.mark.parametrize("deleted", [3, 10])
def test_a_deleted_row_is_refused_not_rebuilt(tmp_path: Path, deleted: int) -> None:
    import sqlite3

    path = tmp_path / "l.db"
    with open_ledger(path) as led:
        for _ in range(10):
            charge(led)
        with sqlite3.connect(path) as raw:
            raw.execute("DELETE FROM charges WHERE id = ?", (deleted,))
        with pytest.raises(LedgerError, match="lost charges"):
            charge(led)
        with pytest.raises(LedgerError, match="lost charges"):
            led.remaining("alice", BUDGET, "adaptive")
        assert len(led.entries("alice")) == 9  # nothing was charged


def test_negative_control_without_the_high_water_mark_a_deletion_refunds(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    path = tmp_path / "l.db"
    with open_ledger(path) as led:
        assert charge_until_refused(led, "basic") == 100
        with sqlite3.connect(path) as raw:
            raw.execute("DELETE FROM charges WHERE id > 50")
        monkeypatch.setattr(led, "_check_grown", lambda *args: None)
        monkeypatch.setattr(led, "_cache", {})  # the old code rebuilt from what was left
        assert charge_until_refused(led, "basic") == 50  # ...and the budget came back: the refund the test above refuses


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
def test_two_processes_cannot_overspend_under_the_filter(target: str) -> None:
    start, results = SPAWN.Barrier(2), SPAWN.Queue()
    procs = [SPAWN.Process(target=_charge_many, args=(target, start, 400, results)) for _ in range(2)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    assert sum(ok for ok, _ in outcomes) == FITS
    assert sum(refused for _, refused in outcomes) == 800 - FITS
    with open_ledger(target) as led:
        assert len(led.entries("alice")) == FITS
        assert led.spent("alice", BUDGET, "adaptive").epsilon <= 1
