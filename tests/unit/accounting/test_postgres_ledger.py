"""The PostgreSQL ledger beyond the shared behaviour tests (test_ledger.py runs those on it too):
several hosts' worth of processes near the budget limit, a restarted or dropped server, a
replaced database, the server's isolation default, a missing driver, and no secret in messages.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from fractions import Fraction
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from dpsql.accounting.cost import PrivacyCost
from dpsql.accounting.ledger import Ledger, open_ledger
from dpsql.accounting.store import redact
from dpsql.errors import BudgetExhaustedError, LedgerError
from tests.postgres_server import PASSWORD

SPAWN = multiprocessing.get_context("spawn")
CENT = PrivacyCost(Fraction(1, 100))


def charge(ledger: Ledger, cost: PrivacyCost, budget: PrivacyCost, analyst: str = "alice") -> None:
    ledger.charge(analyst=analyst, session="s", query="SELECT COUNT(*) FROM people", plan_hash="h",
                  mechanism="laplace", params={"scale": 1.0}, cost=cost, budget=budget)


def _host_worker(url: str, group: int, start: Any, attempts: int, budget: PrivacyCost, results: Any) -> None:
    """One process of one "host": its own connection, charging as fast as it can."""
    accepted = refused = 0
    errors: list[str] = []
    with open_ledger(url) as led:
        start.wait(timeout=60)
        for _ in range(attempts):
            try:
                charge(led, CENT, budget)
                accepted += 1
            except BudgetExhaustedError:
                refused += 1
            except Exception as err:  # noqa: BLE001 - reported to the parent
                errors.append(repr(err))
    results.put((group, accepted, refused, errors))


@pytest.mark.slow
def test_two_hosts_of_four_processes_never_overspend(postgres_url: str) -> None:
    groups, per_group, attempts = 2, 4, 40
    budget = PrivacyCost(Fraction(3, 2))  # 150 charges of 1/100 fit; 320 are attempted
    start, results = SPAWN.Barrier(groups * per_group), SPAWN.Queue()
    procs = [SPAWN.Process(target=_host_worker, args=(postgres_url, g, start, attempts, budget, results))
             for g in range(groups) for _ in range(per_group)]
    began = time.monotonic()
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    elapsed = time.monotonic() - began
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    assert [errors for *_, errors in outcomes] == [[]] * len(procs)
    accepted = sum(o[1] for o in outcomes)
    refused = sum(o[2] for o in outcomes)
    print(f"\n{len(procs)} processes: {accepted + refused} attempted, {accepted} accepted in {elapsed:.2f}s")
    assert (accepted, refused) == (150, groups * per_group * attempts - 150)
    assert all(sum(o[1] for o in outcomes if o[0] == g) > 0 for g in range(groups))  # both hosts charged
    with open_ledger(postgres_url) as led:
        assert led.spent("alice") == budget
        assert len(led.entries("alice")) == 150


def test_a_repeatable_read_server_default_does_not_break_the_lock(postgres_server: Any, postgres_url: str) -> None:
    # At REPEATABLE READ the total would be read from a snapshot taken before the lock wait; the
    # ledger sets READ COMMITTED itself. Two connections race for 100 one-charge budgets.
    dbname = postgres_url.rsplit("/", 1)[1]
    with postgres_server.admin() as admin:
        admin.execute(f'ALTER DATABASE "{dbname}" SET default_transaction_isolation = \'repeatable read\'')
    analysts = [f"a{i}" for i in range(100)]
    outcomes: list[bool] = []
    import threading

    barrier = threading.Barrier(2)

    def work(led: Ledger) -> None:
        barrier.wait()
        for analyst in analysts:
            try:
                charge(led, CENT, CENT, analyst=analyst)
                outcomes.append(True)
            except BudgetExhaustedError:
                outcomes.append(False)

    ledgers = [open_ledger(postgres_url) for _ in range(2)]  # one connection each
    threads = [threading.Thread(target=work, args=(led,)) for led in ledgers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for led in ledgers:
        led.close()
    assert outcomes.count(True) == 100 and outcomes.count(False) == 100
    with psycopg.connect(postgres_url) as raw:
        assert raw.execute("SHOW default_transaction_isolation").fetchone() == ("repeatable read",)


@pytest.mark.slow
def test_a_stopped_server_fails_closed_and_a_restart_keeps_the_budget(postgres_server: Any, postgres_url: str) -> None:
    budget = PrivacyCost(1)
    led = open_ledger(postgres_url)
    try:
        charge(led, PrivacyCost(Fraction(7, 10)), budget)
        postgres_server.stop()
        try:
            for call in (lambda: charge(led, PrivacyCost(Fraction(1, 10)), budget), lambda: led.spent("alice")):
                with pytest.raises(LedgerError) as info:
                    call()
                assert PASSWORD not in str(info.value) and "127.0.0.1" not in str(info.value)
            with pytest.raises(LedgerError):
                open_ledger(postgres_url)
        finally:
            postgres_server.start()
        # The same ledger object reconnects; the refused charges were not recorded.
        assert led.spent("alice") == PrivacyCost(Fraction(7, 10))
        with pytest.raises(BudgetExhaustedError):
            charge(led, PrivacyCost(Fraction(4, 10)), budget)
        charge(led, PrivacyCost(Fraction(3, 10)), budget)
    finally:
        led.close()
    with open_ledger(postgres_url) as fresh:
        assert fresh.spent("alice") == budget
        assert len(fresh.entries()) == 2


def test_a_dropped_connection_fails_the_operation_then_reconnects(postgres_server: Any, postgres_url: str) -> None:
    with open_ledger(postgres_url) as led:
        charge(led, CENT, PrivacyCost(1))
        with postgres_server.admin() as admin:
            killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE application_name = 'dpsql-ledger'").fetchall()
        assert killed == [(True,)]
        with pytest.raises(LedgerError):
            charge(led, CENT, PrivacyCost(1))
        charge(led, CENT, PrivacyCost(1))
        assert led.spent("alice") == PrivacyCost(Fraction(2, 100))


def test_an_unreachable_server_refuses_to_open_without_naming_the_password(postgres_server: Any) -> None:
    url = postgres_server.url().replace(f":{postgres_server.port}/", ":1/")
    with pytest.raises(LedgerError) as info:
        open_ledger(url + "?connect_timeout=2")
    assert "could not be opened" in str(info.value) and "dpsql_test:***@127.0.0.1:1/" in str(info.value)
    assert PASSWORD not in str(info.value) and quote(PASSWORD, safe="") not in str(info.value)


def test_a_dropped_and_recreated_ledger_is_refused(postgres_url: str) -> None:
    with open_ledger(postgres_url) as led:
        charge(led, PrivacyCost(Fraction(1, 2)), PrivacyCost(1))
        with psycopg.connect(postgres_url, autocommit=True) as raw:
            raw.execute("DROP TABLE dpsql_charges, dpsql_ledger")
        with pytest.raises(LedgerError):
            charge(led, PrivacyCost(Fraction(1, 2)), PrivacyCost(1))
        open_ledger(postgres_url).close()  # a fresh, empty ledger in the same database
        with pytest.raises(LedgerError, match="not the one opened"):
            charge(led, PrivacyCost(Fraction(1, 2)), PrivacyCost(1))


def test_servers_opening_together_create_the_schema_once(postgres_url: str) -> None:
    import threading

    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def open_one() -> None:
        barrier.wait()
        try:
            open_ledger(postgres_url).close()
        except LedgerError as err:
            errors.append(err)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    with psycopg.connect(postgres_url) as raw:
        assert len(raw.execute("SELECT ledger_id FROM dpsql_ledger").fetchall()) == 1


def test_every_ledger_uses_its_own_database(postgres_server: Any) -> None:
    first, second = postgres_server.new_database(), postgres_server.new_database()
    with open_ledger(first) as a, open_ledger(second) as b:
        charge(a, PrivacyCost(1), PrivacyCost(1))
        assert b.spent("alice") == PrivacyCost.zero()
        assert a.path is None and b.path is None


def test_describe_hides_the_password(postgres_url: str) -> None:
    with open_ledger(postgres_url) as led:
        assert PASSWORD not in led.describe() and "%" not in led.describe().split("@")[0]
        assert led.describe().startswith("postgresql://dpsql_test:***@127.0.0.1:")
    assert redact("postgresql://u@h/db?password=secret&sslmode=disable") == "postgresql://u@h/db?password=***&sslmode=disable"
    assert redact("postgres://u:p@h:5/db") == "postgres://u:***@h:5/db"
    assert redact("/var/lib/ledger.sqlite") == "/var/lib/ledger.sqlite" and redact(None) == "in memory"


def test_a_missing_psycopg_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now raises ImportError
    with pytest.raises(LedgerError, match=r"dpsql\[postgres\]"):
        open_ledger("postgresql://u:secret@127.0.0.1:1/db")
