"""The structural privacy gate of the layer and its behaviour (docs/mechanisms.md, "The Median Mechanism layer").

* Public replay: a data-free replica given only the public transcript (the released warm-start
  measurement or n̂, queries, released answers, easy/hard bits) reproduces every easy answer bit
  for bit and ends with the same public model; a model seeded from the data makes it fail.
* Data access: the data are read once for the measurement (or n̂), once per test statistic, once
  more per hard answer; never for repeats or measured answers, never after halting, never by the
  model update or the calibration.
* Sensitivity: |e(D) − e(D')| <= max_rows for neighbours D, D' (hypothesis property test).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsql.mechanisms.median_mechanism.core import LayerCore, SecretHistogram, dependence, measured_answer
from dpsql.mechanisms.median_mechanism.domain import QueryShape
from dpsql.mechanisms.median_mechanism.public_model import PublicModel
from dpsql.mechanisms.median_mechanism.strategy import plan_layer
from dpsql.mechanisms.rng import SeededRandomSource
from dpsql.mechanisms.sparse_vector import calibrate
from tests.unit.mechanisms.median_mechanism.support import random_shapes, replay, run_core, tiny_domain

DOMAIN = tiny_domain(4, 5, 6)  # 5 * 6 * 7 = 210 cells


def data(seed: int, n: int = 20000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.full(DOMAIN.cells, 0.3))
    return rng.multinomial(n, weights).astype(np.int64)


def calibration(mode: str = "pure", cap: int = 40, threshold: int = 300):
    return calibrate(mode=mode, epsilon=Fraction(2), delta=Fraction(1, 10**6) if mode == "zcdp" else Fraction(0),
                     accuracy=Fraction(600), sensitivity=1, cap=cap, threshold=threshold)


def make_core(h: np.ndarray, *, mode: str = "pure", seed: int = 1, cap: int = 40) -> LayerCore:
    return LayerCore(calibration(mode, cap), DOMAIN, SecretHistogram(h), SeededRandomSource(seed))


def warm_core(h: np.ndarray, mode: str, seed: int) -> LayerCore:
    """The pmw strategy with its warm start (1-way marginals: most queries go to the sparse vector)."""
    plan = plan_layer(mode=mode, epsilon=Fraction(2), delta=Fraction(1, 10**6) if mode == "zcdp" else Fraction(0),  # type: ignore[arg-type]
                      accuracy=Fraction(600), sensitivity=1, sizes=DOMAIN.sizes, strategy="pmw",
                      measurement="1-way marginals")
    assert plan.calibration.cap >= 10
    return LayerCore(plan, DOMAIN, SecretHistogram(h), SeededRandomSource(seed))


@pytest.mark.parametrize("mode", ["pure", "zcdp"])
@pytest.mark.parametrize("dataset", [3, 4])
@pytest.mark.parametrize("warm", [False, True])
def test_public_replay_reproduces_every_easy_answer(mode: str, dataset: int, warm: bool) -> None:
    h = data(dataset)
    core = warm_core(h, mode, dataset) if warm else make_core(h, mode=mode, seed=dataset)
    shapes = random_shapes(DOMAIN, 300, seed=dataset, grouped=True)
    shapes += shapes[:40]  # exact repeats
    answered = run_core(core, shapes)
    kinds = {e.kind for e in core.transcript}
    assert {"easy", "hard", "repeat"} <= kinds
    mismatches, replica = replay(core, answered)
    assert mismatches == 0
    assert np.array_equal(replica.w, core.model.w)


def test_replay_catches_a_model_seeded_from_the_data() -> None:
    h = data(5)
    core = make_core(h, seed=5)
    core.model.w[:] = (h + 1e-9) / (h + 1e-9).sum()  # forbidden: a model built from D, not from a release
    shapes = random_shapes(DOMAIN, 300, seed=5)
    answered = run_core(core, shapes)
    mismatches, _ = replay(core, answered)
    assert mismatches > 20


def test_replay_catches_a_warm_start_from_the_exact_marginals() -> None:
    h = data(15)
    core = warm_core(h, "zcdp", 15)
    exact = [m.copy() for m in core.measured]
    core.model = PublicModel.from_measurement(DOMAIN, core.plan.axes, [m - m + e for m, e in zip(core.measured, [
        np.array([int(v) for v in __import__("dpsql.mechanisms.median_mechanism.public_model", fromlist=["marginal"]).marginal(
            h, DOMAIN.sizes, ax)]) for ax in core.plan.axes])], tau_p=core.calibration.accuracy / 8)  # forbidden
    core.measured = exact
    answered = run_core(core, random_shapes(DOMAIN, 300, seed=15))
    mismatches, _ = replay(core, answered)
    assert mismatches > 20


def test_data_access_counts() -> None:
    h = data(6)
    secret = SecretHistogram(h)
    core = LayerCore(calibration(cap=10), DOMAIN, secret, SeededRandomSource(6))
    assert secret.reads == {"size": 1, "statistic": 0, "answer": 0}
    shapes = random_shapes(DOMAIN, 400, seed=6)
    tested = hard = 0
    for shape in shapes + shapes[:50]:
        before = dict(secret.reads)
        repeat = core.cached(shape) is not None
        halted = core.halted
        release = core.answer(shape)
        delta = {k: secret.reads[k] - before[k] for k in before}
        if repeat or halted:
            assert delta == {"size": 0, "statistic": 0, "answer": 0}  # no data for repeats or after halting
            assert release is None if (halted and not repeat) else release.kind == "repeat"
            continue
        tested += 1
        assert delta["statistic"] == 1 and delta["size"] == 0
        assert delta["answer"] == (1 if release.kind == "hard" else 0)
        hard += release.kind == "hard"
    assert core.halted and hard == 10 == core.hard_answers
    assert secret.reads == {"size": 1, "statistic": tested, "answer": 10}


def test_the_model_update_never_reads_data(monkeypatch: pytest.MonkeyPatch) -> None:
    h = data(7)
    secret = SecretHistogram(h)
    core = LayerCore(calibration(cap=5), DOMAIN, secret, SeededRandomSource(7))
    reads: list[dict[str, int]] = []
    original = PublicModel.update

    def watched(self: PublicModel, shape: QueryShape, answers: np.ndarray) -> None:
        before = dict(secret.reads)
        original(self, shape, answers)
        reads.append({k: secret.reads[k] - before[k] for k in before})

    monkeypatch.setattr(PublicModel, "update", watched)
    run_core(core, random_shapes(DOMAIN, 200, seed=7))
    assert len(reads) == 5 and all(r == {"size": 0, "statistic": 0, "answer": 0} for r in reads)


def test_halting_and_repeats_after_halting() -> None:
    core = make_core(data(8), cap=3)
    shapes = random_shapes(DOMAIN, 200, seed=8)
    answered = run_core(core, shapes)
    assert core.halted and core.slots_left == 0
    assert core.answer(shapes[len(answered)]) is None  # a new query after halting: the caller's post-halt policy
    again = core.answer(answered[0])
    assert again is not None and again.kind == "repeat" and again.slots_left == 0


def test_repeat_is_keyed_by_the_mask_not_the_text() -> None:
    core = make_core(data(9))
    mask = np.zeros(DOMAIN.cells, dtype=bool)
    mask[::3] = True
    first = core.answer(QueryShape(mask))
    second = core.answer(QueryShape(mask.copy()))  # another query text with the same cells
    assert second.kind == "repeat" and np.array_equal(first.values, second.values) and second.error == first.error


def test_warm_start_reads_once_and_measured_answers_read_nothing() -> None:
    h = data(16)
    secret = SecretHistogram(h)
    plan = plan_layer(mode="zcdp", epsilon=Fraction(2), delta=Fraction(1, 10**6), accuracy=Fraction(600), sensitivity=1,
                      sizes=DOMAIN.sizes, strategy="pmw", measurement="2-way marginals")
    core = LayerCore(plan, DOMAIN, secret, SeededRandomSource(16))
    assert secret.reads == {"size": 1, "statistic": 0, "answer": 0}  # the one warm-start measurement
    measured = 0
    for shape in random_shapes(DOMAIN, 200, seed=16):
        before = dict(secret.reads)
        release = core.answer(shape)
        if release is None:
            break
        if release.kind == "measured":
            measured += 1
            assert secret.reads == before  # post-processing of the measurement: no data
            assert set(dependence(DOMAIN, shape)) <= set(next(ax for ax in plan.axes if set(dependence(DOMAIN, shape)) <= set(ax)))
    assert measured > 0


def test_named_columns_give_the_same_measured_answers_as_the_mask_scan() -> None:
    h = data(19)
    plan = plan_layer(mode="zcdp", epsilon=Fraction(2), delta=Fraction(1, 10**6), accuracy=Fraction(600), sensitivity=1,
                      sizes=DOMAIN.sizes, strategy="pmw", measurement="2-way marginals")
    core = LayerCore(plan, DOMAIN, SecretHistogram(h), SeededRandomSource(19))
    found = 0
    for shape in random_shapes(DOMAIN, 200, seed=19, grouped=True):
        deps = dependence(DOMAIN, shape)
        hinted = QueryShape(shape.mask, shape.groups, shape.n_groups, columns=deps)
        everything = QueryShape(shape.mask, shape.groups, shape.n_groups, columns=(0, 1, 2))  # a superset: never wrong
        plain = measured_answer(DOMAIN, plan, core.measured, shape)
        again = measured_answer(DOMAIN, plan, core.measured, hinted)
        assert (plain is None) == (again is None)
        if plain is not None and again is not None:
            found += 1
            assert np.array_equal(plain[0], again[0]) and plain[1] == again[1]
        assert measured_answer(DOMAIN, plan, core.measured, everything) is None  # no marginal covers all three
    assert found > 10


def test_identity_strategy_never_reads_data_after_the_histogram() -> None:
    h = data(17)
    secret = SecretHistogram(h)
    plan = plan_layer(mode="zcdp", epsilon=Fraction(2), delta=Fraction(1, 10**6), accuracy=Fraction(600), sensitivity=1,
                      sizes=DOMAIN.sizes)
    assert plan.strategy == "identity" and plan.calibration.cap == 0
    core = LayerCore(plan, DOMAIN, secret, SeededRandomSource(17))
    for shape in random_shapes(DOMAIN, 300, seed=17, grouped=True):
        release = core.answer(shape)
        assert release is not None and release.kind in ("measured", "repeat") and not core.halted
        assert np.array_equal(release.values, np.rint(shape.totals(core.measured[0].astype(float))).astype(np.int64))
    assert secret.reads == {"size": 1, "statistic": 0, "answer": 0}


def test_easy_answers_are_model_answers_and_hard_answers_carry_fresh_noise() -> None:
    h = data(10)
    core = make_core(h, cap=200)
    for shape in random_shapes(DOMAIN, 150, seed=10, grouped=True):
        release = core.answer(shape)
        if release.kind == "easy":
            assert release.error == core.calibration.accuracy
        elif release.kind == "hard":
            assert release.error == core.calibration.answer_ci95
        assert release.values.shape == (shape.n_groups,)


def test_degenerate_queries() -> None:
    h = data(11)
    core = make_core(h)
    empty = QueryShape(np.zeros(DOMAIN.cells, dtype=bool))
    full = QueryShape(np.ones(DOMAIN.cells, dtype=bool))
    assert core.answer(empty).values.shape == (1,)
    assert core.answer(full).values.shape == (1,)
    one = tiny_domain(1)  # one value + NULL: two cells
    small = LayerCore(calibration(), one, SecretHistogram(np.array([1, 0])), SeededRandomSource(1))
    assert small.answer(one.shape(np.array([True, False]), ("c0",))).values.shape == (1,)
    tiny = LayerCore(calibration(), DOMAIN, SecretHistogram(np.zeros(DOMAIN.cells, dtype=np.int64)), SeededRandomSource(2),
                     n_hat=-40)  # n̂ <= 1 is clamped, never a crash
    for shape in random_shapes(DOMAIN, 30, seed=2, grouped=True):
        assert tiny.answer(shape) is not None or tiny.halted


def test_repr_shows_no_data() -> None:
    h = data(13)
    core = make_core(h)
    run_core(core, random_shapes(DOMAIN, 20, seed=13))
    text = repr(core) + repr(core._data) + repr(core._svt)
    assert str(int(h.max())) not in text and str(int(h.sum())) not in text


# --- sensitivity of the test statistic -------------------------------------------------------------

cells = DOMAIN.cells


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    person=st.lists(st.integers(0, cells - 1), min_size=1, max_size=3),
    grouped=st.booleans(),
    max_rows=st.integers(1, 3),
)
def test_statistic_sensitivity_is_max_rows(seed: int, person: list[int], grouped: bool, max_rows: int) -> None:
    rng = np.random.default_rng(seed)
    person = person[:max_rows]  # after bounding, a person keeps at most max_rows rows, each in one cell
    base = rng.integers(0, 50, cells).astype(np.int64)
    neighbour = base.copy()
    np.add.at(neighbour, person, 1)  # D' = D plus one person's rows
    shape = random_shapes(DOMAIN, 1, seed=seed, grouped=grouped)[0]
    model = PublicModel.uniform(DOMAIN, int(base.sum()), tau_p=5)
    for _ in range(int(rng.integers(0, 3))):  # an arbitrary public state
        other = random_shapes(DOMAIN, 1, seed=seed + 1)[0]
        model.update(other, rng.integers(0, 2000, other.n_groups))
    guess = model.answer(shape)  # public: the same for D and D'
    e = SecretHistogram(base).statistic(shape, guess)
    e2 = SecretHistogram(neighbour).statistic(shape, guess)
    assert abs(e - e2) <= max_rows
    totals = shape.totals(base).astype(np.int64)
    totals2 = shape.totals(neighbour).astype(np.int64)
    assert np.abs(totals - totals2).sum() <= max_rows  # L1 of the hard answer vector (and so its L2)


def test_an_update_moves_the_model_into_the_answer_slab() -> None:
    h = data(14)
    n = int(h.sum())
    model = PublicModel.uniform(DOMAIN, n, tau_p=75)
    shape = next(s for s in random_shapes(DOMAIN, 200, seed=14) if abs(model.predictions(s)[0] - s.totals(h)[0]) > 150)
    truth = int(shape.totals(h)[0])
    model.update(shape, np.array([truth]))
    assert abs(model.predictions(shape)[0] - truth) <= 75 + 1e-6  # multiplicative weights honour the answer
    assert np.isclose(model.w.sum(), 1) and np.all(model.w > 0)


def test_warm_start_is_a_distribution_with_the_measured_marginals() -> None:
    h = data(18)
    from dpsql.mechanisms.median_mechanism.public_model import marginal

    axes = ((0, 1), (0, 2), (1, 2))
    exact = [marginal(h, DOMAIN.sizes, ax) for ax in axes]
    model = PublicModel.from_measurement(DOMAIN, axes, exact, tau_p=10)
    assert np.isclose(model.w.sum(), 1) and np.all(model.w > 0) and model.n_hat == h.sum()
    for ax, m in zip(axes, exact):
        assert np.allclose(model.n_hat * marginal(model.w, DOMAIN.sizes, ax), m, atol=0.02 * h.sum() / m.size)


@pytest.mark.parametrize("mode", ["pure", "zcdp"])
def test_measured_answers_cover_their_stated_95_percent_half_width(mode: str) -> None:
    """Over 150 independent measurements and 20 queries each, |error| <= ci95 in 93%..99.5% of cases
    (the binomial sd at 3,000 trials is 0.4%: a half-width off by a factor sqrt(cells) fails)."""
    h = data(20)
    plan = plan_layer(mode=mode, epsilon=Fraction(2), delta=Fraction(1, 10**6) if mode == "zcdp" else Fraction(0),  # type: ignore[arg-type]
                      accuracy=Fraction(600), sensitivity=1, sizes=DOMAIN.sizes, strategy="identity")
    shapes = random_shapes(DOMAIN, 20, seed=20)
    covered = total = 0
    for seed in range(150):
        core = LayerCore(plan, DOMAIN, SecretHistogram(h), SeededRandomSource(1000 + seed))
        for shape in shapes:
            release = core.answer(shape)
            assert release is not None and release.kind == "measured"
            covered += abs(int(release.values[0]) - int(shape.totals(h)[0])) <= release.error
            total += 1
    assert 0.93 <= covered / total <= 0.995, covered / total
