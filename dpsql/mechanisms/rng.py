"""Random sources for privacy noise. Randomness is always injected, never global.

Privacy noise comes from the operating system's CSPRNG (`SystemRandomSource`, the default),
read through a fork- and thread-safe buffer that serves each byte at most once.
`SeededRandomSource` is deterministic and exists for tests and explicitly marked experiments
only (docs/privacy-model.md): the server refuses it. Samplers only ever ask a source for a uniform
integer below a bound, so exactness never depends on floating point.
"""

from __future__ import annotations

import os
import threading
from random import Random
from typing import Protocol, runtime_checkable


@runtime_checkable
class RandomSource(Protocol):
    """A source of uniform integers, the only primitive the exact samplers need."""

    def randbelow(self, n: int) -> int:
        """A uniform integer in [0, n).

        Args:
            n: the exclusive upper bound, n >= 1.

        Returns:
            An integer drawn uniformly from 0, 1, ..., n - 1.
        """
        ...


def _check_bound(n: int) -> None:
    # Both sources fail the same way on a bad bound, so callers see one error.
    if isinstance(n, bool) or not isinstance(n, int):
        msg = f"randbelow needs an int bound, got {type(n).__name__}"
        raise TypeError(msg)
    if n < 1:
        msg = f"randbelow needs a bound n >= 1, got {n}"
        raise ValueError(msg)


# Bytes fetched from os.urandom per refill. A 4 KiB getrandom() call costs about as much as
# 25 one-byte calls, and a discrete Laplace draw consumes 10-20 bytes, so one refill serves
# some 200-400 draws; larger blocks barely help and keep more unserved bytes in memory.
_BLOCK = 4096


class _UrandomPool:
    """A process-wide buffer of OS CSPRNG bytes, each served at most once.

    All `SystemRandomSource` objects draw from the one pool `_POOL`, so there is exactly one
    buffer to discard after a fork and the sources themselves hold no bytes.
    """

    __slots__ = ("buf", "lock", "pid", "pos")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.buf = b""
        self.pos = 0
        self.pid = os.getpid()

    def discard(self) -> None:
        # Drop every unserved byte (the position is past the end, so the next serve refills).
        # The old bytes object is released; nothing derived from it can be served again.
        self.buf = b""
        self.pos = 0
        self.pid = os.getpid()

    def after_fork_in_child(self) -> None:
        # Fork safety, first guard: the child starts with a copy of the parent's memory, so
        # serving the inherited unserved bytes would give parent and child the same noise (an
        # analyst seeing both answers could cancel it). Discard them before the child runs any
        # Python code. The lock is replaced too: another parent thread may have held it at the
        # moment of the fork, and nothing in the child would ever release it.
        self.lock = threading.Lock()
        self.discard()

    def __reduce__(self) -> tuple[object, ...]:
        # Never copied or pickled: a copy of the buffer would serve the same bytes twice.
        msg = "the OS randomness pool cannot be pickled or copied"
        raise TypeError(msg)


_POOL = _UrandomPool()
if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork, only spawn
    os.register_at_fork(after_in_child=_POOL.after_fork_in_child)


class SystemRandomSource:
    """Uniform integers from the OS CSPRNG (`os.urandom`). The default for all privacy noise.

    Bytes come from `os.urandom` in 4 KiB blocks held in one process-wide buffer, so a draw is
    not a system call each time. Every byte is served at most once: consumption is under a
    lock (the server's threads share the buffer), and a forked child discards the buffer it
    inherited (`os.register_at_fork`, and a pid check on every draw). A source holds no state
    of its own, so pickling or copying it carries no random bytes: the copy draws fresh ones.
    """

    __slots__ = ()

    def randbelow(self, n: int) -> int:
        """A uniform integer in [0, n), by exact rejection sampling on fresh CSPRNG bits.

        Args:
            n: the exclusive upper bound, n >= 1.

        Returns:
            An integer drawn uniformly from 0, 1, ..., n - 1.
        """
        if n.__class__ is not int or n < 1:  # the fast path skips the call for plain ints
            _check_bound(n)
            n = int(n)  # an int subclass (IntEnum, ...) is read as its value
        # Exact rejection sampling, as secrets.randbelow: k uniform bits, retry while >= n; never
        # a modulo reduction (which would favour small values). k = (n - 1).bit_length() is the
        # least k with 2**k >= n (secrets uses n.bit_length(), one bit more when n is a power of
        # two); every accepted value has probability exactly 1/n either way. A candidate takes
        # whole fresh bytes from the buffer; the surplus low bits of its last byte are dropped,
        # never kept for a later candidate. n == 1 needs no randomness.
        k = (n - 1).bit_length()
        if k == 0:
            return 0
        size = (k + 7) >> 3
        shift = (size << 3) - k
        # Thread safety: the pgwire server answers from several threads on one process. The
        # lock makes "read the position, advance it" atomic, so two threads can never be served
        # the same bytes (measured: about 0.15 us per call, uncontended).
        pool = _POOL  # one buffer per process (see _UrandomPool)
        with pool.lock:
            # Fork safety, second guard: a fork that bypassed os.register_at_fork (a C-level
            # fork() without PyOS_AfterFork_Child) still cannot reuse the parent's bytes,
            # because the buffer is tied to the pid that filled it (about 0.1 us per call).
            if pool.pid != os.getpid():
                pool.discard()
            buf, pos = pool.buf, pool.pos
            while True:
                end = pos + size
                if end > len(buf):
                    # Bytes served once: the cursor only moves forward, and a refill replaces
                    # the buffer wholesale (a leftover tail shorter than one candidate is dropped).
                    # A bound wider than a block gets a block of its own size.
                    buf = pool.buf = os.urandom(max(_BLOCK, size))
                    pos, end = 0, size
                value = (buf[pos] if size == 1 else int.from_bytes(buf[pos:end], "big")) >> shift
                # Consumed whether accepted or not (a rejected candidate is known to be >= n: its
                # bytes must not be served again, even if a later refill raises).
                pool.pos = pos = end
                if value < n:
                    return value

    def __reduce__(self) -> tuple[object, ...]:
        # Stateless: a pickled or copied source is a new handle on the (never pickled) pool.
        return (SystemRandomSource, ())

    def __repr__(self) -> str:
        return "SystemRandomSource()"


class SeededRandomSource:  # test-only
    """A deterministic source for tests and explicitly marked experiments only.

    Not cryptographically secure: anyone who learns the seed can reproduce the noise, so it
    gives no privacy. It uses only the integer methods of the Mersenne Twister
    (`randrange`/`getrandbits`), never its float methods, so the samplers stay exact.

    Attributes:
        seed: the integer seed, kept so that an experiment can record it.

    Example:
        >>> a, b = SeededRandomSource(7), SeededRandomSource(7)
        >>> [a.randbelow(100) for _ in range(5)] == [b.randbelow(100) for _ in range(5)]
        True
    """

    __slots__ = ("_gen", "seed")

    def __init__(self, seed: int) -> None:
        """Start a deterministic stream.

        Args:
            seed: any int; equal seeds give equal streams.
        """
        if isinstance(seed, bool) or not isinstance(seed, int):
            msg = f"the seed must be an int, got {type(seed).__name__}"
            raise TypeError(msg)
        self.seed = seed
        self._gen = Random(seed)  # test-only

    def randbelow(self, n: int) -> int:
        """A uniform integer in [0, n) from the seeded generator.

        Args:
            n: the exclusive upper bound, n >= 1.

        Returns:
            An integer drawn uniformly from 0, 1, ..., n - 1.
        """
        _check_bound(n)
        return self._gen.randrange(n)

    def __repr__(self) -> str:
        return f"SeededRandomSource(seed={self.seed!r})"


def seeded(seed: int) -> SeededRandomSource:  # test-only
    """A deterministic source for tests and marked experiments (see `SeededRandomSource`).

    Args:
        seed: any int.

    Returns:
        A new `SeededRandomSource`.
    """
    return SeededRandomSource(seed)


def default_source() -> RandomSource:
    """The source for privacy noise when none is injected: the OS CSPRNG.

    Returns:
        A `SystemRandomSource`.
    """
    return SystemRandomSource()
