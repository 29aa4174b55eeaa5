"""The domain X as numpy arrays, and the shape of a counting query over it (all public).

A cell's `x_id` is the mixed-radix number of its column codes, the first column most
significant (as in dpsql.backend.sql.median_layer_sql). A counting query over X is a `QueryShape`: the cells
it counts and, for a GROUP BY, the group of each counted cell (groups in the order the engine
releases public keys: the product of the declared values, first key most significant).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field

import numpy as np

from dpsql.catalog.policy import MedianMechanismConfig


@dataclass(frozen=True)
class QueryShape:
    """One counting query over X: a cell mask and, for GROUP BY, each counted cell's group.

    `groups` is None for a scalar query (one group: the mask). Otherwise it holds a group id in
    [0, n_groups) for every cell of `cells` (the sorted indices of the mask).
    """

    mask: np.ndarray
    groups: np.ndarray | None = None
    n_groups: int = 1
    # Column positions the query may depend on (a public superset, e.g. the columns its SQL
    # names); None: found from the mask. Not part of the query's identity.
    columns: tuple[int, ...] | None = field(default=None, compare=False)
    cells: np.ndarray = field(init=False, repr=False, compare=False)
    key: bytes = field(init=False, repr=False, compare=False)

    @functools.cached_property
    def weights(self) -> np.ndarray:
        """The mask as float64 (built on first use: 8 bytes per cell)."""
        return self.mask.astype(np.float64)

    def __post_init__(self) -> None:
        cells = np.flatnonzero(self.mask)
        object.__setattr__(self, "cells", cells)
        digest = hashlib.sha256()
        digest.update(np.int64(self.n_groups).tobytes())
        digest.update(np.packbits(self.mask).tobytes())
        if self.groups is not None:
            digest.update(np.ascontiguousarray(self.groups, dtype=np.int32).tobytes())
        object.__setattr__(self, "key", digest.digest())

    def totals(self, weights: np.ndarray) -> np.ndarray:
        """Per-group sums of `weights` (one row per candidate if 2-D) over the counted cells."""
        if weights.ndim == 1:
            if self.groups is None:
                return np.array([weights[self.cells].sum()], dtype=weights.dtype)
            totals: np.ndarray = np.bincount(self.groups, weights=weights[self.cells], minlength=self.n_groups)
            return totals
        if self.groups is None:
            # einsum, not BLAS: predictable single-threaded speed on a busy machine.
            column: np.ndarray = np.einsum("ij,j->i", weights, self.weights)[:, None]
            return column
        picked = weights[:, self.cells]
        return np.stack([np.bincount(self.groups, weights=row, minlength=self.n_groups) for row in picked])

    def group_masks(self) -> list[np.ndarray]:
        """One cell mask per group (the constraints a hard answer adds)."""
        if self.groups is None:
            return [self.mask]
        masks = []
        for g in range(self.n_groups):
            mask = np.zeros(self.mask.shape, dtype=bool)
            mask[self.cells[self.groups == g]] = True
            masks.append(mask)
        return masks


class DomainIndex:
    """Sizes, strides and per-cell codes of the domain of a layer's configuration."""

    def __init__(self, config: MedianMechanismConfig) -> None:
        self.config = config
        self.sizes = tuple(d.size for d in config.domains)
        self.columns = config.columns
        strides, step = [], 1
        for size in reversed(self.sizes):
            strides.append(step)
            step *= size
        self.strides = tuple(reversed(strides))
        self.cells = step
        self._codes: dict[int, np.ndarray] = {}

    def codes(self, position: int) -> np.ndarray:
        """The code of column `position` for every cell, in x_id order."""
        if position not in self._codes:
            ids = np.arange(self.cells, dtype=np.int64)
            self._codes[position] = ((ids // self.strides[position]) % self.sizes[position]).astype(np.int32)
        return self._codes[position]

    def mask_from_ids(self, ids: np.ndarray) -> np.ndarray:
        """A boolean cell mask from the x_ids a mask query returned."""
        mask = np.zeros(self.cells, dtype=bool)
        mask[np.asarray(ids, dtype=np.int64)] = True
        return mask

    def shape(self, mask: np.ndarray, keys: tuple[str, ...] = (), columns: tuple[int, ...] | None = None) -> QueryShape:
        """The query shape of a mask, grouped by declared-value key columns (in query order);
        `columns`: the positions the query may depend on, when known (None: found from the mask)."""
        if not keys:
            return QueryShape(mask, columns=columns)
        group = np.zeros(self.cells, dtype=np.int64)
        valid = mask.copy()
        n_groups = 1
        for name in keys:
            position = self.columns.index(name)
            domain = self.config.domains[position]
            values = domain.size - 1  # the NULL cell belongs to no released group
            codes = self.codes(position)
            valid &= codes < values
            group = group * values + codes
            n_groups *= values
        full = QueryShape(valid, group[np.flatnonzero(valid)].astype(np.int32), n_groups, columns=columns)
        return full

