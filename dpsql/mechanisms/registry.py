"""Every mechanism, found by the type of its spec. A new mechanism is one module + one line here.

The planner prices plans with `cost`, EXPLAIN prints `describe`, and dpsql.execution releases
every noisy value through `release`: no other module dispatches on spec types. A mechanism
also declares what its releases carry (`output`: a per-row interval or confidence) and what the
ledger records of them (`parameters`), so no other module tests a mechanism's name.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpsql.accounting.cost import PrivacyCost
from dpsql.mechanisms.base import Describing, ErrorDescription, Mechanism, Output, Parameters
from dpsql.mechanisms.exponential import ExponentialIQR, ExponentialQuantile
from dpsql.mechanisms.gaussian import Gaussian, GaussianSpec
from dpsql.mechanisms.histogram_mode import HistogramMode
from dpsql.mechanisms.laplace import Laplace, LaplaceSpec
from dpsql.mechanisms.noisy_max import NoisyMaxMode
from dpsql.mechanisms.partition import PartitionSelection
from dpsql.mechanisms.ptr import PTRLaplace, Scale, SMed
from dpsql.mechanisms.rng import RandomSource
from dpsql.mechanisms.sparse_vector import MedianMechanismReservation
from dpsql.mechanisms.subsample import ASamp
from dpsql.mechanisms.trimmed_mean import TrimmedMean
from dpsql.mechanisms.variance import Variance
from dpsql.mechanisms.window_exponential import WindowExponentialIQR, WindowExponentialQuantile

MECHANISMS: tuple[Mechanism, ...] = (
    Laplace(),
    Gaussian(),
    PartitionSelection(),
    SMed(),
    PTRLaplace(),
    Scale(),
    ExponentialQuantile(),
    ExponentialIQR(),
    WindowExponentialQuantile(),
    WindowExponentialIQR(),
    ASamp(),
    NoisyMaxMode(),
    HistogramMode(),
    MedianMechanismReservation(),
    Variance(),
    TrimmedMean(),
)
_BY_SPEC: dict[type, Mechanism] = {mechanism.spec_type: mechanism for mechanism in MECHANISMS}
BY_NAME: dict[str, Mechanism] = {mechanism.name: mechanism for mechanism in MECHANISMS}


def mechanism_for(spec: object) -> Mechanism:
    """The mechanism that releases with `spec` (KeyError for an unregistered spec type)."""
    return _BY_SPEC[type(spec)]


def cost(spec: object) -> PrivacyCost:
    """What releasing with `spec` costs (pure: no data)."""
    return mechanism_for(spec).cost(spec)


def release(spec: object, raw: Any, rng: RandomSource) -> Any:
    """The noisy answer of `spec` from its exact input, after the charge."""
    return mechanism_for(spec).release(spec, raw, rng)


def describe(spec: object, context: Describing = Describing()) -> str:
    """The EXPLAIN sentence of `spec`."""
    return mechanism_for(spec).describe(spec, context)


def error(spec: object) -> ErrorDescription:
    """The public 95% interval and parameters of `spec`."""
    return mechanism_for(spec).error(spec)


def refusal(spec: object) -> str | None:
    """Why a release of `spec` can be ⊥ and what to try (None: it never refuses)."""
    return mechanism_for(spec).refusal(spec)


def output(spec: object) -> Output:
    """What a release of `spec` carries besides its value (a per-row interval, a confidence)."""
    return mechanism_for(spec).output


def parameters(spec: object) -> Parameters:
    """The public parameters the ledger records for a release of `spec`."""
    return mechanism_for(spec).parameters(spec)


def name(spec: object) -> str:
    """The name of the mechanism that releases with `spec` (noise_info, EXPLAIN, the ledger)."""
    return mechanism_for(spec).name


DEFAULT_NOISE = Laplace.name  # COUNT/SUM/AVG releases unless the policy or the query names another


def noise_spec(noise: str, sensitivity: Fraction, epsilon: Fraction, delta: Fraction) -> LaplaceSpec | GaussianSpec:
    """The spec of a COUNT/SUM/AVG release under the noise family a policy or query names
    (catalog.model.NOISES): discrete Gaussian (it spends `delta`), else discrete Laplace."""
    if spends_delta(noise):
        return GaussianSpec(sensitivity=sensitivity, epsilon=epsilon, delta=delta)
    return LaplaceSpec(sensitivity=sensitivity, epsilon=epsilon)


def spends_delta(noise: str) -> bool:
    """Whether releases under the noise family `noise` spend delta (the Gaussian mechanism's)."""
    return noise == Gaussian.name
