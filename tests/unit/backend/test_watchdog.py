"""The shared timer of statement timeouts: alarms fire once after their deadline, never after
disarm, and disarm waits for a firing action."""

from __future__ import annotations

import threading
import time

from dpsql.backend.engines.watchdog import Watchdog


def test_an_alarm_fires_after_its_deadline_and_reports_it() -> None:
    watchdog, fired = Watchdog(), threading.Event()
    alarm = watchdog.arm(0.05, fired.set)
    assert fired.wait(5)
    assert alarm.disarm() is True


def test_a_disarmed_alarm_never_fires() -> None:
    watchdog, calls = Watchdog(), []
    alarms = [watchdog.arm(0.05, lambda: calls.append(1)) for _ in range(50)]
    assert all(alarm.disarm() is False for alarm in alarms)
    time.sleep(0.2)
    assert calls == []


def test_earlier_deadlines_fire_first_and_later_ones_wait() -> None:
    watchdog, order = Watchdog(), []
    late = watchdog.arm(0.3, lambda: order.append("late"))
    early = watchdog.arm(0.05, lambda: order.append("early"))
    time.sleep(0.15)
    assert order == ["early"]
    time.sleep(0.3)
    assert order == ["early", "late"] and early.disarm() and late.disarm()


def test_disarm_waits_for_a_firing_action() -> None:
    watchdog, started, finished = Watchdog(), threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        time.sleep(0.2)
        finished.set()

    alarm = watchdog.arm(0.01, slow)
    assert started.wait(5)
    assert alarm.disarm() is True and finished.is_set()  # disarm returned only after the action ended


def test_disarmed_alarms_do_not_pile_up() -> None:
    watchdog = Watchdog()
    for _ in range(5000):
        watchdog.arm(300, lambda: None).disarm()
    assert len(watchdog._heap) <= 2048  # swept on arm once half the heap is disarmed
