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

Update after a hard answer (design note §2.5): candidates further than τ from an answer are
pruned and replaced by their KL projection onto the consistent slabs |n̂⟨w, m_j⟩ − a_j| <= τ_p
(cyclic Bregman projections, i.e. raking: scale the cells inside a violated slab by t/p and those
outside by (1 − t)/(1 − p)), newest constraints first, over the new constraints and a window of
older ones. The projection always returns a point, so there is no "empty candidate set" branch.
"""

from __future__ import annotations

import numpy as np

from dpsql.mmlayer.domain import DomainIndex, QueryShape

FLOOR = 1e-9  # total mass spread over X so that every cell stays positive (raking needs p > 0)
WINDOW_RECENT = 16
WINDOW_RANDOM = 8
SWEEPS = 2


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
        return np.rint(np.median(self.predictions(shape), axis=0)).astype(np.int64)

    def update(self, shape: QueryShape, answers: np.ndarray) -> None:
        """Learn from a hard answer: record its constraints, prune and project inconsistent candidates."""
        answers = np.asarray(answers, dtype=np.float64)
        far = np.abs(self.predictions(shape) - answers[None, :]) > self.tau
        pruned = np.flatnonzero(far.any(axis=1))
        masks = shape.group_masks()
        older = self._window()
        for mask, answer in zip(masks, answers):
            self._packed.append(np.packbits(mask))
            self._targets.append(float(answer))
        self.updates += 1
        self.pruned += len(pruned)
        if len(pruned) == 0:
            return
        new = [(mask.astype(np.float64), float(a)) for mask, a in zip(masks, answers)]
        old = [(np.unpackbits(self._packed[j], count=self.domain.cells).astype(np.float64), self._targets[j]) for j in older]
        block = self.W[pruned]
        for _ in range(SWEEPS):
            for mask_f, answer in new + old:
                block = self._project(block, mask_f, answer)
        self.W[pruned] = block

    def _window(self) -> list[int]:
        """Older constraints an update revisits: the most recent ones and a few random earlier ones."""
        count = len(self._targets)
        recent = list(range(count - 1, max(count - 1 - WINDOW_RECENT, -1), -1))
        earlier = count - len(recent)
        if earlier > 0:
            picks = self._rng.choice(earlier, size=min(WINDOW_RANDOM, earlier), replace=False)
            recent.extend(int(j) for j in np.sort(picks)[::-1])
        return recent

    def _project(self, block: np.ndarray, mask_f: np.ndarray, answer: float) -> np.ndarray:
        """One raking step of every row of `block` onto the slab of (mask, answer)."""
        p = block @ mask_f
        lo = min(max((answer - self.tau_p) / self.n_hat, 0.0), 1.0)
        hi = min(max((answer + self.tau_p) / self.n_hat, 0.0), 1.0)
        target = np.clip(p, lo, hi)
        violated = np.abs(target - p) > 1e-12
        if not violated.any():
            return block
        target = np.clip(target, 1e-12, 1 - 1e-12)
        p = np.clip(p, 1e-300, 1 - 1e-16)
        inside = np.where(violated, target / p, 1.0)
        outside = np.where(violated, (1 - target) / (1 - p), 1.0)
        block = block * (outside[:, None] + mask_f[None, :] * (inside - outside)[:, None])
        block = np.maximum(block, self._floor)
        return block / block.sum(axis=1, keepdims=True)
