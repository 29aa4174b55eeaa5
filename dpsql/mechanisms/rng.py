"""Random sources for privacy noise. Randomness is always injected, never global.

Privacy noise comes from the operating system's CSPRNG (`SystemRandomSource`, the default).
`SeededRandomSource` is deterministic and exists for tests and explicitly marked experiments
only (docs/privacy-model.md): the server refuses it. Samplers only ever ask a source for a uniform
integer below a bound, so exactness never depends on floating point.
"""

from __future__ import annotations

import secrets
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


class SystemRandomSource:
    """Uniform integers from the OS CSPRNG (`secrets`). The default for all privacy noise."""

    __slots__ = ()

    def randbelow(self, n: int) -> int:
        """A uniform integer in [0, n) from `secrets.randbelow`.

        Args:
            n: the exclusive upper bound, n >= 1.

        Returns:
            An integer drawn uniformly from 0, 1, ..., n - 1.
        """
        _check_bound(n)
        return secrets.randbelow(n)

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
