"""The learned public model of the Median Mechanism layer: post-processing only (docs/mechanisms.md).

`PublicModel` is a distribution w over the domain X (a float64 vector on the simplex) and the
released size n̂; its answer to a counting query is n̂·⟨mask, w⟩. It is built from a released
DP measurement (the warm start: a noisy histogram of X or noisy marginals of its columns,
projected to a non-negative distribution) and updated after every hard answer by multiplicative
weights (private multiplicative weights, Hardt & Rothblum 2010): the cells inside the query are
scaled by one factor and those outside by another so that the model's answer moves into the
slab |n̂⟨mask, w⟩ − a| <= τ_p around the released answer a (a KL / I-projection, the step size
that makes the constraint hold), then a window of earlier hard answers is revisited (cyclic
Bregman projections). Every input is public (the released measurement, the released answers,
the query shapes, n̂), so a data-free replica fed the transcript rebuilds w bit for bit.

All arithmetic is vectorised numpy over the cells (no Python loop over cells): an answer costs
one dot product, an update a few, so |X| up to 10^6 fits (8 MB for w, 125 kB per remembered
constraint as a packed bit mask).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpsql.mechanisms.median_mechanism.domain import DomainIndex, QueryShape

FLOOR = 1e-9  # total mass spread over X so that every cell stays positive (raking needs p > 0)
IPF_ITERATIONS = 12
# Older constraints one update revisits: about WORK cell operations per update (tens of ms).
WORK = 12_000_000
MIN_WINDOW = 8
MAX_WINDOW = 256


def marginal(values: np.ndarray, sizes: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """The marginal of a histogram over X on the columns `axes` (flattened, first axis most significant)."""
    cube = values.reshape(tuple(sizes))
    others = tuple(i for i in range(len(sizes)) if i not in axes)
    summed: np.ndarray = cube.sum(axis=others) if others else cube
    return summed.reshape(-1)


def _broadcast(factor: np.ndarray, sizes: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    shape = [sizes[i] if i in axes else 1 for i in range(len(sizes))]
    return factor.reshape(shape)


def project_nonnegative(noisy: np.ndarray, total: float) -> np.ndarray:
    """The closest (Euclidean) non-negative vector summing to `total`: w = max(y − θ, 0).

    Post-processing of a released noisy vector; θ by sorting (O(m log m), vectorised).
    """
    y = np.asarray(noisy, dtype=np.float64)
    total = max(float(total), 1.0)
    ordered = np.sort(y)[::-1]
    cumulative = np.cumsum(ordered) - total
    index = np.arange(1, y.size + 1)
    feasible = ordered - cumulative / index > 0
    rho = int(np.flatnonzero(feasible)[-1]) if feasible.any() else 0
    theta = cumulative[rho] / (rho + 1)
    projected: np.ndarray = np.maximum(y - theta, 0.0)
    return projected


class PublicModel:
    """A distribution over X learned from released answers (public post-processing only)."""

    def __init__(self, domain: DomainIndex, weights: np.ndarray, n_hat: float, *, tau_p: float) -> None:
        self.domain = domain
        self.n_hat = float(max(n_hat, 1.0))
        self.tau_p = float(tau_p)
        self._floor = FLOOR / domain.cells
        w = np.asarray(weights, dtype=np.float64).copy()
        w = np.maximum(w, 0.0) + self._floor
        self.w: np.ndarray = w / w.sum()
        self._packed: list[np.ndarray] = []
        self._targets: list[float] = []
        self.updates = 0

    # --- construction (from released measurements only) ---------------------------------------
    @classmethod
    def uniform(cls, domain: DomainIndex, n_hat: float, *, tau_p: float) -> PublicModel:
        """No warm start: the uniform distribution over X (the negative control of the tests)."""
        return cls(domain, np.ones(domain.cells), n_hat, tau_p=tau_p)

    @classmethod
    def from_measurement(cls, domain: DomainIndex, axes: Sequence[tuple[int, ...]], noisy: Sequence[np.ndarray],
                         *, tau_p: float) -> PublicModel:
        """The warm start from released noisy marginals (the identity histogram is the marginal on all
        columns): n̂ = the mean of their totals; each marginal projected onto the non-negative
        vectors of total n̂; then iterative proportional fitting from the uniform distribution
        (the maximum-entropy distribution with those marginals; exact for the identity)."""
        totals = [float(np.sum(y)) for y in noisy]
        n_hat = max(float(np.mean(totals)), 1.0) if totals else 1.0
        targets = [project_nonnegative(y, n_hat) / n_hat for y in noisy]
        sizes = domain.sizes
        if len(axes) == 1 and len(axes[0]) == len(sizes):
            return cls(domain, targets[0], n_hat, tau_p=tau_p)
        cube = np.full(tuple(sizes), 1.0 / domain.cells)
        floor = FLOOR / domain.cells
        for _ in range(IPF_ITERATIONS):
            for ax, target in zip(axes, targets):
                current = marginal(cube.reshape(-1), sizes, ax)
                factor = np.where(current > 0, (target + floor) / np.maximum(current, 1e-300), 1.0)
                cube *= _broadcast(factor, sizes, ax)
            cube /= cube.sum()
        return cls(domain, cube.reshape(-1), n_hat, tau_p=tau_p)

    # --- answers ------------------------------------------------------------------------------
    @property
    def constraints(self) -> int:
        """Number of (mask, answer) constraints learned so far."""
        return len(self._targets)

    def predictions(self, shape: QueryShape) -> np.ndarray:
        """The model's answer per group, in counts (float)."""
        predicted: np.ndarray = self.n_hat * shape.totals(self.w)
        return predicted

    def answer(self, shape: QueryShape) -> np.ndarray:
        """The model's answer per group, rounded to an integer (int64)."""
        rounded: np.ndarray = np.rint(self.predictions(shape)).astype(np.int64)
        return rounded

    # --- learning -----------------------------------------------------------------------------
    def update(self, shape: QueryShape, answers: np.ndarray) -> None:
        """Learn from a hard answer: multiplicative weights toward it, then revisit older answers."""
        answers = np.asarray(answers, dtype=np.float64)
        masks = shape.group_masks()
        window = min(MAX_WINDOW, max(MIN_WINDOW, WORK // max(self.domain.cells, 1)))
        older = list(range(len(self._targets) - 1, max(len(self._targets) - 1 - window, -1), -1))
        for mask, answer in zip(masks, answers):
            self._packed.append(np.packbits(mask))
            self._targets.append(float(answer))
        self.updates += 1
        for mask, answer in zip(masks, answers):
            self._project(mask, float(answer))
        for j in older:
            self._project(np.unpackbits(self._packed[j], count=self.domain.cells).view(bool), self._targets[j])
        for mask, answer in zip(masks, answers):  # the newest answers last: the model honours them
            self._project(mask, float(answer))
        np.maximum(self.w, self._floor, out=self.w)
        self.w /= self.w.sum()

    def _project(self, mask: np.ndarray, answer: float) -> None:
        """One multiplicative-weights (raking) step, in place, onto the slab of (mask, answer)."""
        p = float(np.sum(self.w, where=mask))  # no float copy of the mask
        lo = min(max((answer - self.tau_p) / self.n_hat, 0.0), 1.0)
        hi = min(max((answer + self.tau_p) / self.n_hat, 0.0), 1.0)
        target = min(max(p, lo), hi)
        if abs(target - p) <= 1e-12:
            return
        t = min(max(target, 1e-12), 1 - 1e-12)
        share = min(max(p, 1e-300), 1 - 1e-16)
        np.multiply(self.w, t / share, out=self.w, where=mask)
        np.multiply(self.w, (1 - t) / (1 - share), out=self.w, where=~mask)

    def memory_bytes(self) -> int:
        """Bytes held by the model: w and the packed constraint masks."""
        return int(self.w.nbytes + sum(p.nbytes for p in self._packed))

    def __repr__(self) -> str:
        return f"PublicModel(cells={self.domain.cells}, n_hat={self.n_hat:.0f}, constraints={self.constraints})"
