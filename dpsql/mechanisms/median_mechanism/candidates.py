"""The candidate databases of the Median Mechanism layer: public post-processing only.

`CandidateSet` holds N fractional histograms over X (rows of W on the simplex; predictions are
n̂ · W @ mask) and the constraints learned from hard answers. It sees only public inputs: the
query shapes, the released answers, the released size n̂, and its own random stream.

That stream is `numpy.random.default_rng(public_seed)`. It is POST-PROCESSING randomness, not
privacy noise: it only draws the candidates' priors and which older constraints a projection
revisits, its seed is public (recorded in the ledger), and privacy never depends on it (the
sparse-vector test and the hard answers draw their noise from the secure RandomSource in
dpsql.mechanisms). Anyone holding the transcript and the seed can rebuild this object and every
easy answer bit for bit; the replay test does exactly that.

Update after a hard answer (docs/mechanisms.md): candidates further than τ from an answer are
pruned and replaced by their KL projection onto the consistent slabs |n̂⟨w, m_j⟩ − a_j| <= τ_p
(cyclic Bregman projections, i.e. raking: scale the cells inside a violated slab by t/p and those
outside by (1 − t)/(1 − p)), newest constraints first, over the new constraints and a window of
older ones. The projection always returns a point, so there is no "empty candidate set" branch.
"""

from __future__ import annotations

import numpy as np

from dpsql.mechanisms.median_mechanism.domain import DomainIndex, QueryShape

FLOOR = 1e-9  # total mass spread over X so that every cell stays positive (raking needs p > 0)
SWEEPS = 2
# Older constraints one update revisits, sized so an update costs about WORK cell operations
# (tens of milliseconds): every constraint on small domains, a window of recent and random ones on large.
WORK = 40_000_000
MIN_WINDOW = 24


class CandidateSet:
    """N candidate histograms, their median answers and their update (all public)."""

    def __init__(self, domain: DomainIndex, count: int, n_hat: int, *, tau: float, tau_p: float, seed: int) -> None:
        if count < 1:
            raise ValueError("at least one candidate is needed")
        # Post-processing randomness (public seed), NOT privacy noise: see the module docstring.
        self._rng = np.random.default_rng(seed)
        self.domain = domain
        self.n_hat = float(max(n_hat, 1))
        self.tau = float(tau)
        self.tau_p = float(tau_p)
        self.W = np.stack([domain.marginal_prior(self._rng, diverse=j > 0) for j in range(count)])
        self._floor = FLOOR / domain.cells
        self._packed: list[np.ndarray] = []
        self._targets: list[float] = []
        self.updates = 0
        self.pruned = 0

    @property
    def constraints(self) -> int:
        """Number of (mask, answer) constraints learned so far."""
        return len(self._targets)

    def predictions(self, shape: QueryShape) -> np.ndarray:
        """Candidate answers in counts, shape (N, groups)."""
        return self.n_hat * shape.totals(self.W)

    def median(self, shape: QueryShape) -> np.ndarray:
        """The median candidate answer per group, rounded to an integer (int64)."""
        median: np.ndarray = np.rint(np.median(self.predictions(shape), axis=0)).astype(np.int64)
        return median

    def update(self, shape: QueryShape, answers: np.ndarray) -> None:
        """Learn from a hard answer: record its constraints, prune and project inconsistent candidates."""
        answers = np.asarray(answers, dtype=np.float64)
        far = np.abs(self.predictions(shape) - answers[None, :]) > self.tau
        pruned = np.flatnonzero(far.any(axis=1))
        masks = shape.group_masks()
        older = self._window(max(MIN_WINDOW, WORK // (SWEEPS * max(len(pruned), 1) * self.domain.cells) - len(masks)))
        for mask, answer in zip(masks, answers):
            self._packed.append(np.packbits(mask))
            self._targets.append(float(answer))
        self.updates += 1
        self.pruned += len(pruned)
        if len(pruned) == 0:
            return
        new = [(mask, float(a)) for mask, a in zip(masks, answers)]
        old = [(np.unpackbits(self._packed[j], count=self.domain.cells).view(bool), self._targets[j]) for j in older]
        block = self.W[pruned]
        block /= block.sum(axis=1, keepdims=True)
        for _ in range(SWEEPS):
            for mask, answer in new + old:
                self._project(block, mask, answer)
        np.maximum(block, self._floor, out=block)
        block /= block.sum(axis=1, keepdims=True)
        self.W[pruned] = block

    def _window(self, size: int) -> list[int]:
        """Older constraints an update revisits, newest first: all of them, or the most recent two
        thirds of `size` and a random third of the earlier ones (public stream)."""
        count = len(self._targets)
        if count <= size:
            return list(range(count - 1, -1, -1))
        recent = list(range(count - 1, count - 1 - (2 * size) // 3, -1))
        earlier = count - len(recent)
        if earlier > 0:
            picks = self._rng.choice(earlier, size=min(size - len(recent), earlier), replace=False)
            recent.extend(int(j) for j in np.sort(picks)[::-1])
        return recent

    def _project(self, block: np.ndarray, mask: np.ndarray, answer: float) -> None:
        """One raking step, in place, of every row of `block` onto the slab of (mask, answer)."""
        # Rows sum to 1 (raking keeps the sum); einsum, not BLAS: no thread pool on a busy machine.
        p = np.einsum("ij,j->i", block, mask.astype(np.float64))
        lo = min(max((answer - self.tau_p) / self.n_hat, 0.0), 1.0)
        hi = min(max((answer + self.tau_p) / self.n_hat, 0.0), 1.0)
        target = np.clip(p, lo, hi)
        for j in np.flatnonzero(np.abs(target - p) > 1e-12):
            t = min(max(target[j], 1e-12), 1 - 1e-12)
            share = min(max(p[j], 1e-300), 1 - 1e-16)
            block[j] *= np.where(mask, t / share, (1 - t) / (1 - share))
