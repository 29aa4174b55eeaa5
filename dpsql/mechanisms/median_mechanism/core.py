"""The Median Mechanism algorithm over X, apart from SQL (docs/mechanisms.md).

    answer(query):
        repeat of a released query      -> the released answer again       (no data, no test)
        halted                          -> None (the caller's post-halt policy; no data)
        med = median of the candidates  (public)
        e   = max_g |f_g(D) − med_g|    (SECRET, sensitivity Δ = max_rows)
        hard = sparse_vector.test(e)    (releases one bit)
        hard: a = f(D) + FRESH noise; candidates.update(query, a); release a
        easy: release med

The data are read only through `SecretHistogram`, whose counters the tests audit: once for the
released size n̂, once per test statistic, once more per hard answer; never after halting and
never by the candidate machinery. No branch depends on the data except through the released
bit, and nothing raises on a data-dependent condition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sparse_vector import (
    SparseVector,
    SVTCalibration,
    answer_noise,
    size_noise,
)
from dpsql.mechanisms.median_mechanism.candidates import CandidateSet
from dpsql.mechanisms.median_mechanism.domain import DomainIndex, QueryShape

AnswerKind = Literal["easy", "hard", "repeat"]


class SecretHistogram:
    """The bounded data as a histogram over X: the only holder of private values in the layer.

    `reads` counts every access by purpose, so the tests can check that the data are read only
    by the released size, the test statistics and the hard answers.
    """

    __slots__ = ("_counts", "reads")

    def __init__(self, counts: np.ndarray) -> None:
        self._counts = np.asarray(counts, dtype=np.int64)
        self.reads = {"size": 0, "statistic": 0, "answer": 0}

    def size(self) -> int:
        """The number of rows (for the noisy size n̂)."""
        self.reads["size"] += 1
        return int(self._counts.sum())

    def statistic(self, shape: QueryShape, median: np.ndarray) -> int:
        """e = max over groups of |f_g(D) − med_g|: an int with sensitivity max_rows."""
        self.reads["statistic"] += 1
        truth = shape.totals(self._counts)
        return int(np.max(np.abs(truth.astype(np.int64) - median))) if truth.size else 0

    def noisy_answer(self, shape: QueryShape, noise: Callable[[], int]) -> np.ndarray:
        """f_g(D) + fresh noise for every group (a hard answer)."""
        self.reads["answer"] += 1
        truth = shape.totals(self._counts).astype(np.int64)
        return np.array([int(t) + noise() for t in truth], dtype=np.int64)

    def __repr__(self) -> str:
        return f"SecretHistogram(cells={self._counts.size}, reads={self.reads})"


@dataclass(frozen=True)
class Release:
    """One released answer of the layer (all public)."""

    values: np.ndarray
    kind: AnswerKind
    error: int
    slots_left: int
    origin: AnswerKind  # for a repeat, how the answer was first released (easy or hard)


@dataclass(frozen=True)
class TranscriptEntry:
    """What the layer released for one query: the public transcript, in order."""

    key: bytes
    kind: AnswerKind
    values: tuple[int, ...]


class LayerCore:
    """One Median Mechanism session over X: candidates, sparse vector, repeat cache, transcript."""

    def __init__(
        self,
        calibration: SVTCalibration,
        domain: DomainIndex,
        data: SecretHistogram,
        rng: RandomSource,
        *,
        candidates: int,
        public_seed: int,
        n_hat: int | None = None,
    ) -> None:
        self.calibration = calibration
        self.domain = domain
        self.public_seed = public_seed
        self._data = data
        self._rng = rng
        self._svt = SparseVector(calibration, rng)
        # The one release of the table size, with its own accounted share (ε_n or ρ_n); a fixed
        # public size guess (tests, audits) skips it: a constant is data-independent.
        self.n_hat = data.size() + size_noise(calibration, rng) if n_hat is None else n_hat
        accuracy = calibration.accuracy
        self.candidates = CandidateSet(domain, candidates, self.n_hat, tau=accuracy / 4, tau_p=accuracy / 8, seed=public_seed)
        self.transcript: list[TranscriptEntry] = []
        self._cache: dict[bytes, Release] = {}

    @property
    def slots_left(self) -> int:
        """Hard answers still allowed (public)."""
        return self._svt.slots_left

    @property
    def hard_answers(self) -> int:
        """Hard answers so far (public)."""
        return self._svt.hard_answers

    @property
    def halted(self) -> bool:
        """Whether every hard slot is used: the layer reads no data any more (public)."""
        return self._svt.halted

    def cached(self, shape: QueryShape) -> Release | None:
        """The released answer of an exact repeat, or None (public)."""
        return self._cache.get(shape.key)

    def answer(self, shape: QueryShape) -> Release | None:
        """Answer one counting query over X; None when halted and not a repeat."""
        previous = self._cache.get(shape.key)
        if previous is not None:
            release = Release(previous.values, "repeat", previous.error, self.slots_left, previous.origin)
            self.transcript.append(TranscriptEntry(shape.key, "repeat", tuple(int(v) for v in release.values)))
            return release
        if self._svt.halted:
            return None
        median = self.candidates.median(shape)
        hard = self._svt.test(self._data.statistic(shape, median))
        if hard:
            values = self._data.noisy_answer(shape, lambda: answer_noise(self.calibration, self._rng))
            self.candidates.update(shape, values)
            release = Release(values, "hard", self.calibration.answer_ci95, self.slots_left, "hard")
        else:
            release = Release(median, "easy", self.calibration.accuracy, self.slots_left, "easy")
        self._cache[shape.key] = release
        self.transcript.append(TranscriptEntry(shape.key, release.kind, tuple(int(v) for v in release.values)))
        return release

    def __repr__(self) -> str:
        return (f"LayerCore(mode={self.calibration.mode!r}, cells={self.domain.cells}, "
                f"hard={self.hard_answers}/{self.calibration.cap}, queries={len(self.transcript)})")
