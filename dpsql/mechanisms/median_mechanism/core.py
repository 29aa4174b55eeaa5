"""The Median Mechanism layer's algorithm over X, apart from SQL (docs/mechanisms.md).

    start:  warm-start measurement of the plan (noisy histogram or marginals)  -> public model
    answer(query):
        repeat of a released query      -> the released answer again       (no data, no test)
        query over one measured marginal -> the sum of its noisy cells      (no data; identity: always)
        halted                          -> None (the caller's post-halt policy; no data)
        m   = the public model's answer (public)
        e   = max_g |f_g(D) − m_g|      (SECRET, sensitivity Δ = max_rows)
        hard = sparse_vector.test(e)    (releases one bit)
        hard: a = f(D) + FRESH noise; model.update(query, a); release a
        easy: release m

The data are read only through `SecretHistogram`, whose counters the tests audit: once for the
warm-start measurement (or the released size n̂), once per test statistic, once more per hard
answer; never after halting, never by the identity strategy's answers and never by the model.
No branch depends on the data except through the released bit, and nothing raises on a
data-dependent condition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpsql.mechanisms.median_mechanism.domain import DomainIndex, QueryShape
from dpsql.mechanisms.median_mechanism.public_model import PublicModel, marginal
from dpsql.mechanisms.median_mechanism.strategy import LayerPlan
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sampling import discrete_gaussian, discrete_laplace
from dpsql.mechanisms.sparse_vector import (
    SparseVector,
    SVTCalibration,
    answer_noise,
    size_noise,
)

AnswerKind = Literal["easy", "hard", "repeat", "measured"]


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

    def measure(self, sizes: Sequence[int], axes: Sequence[tuple[int, ...]], noise: Callable[[], int]) -> list[np.ndarray]:
        """The warm-start measurement: each marginal on `axes` plus fresh noise per cell (one read)."""
        self.reads["size"] += 1
        out = []
        for ax in axes:
            exact = marginal(self._counts, sizes, ax)
            out.append(np.array([int(v) + noise() for v in exact], dtype=np.int64))
        return out

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


def measurement_noise(plan: LayerPlan, rng: RandomSource) -> Callable[[], int]:
    """Fresh noise for one measured cell, with the plan's accounted law."""
    cal = plan.calibration
    if cal.mode == "zcdp":
        sigma2 = cal.warm_sigma2
        return lambda: discrete_gaussian(sigma2, rng)
    scale = cal.warm_scale
    return lambda: discrete_laplace(scale, rng)


def as_plan(plan: LayerPlan | SVTCalibration) -> LayerPlan:
    """A bare calibration (tests, audits) is a pmw plan without a warm-start measurement."""
    if isinstance(plan, LayerPlan):
        return plan
    return LayerPlan("pmw", plan, (), "none", "a fixed calibration")


def _group_cube(domain: DomainIndex, shape: QueryShape) -> np.ndarray:
    """The query over X as a cube: its mask (scalar query) or each cell's group id, -1 outside."""
    if shape.groups is None:
        return shape.mask.reshape(domain.sizes)
    ids = np.full(domain.cells, -1, dtype=np.int32)
    ids[shape.cells] = shape.groups
    return ids.reshape(domain.sizes)


def dependence(domain: DomainIndex, shape: QueryShape, cube: np.ndarray | None = None) -> tuple[int, ...]:
    """The columns a query's cells and groups depend on (public; vectorised over the cells)."""
    cube = _group_cube(domain, shape) if cube is None else cube
    return tuple(i for i in range(len(domain.sizes)) if bool((cube != np.take(cube, [0], axis=i)).any()))


def measured_width(domain: DomainIndex, plan: LayerPlan, shape: QueryShape) -> int | None:
    """The 95% half-width the measurement would answer this query with, or None when no measured
    marginal covers it (public: cell counts only, no measured values)."""
    if not plan.axes:
        return None
    fake = [np.zeros(int(np.prod([domain.sizes[i] for i in ax])), dtype=np.int64) for ax in plan.axes]
    found = measured_answer(domain, plan, fake, shape)
    return None if found is None else found[1]


def measured_answer(domain: DomainIndex, plan: LayerPlan, measured: Sequence[np.ndarray],
                    shape: QueryShape) -> tuple[np.ndarray, int] | None:
    """The answer of a query that depends only on the columns of one measured marginal: the sum of
    its noisy cells there (post-processing of the release, unbiased), and its 95% half-width.
    None when no measured marginal covers the query's columns."""
    if not measured:
        return None
    if len(plan.axes) == 1 and len(plan.axes[0]) == len(domain.sizes):  # the histogram of X: every query
        counts = np.bincount(shape.groups, minlength=shape.n_groups) if shape.groups is not None else [shape.cells.size]
        values = shape.totals(measured[0])  # int64: no float copy of X per query
        return np.rint(values).astype(np.int64), max((plan.sum_ci95(int(c)) for c in counts), default=0)
    cube = _group_cube(domain, shape)
    deps = set(shape.columns) if shape.columns is not None else set(dependence(domain, shape, cube))
    covering = [j for j, ax in enumerate(plan.axes) if deps <= set(ax)]
    if not covering:
        return None
    j = min(covering, key=lambda k: measured[k].size)
    ax = plan.axes[j]
    index = tuple(slice(None) if i in ax else 0 for i in range(len(domain.sizes)))
    cells = cube[index].reshape(-1)  # the query restricted to the marginal's cells
    noisy = measured[j].astype(np.float64)
    if shape.groups is None:
        values = np.array([noisy[cells].sum()])
        sizes = np.array([int(cells.sum())])
    else:
        inside = cells >= 0
        values = np.bincount(cells[inside], weights=noisy[inside], minlength=shape.n_groups)
        sizes = np.bincount(cells[inside], minlength=shape.n_groups)
    error = max((plan.sum_ci95(int(c)) for c in sizes), default=0)
    return np.rint(values).astype(np.int64), error


class LayerCore:
    """One Median Mechanism session over X: public model, sparse vector, repeat cache, transcript.

    `model` continues a model learned in an earlier (funded, halted) session: session chaining;
    the new session then takes no warm-start measurement, and `measurement` (the earlier plan and
    its released marginals) keeps answering the queries it covers. `warm_start=False` and `learn=False`
    switch the learning off (the negative controls of the utility test).
    """

    def __init__(
        self,
        plan: LayerPlan | SVTCalibration,
        domain: DomainIndex,
        data: SecretHistogram,
        rng: RandomSource,
        *,
        n_hat: int | None = None,
        model: PublicModel | None = None,
        measurement: tuple[LayerPlan, list[np.ndarray]] | None = None,
        warm_start: bool = True,
        learn: bool = True,
    ) -> None:
        self.plan = as_plan(plan)
        calibration = self.plan.calibration
        self.calibration = calibration
        self.domain = domain
        self.learn = learn
        self._data = data
        self._rng = rng
        self.transcript: list[TranscriptEntry] = []
        self._cache: dict[bytes, Release] = {}
        self.measured: list[np.ndarray] = []  # the released warm-start measurement (public)
        self.measured_plan = self.plan  # the plan that released it (its marginals and noise)
        if measurement is not None:  # a chained session keeps the earlier release
            self.measured_plan, self.measured = measurement[0], list(measurement[1])
        tau_p = calibration.accuracy / 8
        if self.plan.strategy == "identity":
            self.measured = data.measure(domain.sizes, self.plan.axes, measurement_noise(self.plan, rng))
            self.n_hat = int(self.measured[0].sum())
            self.model = PublicModel.uniform(domain, self.n_hat, tau_p=tau_p)
            self._svt: SparseVector | None = None
            return
        self._svt = SparseVector(calibration, rng)
        if model is not None:
            self.model = model
            self.n_hat = int(round(model.n_hat))
        elif self.plan.axes and calibration.warm_releases:
            # The warm start, with its accounted share; n̂ comes from it.
            self.measured = data.measure(domain.sizes, self.plan.axes, measurement_noise(self.plan, rng))
            self.n_hat = int(round(float(np.mean([m.sum() for m in self.measured]))))
            self.model = (PublicModel.from_measurement(domain, self.plan.axes, self.measured, tau_p=tau_p) if warm_start
                          else PublicModel.uniform(domain, self.n_hat, tau_p=tau_p))
        else:
            # The one release of the table size, with its own accounted share (ε_n or ρ_n); a fixed
            # public size guess (tests, audits) skips it: a constant is data-independent.
            self.n_hat = data.size() + size_noise(calibration, rng) if n_hat is None else n_hat
            self.model = PublicModel.uniform(domain, self.n_hat, tau_p=tau_p)

    @property
    def slots_left(self) -> int:
        """Hard answers still allowed (public)."""
        return self._svt.slots_left if self._svt is not None else 0

    @property
    def hard_answers(self) -> int:
        """Hard answers so far (public)."""
        return self._svt.hard_answers if self._svt is not None else 0

    @property
    def halted(self) -> bool:
        """Whether every hard slot is used: the layer reads no data any more (public). The
        identity strategy never halts."""
        return self._svt is not None and self._svt.halted

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
        # A query over the columns of a measured marginal is post-processing of the measurement:
        # released for free when its 95% half-width is within A (identity: always).
        measured = measured_answer(self.domain, self.measured_plan, self.measured, shape)
        if measured is not None and (self._svt is None or measured[1] <= self.calibration.accuracy):
            release = Release(measured[0], "measured", measured[1], self.slots_left, "measured")
            self._cache[shape.key] = release
            self.transcript.append(TranscriptEntry(shape.key, "measured", tuple(int(v) for v in release.values)))
            return release
        if self._svt is None or self._svt.halted:
            return None
        guess = self.model.answer(shape)
        hard = self._svt.test(self._data.statistic(shape, guess))
        if hard:
            values = self._data.noisy_answer(shape, lambda: answer_noise(self.calibration, self._rng))
            if self.learn:
                self.model.update(shape, values)
            release = Release(values, "hard", self.calibration.answer_ci95, self.slots_left, "hard")
        else:
            release = Release(guess, "easy", self.calibration.accuracy, self.slots_left, "easy")
        self._cache[shape.key] = release
        self.transcript.append(TranscriptEntry(shape.key, release.kind, tuple(int(v) for v in release.values)))
        return release

    def __repr__(self) -> str:
        return (f"LayerCore(strategy={self.plan.strategy!r}, mode={self.calibration.mode!r}, cells={self.domain.cells}, "
                f"hard={self.hard_answers}/{self.calibration.cap}, queries={len(self.transcript)})")
