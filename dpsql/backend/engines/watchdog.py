"""One timer thread for every statement timeout of the process (the server's statement_timeout
and the catalog's catalog_timeout): arming and disarming cost a heap push and a lock, not a thread
per statement (threading.Timer costs about 0.1-0.3 ms, a quarter of a catalog probe).

An alarm's action runs under the alarm's lock, so `disarm()` returns only once a firing action
has finished: an interrupt meant for one statement never lands on the next one.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

_COMPACT_AT = 1024  # entries in the heap before disarmed ones are swept out


class Alarm:
    """One armed deadline; `disarm()` says whether it fired."""

    def __init__(self, action: Callable[[], None], owner: Watchdog) -> None:
        self._action = action
        self._owner = owner
        self._lock = threading.Lock()
        self._state = "armed"  # -> "fired" | "done"

    @property
    def live(self) -> bool:
        return self._state == "armed"

    def fire(self) -> None:
        with self._lock:
            if self._state != "armed":
                return
            self._state = "fired"
            self._action()

    def disarm(self) -> bool:
        """Stop the alarm (waiting for a firing action to finish); True if it had fired."""
        with self._lock:
            fired = self._state == "fired"
            self._state = "done"
        if not fired:
            self._owner.disarmed()
        return fired


class Watchdog:
    """Calls an alarm's action when its deadline passes, from one daemon thread started on first use."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._dead = 0  # disarmed alarms still in the heap
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, action: Callable[[], None]) -> Alarm:
        """Call `action` once after `seconds`, unless disarmed before."""
        alarm = Alarm(action, self)
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="dpsql-watchdog", daemon=True)
                self._thread.start()
            if len(self._heap) >= _COMPACT_AT and self._dead * 2 >= len(self._heap):
                self._heap = [entry for entry in self._heap if entry[2].live]
                heapq.heapify(self._heap)
                self._dead = 0
            heapq.heappush(self._heap, (time.monotonic() + seconds, next(self._order), alarm))
            self._cond.notify()
        return alarm

    def disarmed(self) -> None:
        with self._cond:
            self._dead += 1

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, _, alarm = self._heap[0]
                if not alarm.live:
                    heapq.heappop(self._heap)
                    self._dead = max(0, self._dead - 1)
                    continue
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
            alarm.fire()  # outside the heap's lock: a slow interrupt delays no arm()


WATCHDOG = Watchdog()
