"""The mechanism contract, run over every mechanism of the registry (docs/architecture.md, "Adding a mechanism").

Every registered mechanism needs an example below (a spec, an exact input, and the public
parameters its EXPLAIN text must name); a mechanism added without one fails
`test_every_registered_mechanism_has_an_example`. The contract:
- its spec type is a frozen dataclass and the registry finds the mechanism by it;
- cost(spec) takes the spec alone, is deterministic, and is the sum of its PrivacyLoss terms;
- release(spec, raw, rng) draws only from the injected random source (the process-wide sources
  raise while it runs; a negative control shows that this catches a mechanism that uses them);
- describe(spec) names the parameters; error(spec) reports only noise_info keys; a mechanism
  that can refuse (⊥) says why in public terms;
- its declared `output` says what its release carries (a Bracketed interval, a Confident
  confidence) and `parameters(spec)` are the ledger's JSON-ready public pairs; a negative
  control shows that a release carrying an undeclared interval is caught.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import random
import secrets
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest

from dpsql.accounting.cost import PrivacyCost
from dpsql.mechanisms import registry
from dpsql.mechanisms.base import Describing, Mechanism, Output
from dpsql.mechanisms.confidence import Confident
from dpsql.mechanisms.exponential import ExponentialIQRSpec, ExponentialQuantileSpec
from dpsql.mechanisms.gaussian import GaussianSpec
from dpsql.mechanisms.histogram_mode import HistogramModeSpec
from dpsql.mechanisms.laplace import Laplace, LaplaceSpec
from dpsql.mechanisms.noisy_max import NoisyMaxModeSpec
from dpsql.mechanisms.partition import PartitionSelectionSpec
from dpsql.mechanisms.ptr import PTRLaplaceSpec, PTRTest, ScaleInput, ScaleSpec, SMedSpec
from dpsql.mechanisms.ranks import Histogram
from dpsql.mechanisms.rng import SeededRandomSource, SystemRandomSource
from dpsql.mechanisms.sparse_vector import calibrate
from dpsql.mechanisms.subsample import ASampSpec
from dpsql.mechanisms.trimmed_mean import TrimmedMeanSpec
from dpsql.mechanisms.variance import VarianceSpec
from dpsql.mechanisms.window_exponential import Bracketed, IQRIntervalSpec, QuantileIntervalSpec, WindowExponentialQuantile
from dpsql.result import NOISE_KEYS

DELTA = Fraction(1, 10**6)
DATA = Histogram.from_counts([(v, 30 + (v % 7)) for v in range(0, 101)])  # about 3,300 rows on 0..100


@dataclass(frozen=True)
class Example:
    spec: Any
    raw: Any
    names: tuple[str, ...]  # substrings describe(spec) must contain


EXAMPLES: dict[str, Example] = {
    "laplace": Example(LaplaceSpec(Fraction(3), Fraction(1, 2)), 1000, ("discrete Laplace", "sensitivity 3", "scale 6", "epsilon 0.5")),
    "gaussian": Example(GaussianSpec(Fraction(3), Fraction(1, 2), DELTA), 1000,
                        ("discrete Gaussian", "L2 sensitivity 3", "sigma", "epsilon 0.5", "delta 1e-06")),
    "partition_selection": Example(PartitionSelectionSpec(2, Fraction(1, 2), DELTA), 50,
                                   ("scale 4", "released when >=", "epsilon 0.5", "delta 1e-06")),
    "smed": Example(SMedSpec(PTRTest(Fraction(1), DELTA), Fraction(1, 2), 2), DATA,
                    ("SMed", "rank-rho_0.5", "rank shift s=2", "tau", "epsilon 1", "delta 1e-06")),
    "ptr-laplace": Example(PTRLaplaceSpec(PTRTest(Fraction(1, 2), DELTA), Fraction(1, 2), Fraction(1, 2), 2, Fraction(10)), DATA,
                           ("PTR-Laplace", "b=10", "rank shift s=2", "epsilon 0.5 + 0.5", "delta 1e-06")),
    "scale": Example(ScaleSpec(Fraction(1, 4), DELTA, 1, 2), ScaleInput(DATA, 3300),
                     ("Scale", "rank shift s=2", "epsilon 4 x 0.25", "delta 1e-06")),
    "exponential": Example(ExponentialQuantileSpec(Fraction(1), Fraction(1, 2), 1, 0, 100), DATA,
                           ("exponential mechanism", "101 public candidates", "score sensitivity 1", "epsilon 1")),
    "exponential-iqr": Example(ExponentialIQRSpec(Fraction(1), 1, 0, 100), DATA,
                               ("two exponential-mechanism quartiles", "101 public candidates", "score sensitivity 3", "epsilon 2 x 0.5")),
    "exponential-fine": Example(QuantileIntervalSpec(Fraction(1), Fraction(1, 2), 1, 0, 100), DATA,
                                ("exponential mechanism", "101 public candidates", "score sensitivity 1", "95% interval",
                                 "epsilon 0.4 (value) + 0.6 (interval)")),
    "exponential-fine-iqr": Example(IQRIntervalSpec(Fraction(1), 1, 0, 100), DATA,
                                    ("two exponential-mechanism quartiles", "101 public candidates", "score sensitivity 3",
                                     "95% interval", "epsilon 2 x 0.2 (values) + 0.6 (interval)")),
    "noisy-max": Example(NoisyMaxModeSpec(Fraction(1), 3, ("a", "b", "c")), {"a": 150, "b": 20},
                         ("report-noisy-max", "3 declared values", "scale 3", "epsilon 1", "delta 0")),
    "stable-histogram": Example(HistogramModeSpec(Fraction(1), DELTA, 3), {"a": 150, "b": 20, "c": 1},
                                ("stable-histogram", "scale 6", "sensitivity 3", "report-noisy-max", "epsilon 0.5 + 0.5",
                                 "delta 1e-06")),
    "asamp": Example(ASampSpec(PTRTest(Fraction(1), DELTA), blocks=200), {"a": 150, "b": 20},
                     ("A_samp", "200 subsamples", "2T=2", "epsilon 1", "delta 1e-06")),
    "variance": Example(
        VarianceSpec(LaplaceSpec(Fraction(3), Fraction(1, 3)), LaplaceSpec(Fraction(150), Fraction(1, 3)),
                     LaplaceSpec(Fraction(7500), Fraction(1, 3)), Fraction(1), Fraction(1), Fraction(50), True, True),
        (3300, 1200, 2_750_000), ("STDDEV_SAMP", "centred sum of squares", "epsilon 0.333333 + 0.333333 + 0.333333", "[0, 50]")),
    "trimmed-mean": Example(TrimmedMeanSpec(Fraction(1), Fraction(1, 10), 1, 0, 100), DATA,
                            ("trimmed mean", "p=0.1", "101 public candidates", "sensitivity 1 x 2^20", "epsilon 4 x 0.25",
                             "delta 0")),
    "median_mechanism": Example(
        calibrate(mode="pure", epsilon=Fraction(1), delta=Fraction(0), accuracy=Fraction(1000), sensitivity=1),
        1000, ("sparse vector (pure)", "threshold", "sensitivity 1", "hard answers", "epsilon 1")),
}

FAMILIES = ("discrete_laplace", "discrete_gaussian", "approx_dp", "zcdp", "bounded_range")


class CountingSource:
    """The injected source: seeded, and counting its draws."""

    def __init__(self, seed: int) -> None:
        self._source = SeededRandomSource(seed)
        self.draws = 0

    def randbelow(self, n: int) -> int:
        self.draws += 1
        return self._source.randbelow(n)


def forbid_global_randomness(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every process-wide random source raise (a mechanism must use the injected one)."""

    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError("a mechanism drew from a process-wide random source, not the injected one")

    for module, names in ((secrets, ("randbelow", "randbits", "token_bytes", "choice")),
                          (random, ("random", "randrange", "randint", "getrandbits", "choice", "shuffle")),
                          (os, ("urandom",)),
                          # The OS source is buffered, so os.urandom alone no longer sees every
                          # draw from it: a mechanism building its own SystemRandomSource would
                          # be served from the buffer without a system call.
                          (SystemRandomSource, ("randbelow",))):
        for name in names:
            monkeypatch.setattr(module, name, refuse)


def release_twice(mechanism: Mechanism, example: Example, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, int]:
    """Two releases from the same seed, with the global sources forbidden."""
    with monkeypatch.context() as patch:
        forbid_global_randomness(patch)
        first, second = CountingSource(7), CountingSource(7)
        one = mechanism.release(example.spec, example.raw, first)
        two = mechanism.release(example.spec, example.raw, second)
    return one, two, first.draws


@pytest.fixture(params=[m.name for m in registry.MECHANISMS])
def mechanism(request: pytest.FixtureRequest) -> Mechanism:
    return registry.BY_NAME[request.param]


@pytest.fixture
def example(mechanism: Mechanism) -> Example:
    return EXAMPLES[mechanism.name]


def test_every_registered_mechanism_has_an_example() -> None:
    assert sorted(m.name for m in registry.MECHANISMS) == sorted(EXAMPLES)
    assert len({m.spec_type for m in registry.MECHANISMS}) == len(registry.MECHANISMS)


class TestMechanismContract:
    """Run over every registered mechanism (the `mechanism` fixture is parametrised by the registry)."""

    def test_spec_is_frozen_and_finds_its_mechanism(self, mechanism: Mechanism, example: Example) -> None:
        assert type(example.spec) is mechanism.spec_type
        assert dataclasses.is_dataclass(example.spec) and type(example.spec).__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert registry.mechanism_for(example.spec) is mechanism

    def test_cost_is_data_free_and_deterministic(self, mechanism: Mechanism, example: Example) -> None:
        assert list(inspect.signature(mechanism.cost).parameters) == ["spec"]  # no data can reach it
        first, second = mechanism.cost(example.spec), registry.cost(example.spec)
        assert first == second and first.losses == second.losses
        assert first.epsilon > 0
        assert first.losses, "a mechanism's cost lists its privacy loss terms"
        assert sum((PrivacyCost(loss.epsilon, loss.delta) for loss in first.losses), PrivacyCost.zero()) == first
        for loss in first.losses:
            assert loss.family in FAMILIES and loss.mechanism == mechanism.name
            if loss.family == "discrete_laplace":
                assert loss.scale is not None and loss.sensitivity is not None
                assert loss.epsilon == loss.sensitivity / loss.scale
            if loss.family == "discrete_gaussian":
                assert loss.sigma2 is not None and loss.sensitivity is not None
            if loss.family == "zcdp":
                assert loss.rho is not None

    def test_release_uses_only_the_injected_rng(self, mechanism: Mechanism, example: Example,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
        one, two, draws = release_twice(mechanism, example, monkeypatch)
        assert draws > 0, "a release draws its noise from the injected source"
        assert one == two, "the same seed gives the same release"

    def test_describe_names_the_parameters(self, mechanism: Mechanism, example: Example) -> None:
        text = mechanism.describe(example.spec, Describing())
        assert text == registry.describe(example.spec)
        missing = [name for name in example.names if name not in text]
        assert not missing, f"{mechanism.name}: {text!r} does not name {missing}"

    def test_error_reports_noise_info_keys(self, mechanism: Mechanism, example: Example) -> None:
        error = mechanism.error(example.spec)
        assert {key for key, _ in error.details} <= set(NOISE_KEYS)
        assert error.ci95 is None or error.ci95 > 0
        assert error.scale is None or error.scale > 0

    def test_a_mechanism_that_can_refuse_says_why(self, mechanism: Mechanism, example: Example) -> None:
        reason = mechanism.refusal(example.spec)
        # A PTR stability test, or a noisy threshold the released value must pass (the histogram mode): ⊥ is possible.
        tested = "cap" in dict(mechanism.error(example.spec).details) or mechanism.name == "stable-histogram"
        assert (reason is not None) == tested
        assert reason is None or (reason.endswith(".") and "Try" in reason)


def check_output(mechanism: Mechanism, released: Any) -> None:
    """The release carries exactly what the mechanism's `output` declares (⊥ carries nothing)."""
    declared = mechanism.output
    assert isinstance(declared, Output)
    assert isinstance(released, Bracketed) == declared.interval, (mechanism.name, released)
    if declared.confidence:
        assert isinstance(released, Confident) or not released, (mechanism.name, released)
    else:
        assert not isinstance(released, Confident), (mechanism.name, released)


class TestMechanismOutput:
    """What a release carries besides its value, declared by the mechanism (no name lists elsewhere)."""

    def test_release_carries_what_output_declares(self, mechanism: Mechanism, example: Example,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
        one, _, _ = release_twice(mechanism, example, monkeypatch)
        check_output(mechanism, one)

    def test_parameters_are_public_json_pairs(self, mechanism: Mechanism, example: Example) -> None:
        pairs = mechanism.parameters(example.spec)
        assert pairs == registry.parameters(example.spec)
        assert all(isinstance(name, str) and isinstance(value, (str, int)) for name, value in pairs)
        assert len({name for name, _ in pairs}) == len(pairs)


class _UndeclaredInterval(WindowExponentialQuantile):
    """A broken fine-grid quantile that forgets to declare the interval its release carries."""

    output = Output()


def test_negative_control_an_undeclared_interval_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = _UndeclaredInterval()
    one, _, _ = release_twice(broken, EXAMPLES["exponential-fine"], monkeypatch)
    with pytest.raises(AssertionError):
        check_output(broken, one)


class _GlobalRandomLaplace(Laplace):
    """A broken Laplace that draws its noise from the process-wide CSPRNG."""

    def release(self, spec: LaplaceSpec, raw: int, rng: Any) -> int:
        return int(raw) + secrets.randbelow(7) - 3


def test_negative_control_a_mechanism_using_global_randomness_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AssertionError, match="process-wide random source"):
        release_twice(_GlobalRandomLaplace(), EXAMPLES["laplace"], monkeypatch)


class _OwnSourceLaplace(Laplace):
    """A broken Laplace that ignores the injected source and builds the OS one itself."""

    def release(self, spec: LaplaceSpec, raw: int, rng: Any) -> int:
        return int(raw) + SystemRandomSource().randbelow(7) - 3


def test_negative_control_a_mechanism_using_its_own_os_source_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Fill the process-wide buffer first, so no os.urandom call would happen during the release.
    SystemRandomSource().randbelow(2)
    with pytest.raises(AssertionError, match="process-wide random source"):
        release_twice(_OwnSourceLaplace(), EXAMPLES["laplace"], monkeypatch)
