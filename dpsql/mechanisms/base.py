"""The one protocol every mechanism implements, and the public facts it reports.

A mechanism keeps apart what it costs and what it does (Tumult core's privacy function vs
`__call__`): `cost(spec)` is pure and reads no data, so the planner prices a query and the
ledger is charged before the engine runs; `release(spec, raw, rng)` runs after the charge and
draws only from the injected random source. `describe(spec, context)` is the EXPLAIN text and
`error(spec)` the public 95% interval (or rank error) and parameters shown per cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from dpsql.accounting.cost import PrivacyCost
from dpsql.mechanisms.rng import RandomSource


@dataclass(frozen=True, slots=True)
class Describing:
    """What the plan around a spec adds to its EXPLAIN text (all public).

    `values`: how the column's values are mapped before ranking (e.g. " (values rounded ...)");
    `unit`: the privacy unit's column; `n_hat`: the release whose noisy count sizes Scale's base;
    `grid`: one unit of a fixed-point release in value units (1 for counts).
    """

    values: str = ""
    unit: str = "person"
    n_hat: str = "none"
    grid: Fraction = Fraction(1)


@dataclass(frozen=True, slots=True)
class ErrorDescription:
    """The public accuracy of one release: noise scale and 95% half-width in value units where
    they exist, and the mechanism's public parameters (`details`, in display order)."""

    scale: float | None = None
    ci95: float | None = None
    details: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Output:
    """What one release of a mechanism hands back besides its value: public facts of the
    mechanism, never of the data. The noisy table gets a column for each (per row, None for ⊥).

    `interval`: the release is a `Bracketed` value carrying its own 95% interval (the fine-grid
    exponential mechanism's ends); `confidence`: a `Confident` value carrying the confidence that
    it is the mode (MODE's mechanisms).
    """

    interval: bool = False
    confidence: bool = False


Parameters = tuple[tuple[str, object], ...]


class Mechanism(Protocol):
    """One DP mechanism, found by the type of its spec (dpsql.mechanisms.registry)."""

    @property
    def name(self) -> str:
        """The mechanism's name in noise_info, EXPLAIN and the ledger."""
        ...

    @property
    def spec_type(self) -> type:
        """The frozen spec class this mechanism releases with (the registry's key)."""
        ...

    @property
    def output(self) -> Output:
        """What a release carries besides its value (a per-row interval, a confidence)."""
        ...

    def cost(self, spec: Any) -> PrivacyCost:
        """What releasing with `spec` costs, from the spec alone (no data; deterministic)."""
        ...

    def parameters(self, spec: Any) -> Parameters:
        """The public parameters the ledger records for a release with `spec` (name, value), in order."""
        ...

    def release(self, spec: Any, raw: Any, rng: RandomSource) -> Any:
        """The noisy answer from the exact `raw` input, drawing only from `rng` (after the charge)."""
        ...

    def describe(self, spec: Any, context: Describing = Describing()) -> str:
        """One EXPLAIN sentence naming the mechanism and its public parameters."""
        ...

    def error(self, spec: Any) -> ErrorDescription:
        """The release's public 95% interval (or rank error) and parameters."""
        ...

    def refusal(self, spec: Any) -> str | None:
        """Why a release can be ⊥ and what to try, in public terms (None: it never refuses)."""
        ...


def fmt(value: object) -> str:
    """A number as EXPLAIN shows it (6 significant digits)."""
    return f"{float(value):.6g}"  # type: ignore[arg-type]
