"""95% half-widths of a weighted sum of independent discrete Laplace or discrete Gaussian noises.

A reconciled cell (execution/consistency.py) is a fixed linear combination of released values,
so its error is S = sum_i w_i N_i: N_i the integer noise of release i (discrete Laplace of scale
t, P(k) proportional to exp(-|k|/t), or discrete Gaussian of parameter sigma), w_i a public
weight in value units. No square-root rule: `half_width` returns an h with P(|S| > h) <= alpha
from two rigorous bounds, whichever is smaller:

- Chernoff: P(|S| > h) <= 2 exp(-lambda h) prod_i E[exp(lambda w_i N_i)] for every lambda > 0
  (symmetric noise), with the discrete Laplace moment generating function in closed form and the
  discrete Gaussian's bounded by exp(lambda^2 sigma^2 / 2) (Canonne, Kamath and Steinke 2020:
  it is subgaussian). Any lambda gives a valid bound, so minimising on a grid is safe.
- Lattice: each term rounded to the nearest multiple of a step d (|error| <= d/2 per term, so
  |S - S'| <= m d / 2 for m terms), its distribution on that lattice computed exactly from the
  noise's CDF (closed form for Laplace; summed pmf, or the normal CDF at half-integers for a
  large sigma with its Euler-Maclaurin error added), the m lattice laws convolved by FFT. Mass
  cut off (each term beyond the lattice's range), mass that the circular convolution could
  wrap round (bounded by Chernoff) and the floating-point error of the FFT are added to the tail:
  P(|S| > H d + m d / 2) <= P(|S'| > H d) <= the computed tail at H + those masses. Terms with
  (nearly) equal weights share one transform, raised to their count; the weights' rounding for
  that grouping is paid for as a deterministic error on the retained range.

Depends on public facts only (weights from the released cells' structure, noise scales): the
result is cached.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpsql.mechanisms import registry

Term = tuple[float, str, float]  # (weight in value units, "laplace" | "gaussian", t or sigma in grid units)

ALPHA = 0.05
_STEP = 0.02  # lattice step d = _STEP * sd / m: the rounding costs at most 1% of a standard deviation
_SPAN = 25.0  # the lattice spans +-_SPAN standard deviations of S
_MAX_LATTICE = 2 ** 22  # FFT length limit; beyond it Chernoff alone
_MAX_TRANSFORMS = 2 ** 27  # (distinct weights) x (FFT length) limit, for time
_ROUNDING = 1e-12  # weights are rounded to this share of the largest before caching
_GROUPING = 1e-9  # weights equal to this relative precision share one transform
_FFT_ERROR = 1e-9  # a generous bound on the FFT's floating-point error in any tail mass
_LAMBDAS = 600


def variance(family: str, scale: float) -> float:
    """The noise variance in grid units squared (a discrete Gaussian's is below sigma^2)."""
    if scale <= 0:
        return 0.0
    if family == "gaussian":
        return scale * scale
    p = math.exp(-1.0 / scale)
    return 2 * p / (-math.expm1(-1.0 / scale)) ** 2


def half_width(terms: tuple[Term, ...], alpha: float = ALPHA) -> float:
    """An h with P(|sum w_i N_i| > h) <= alpha (module docstring).

    Cells of one structure have the same weights up to floating-point noise: the weights are
    rounded to _ROUNDING of the largest (so such cells share one cached computation) and the
    rounding paid for: on the event |N_i| <= R_i (R_i = 40 t or 10 sigma, its complement's mass
    taken from alpha) it moves the sum by at most sum_i |rounding_i| R_i."""
    kept = [(abs(w), f, s) for w, f, s in terms if w != 0 and s > 0]
    if not kept:
        return 0.0
    quantum = max(w for w, _, _ in kept) * _ROUNDING
    reach = [40 * s if f == "laplace" else 10 * s for _, f, s in kept]
    slack = sum(abs(w - round(w / quantum) * quantum) * r for (w, _, _), r in zip(kept, reach))
    outside = sum(2 * math.exp(-40) if f == "laplace" else 2 * math.exp(-50) for _, f, _ in kept)
    rounded = tuple(sorted((round(w / quantum) * quantum, f, s) for w, f, s in kept))
    return _half_width(tuple(t for t in rounded if t[0] > 0), alpha - outside) + slack


@functools.lru_cache(maxsize=4096)
def _half_width(terms: tuple[Term, ...], alpha: float) -> float:
    if not terms:
        return 0.0
    best = chernoff_width(terms, alpha)
    lattice = _lattice_width(terms, alpha)
    return min(best, lattice) if lattice is not None else best


# --- Chernoff --------------------------------------------------------------------------------------


def _log_mgf(terms: tuple[Term, ...], lam: np.ndarray) -> np.ndarray:
    """sum_i log E[exp(lam w_i N_i)] for each lam (inf where a Laplace term's MGF diverges)."""
    out = np.zeros_like(lam)
    for w, family, scale in terms:
        s = lam * w
        if family == "gaussian":
            out += s * s * scale * scale / 2
            continue
        inv = 1.0 / scale
        with np.errstate(invalid="ignore", divide="ignore"):
            value = 2 * math.log(-math.expm1(-inv)) - np.log(-np.expm1(s - inv)) - np.log(-np.expm1(-s - inv))
        out += np.where(s < inv, value, np.inf)
    return out


def _lambdas(terms: tuple[Term, ...]) -> np.ndarray:
    sd = math.sqrt(sum(w * w * variance(f, s) for w, f, s in terms))
    limits = [1.0 / (w * s) for w, f, s in terms if f == "laplace"]
    top = min(limits) * (1 - 1e-9) if limits else 40.0 / sd
    return np.geomspace(top * 1e-4, top, _LAMBDAS)


def chernoff_width(terms: tuple[Term, ...], alpha: float) -> float:
    """min over lambda of (log E[exp(lambda S)] + log(2 / alpha)) / lambda."""
    lam = _lambdas(terms)
    widths = (_log_mgf(terms, lam) + math.log(2 / alpha)) / lam
    return float(np.min(widths))


def chernoff_tail(terms: tuple[Term, ...], h: float) -> float:
    """A bound on P(|S| > h)."""
    lam = _lambdas(terms)
    return float(min(1.0, 2 * np.exp(np.min(_log_mgf(terms, lam) - lam * h))))


# --- lattice ----------------------------------------------------------------------------------------


def _cdf(family: str, scale: float, n: np.ndarray) -> tuple[np.ndarray, float]:
    """P(N <= n) for integer n (floats holding integers), and a bound on its error."""
    if family == "laplace":
        inv = 1.0 / scale
        norm = 1 + math.exp(-inv)  # 1 + p
        low = np.exp(np.minimum(n, 0) * inv) / norm  # n < 0: p^(-n) / (1 + p)
        high = 1 - np.exp(-(np.maximum(n, 0) + 1) * inv) / norm  # n >= 0: 1 - p^(n+1) / (1 + p)
        return np.where(n < 0, low, high), 0.0
    reach = math.ceil(12 * scale) + 1  # beyond 12 sigma the mass is below 1e-32
    if reach <= 4_000_000:
        ks = np.arange(-reach, reach + 1, dtype=np.float64)
        pmf = np.exp(-ks * ks / (2 * scale * scale))
        cum = np.cumsum(pmf) / pmf.sum()
        index = np.clip(n + reach, -1, 2 * reach).astype(np.int64)
        return np.where(index < 0, 0.0, cum[np.maximum(index, 0)]), 1e-15 * reach
    # Large sigma: the pmf sums as the normal CDF at half-integers (midpoint rule); its
    # Euler-Maclaurin error is at most integral |f''| / 24 of the density, below 0.05 / sigma^2.
    erfc = np.frompyfunc(math.erfc, 1, 1)
    values = 0.5 * np.asarray(erfc(-(n + 0.5) / (scale * math.sqrt(2))), dtype=np.float64)
    return values, 0.05 / (scale * scale)


def _term_law(w: float, family: str, scale: float, step: float, bins: int) -> tuple[np.ndarray, float]:
    """The law of round(w N / step) on -bins..bins, and the mass cut off beyond (plus CDF error)."""
    j = np.arange(-bins, bins + 2, dtype=np.float64)
    edges = np.ceil((j - 0.5) * step / w) - 1  # w N < (j - 1/2) step  <=>  N <= edge
    cdf, error = _cdf(family, scale, edges)
    mass = np.diff(cdf)
    cut = float(cdf[0] + 1 - cdf[-1])
    return np.maximum(mass, 0.0), cut + error * (2 * bins + 2)


def _grouped(terms: tuple[Term, ...]) -> tuple[dict[tuple[float, str, float], int], float, list[Term]]:
    """Terms of nearly equal weight grouped (weight rounded to _GROUPING relative to the largest),
    the largest rounding, and the terms rounded to 0."""
    top = max(w for w, _, _ in terms)
    groups: dict[tuple[float, str, float], int] = {}
    dropped = []
    worst = 0.0
    for w, family, scale in terms:
        rounded = round(w / top / _GROUPING) * _GROUPING * top
        if rounded == 0:
            dropped.append((w, family, scale))
            continue
        worst = max(worst, abs(w - rounded) / rounded)
        key = (rounded, family, scale)
        groups[key] = groups.get(key, 0) + 1
    return groups, worst, dropped


def _lattice_width(terms: tuple[Term, ...], alpha: float) -> float | None:
    m = len(terms)
    sd = math.sqrt(sum(w * w * variance(f, s) for w, f, s in terms))
    step = _STEP * sd / m
    bins = math.ceil(_SPAN * sd / step)
    size = 1 << (2 * bins + 1).bit_length()
    groups, worst, dropped = _grouped(terms)
    if size > _MAX_LATTICE or size * len(groups) > _MAX_TRANSFORMS:
        return None
    spectrum = np.ones(size // 2 + 1, dtype=np.complex128)
    cut = 0.0
    slack = 0.0  # deterministic error on the retained range: grouping of weights, dropped terms
    for (w, family, scale), count in groups.items():
        law, lost = _term_law(w, family, scale, step, bins)
        cut += count * lost
        placed = np.zeros(size)
        placed[:bins + 1] = law[bins:]  # j >= 0 at j, j < 0 at size + j
        placed[size - bins:] = law[:bins]
        spectrum *= np.fft.rfft(placed) ** count
        reach = (bins + 1) * step / w  # the largest |N| kept
        slack += count * worst * w * reach
    for w, family, scale in dropped:  # weights below the grouping precision: bounded, not convolved
        reach = math.ceil((40 if family == "laplace" else 10) * scale)
        cdf, error = _cdf(family, scale, np.array([float(-reach - 1), float(reach)]))
        cut += float(cdf[0] + 1 - cdf[1]) + 2 * error
        slack += w * reach
    law = np.maximum(np.fft.irfft(spectrum, size), 0.0)
    wrap = chernoff_tail(terms, (size // 2 - m) * step)  # mass the circular convolution may fold back
    central = np.concatenate(([law[0]], law[1:size // 2] + law[size - 1:size // 2:-1]))
    inside = np.cumsum(central)  # inside[H] = P(|S'| <= H step) over the retained mass
    tails = law.sum() - inside + cut + wrap + _FFT_ERROR
    ok = np.nonzero(tails <= alpha)[0]
    if ok.size == 0:
        return None
    return float(ok[0] * step + m * step / 2 + slack)


def noise_term(spec: object) -> tuple[str, float]:
    """(family, scale in grid units) of a Laplace or Gaussian release's noise: the discrete
    Laplace scale t, or the discrete Gaussian's sigma."""
    if registry.name(spec) == "gaussian":
        return "gaussian", float(spec.sigma2) ** 0.5  # type: ignore[attr-defined]
    return "laplace", float(spec.scale)  # type: ignore[attr-defined]
