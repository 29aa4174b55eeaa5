"""The privacy auditor over the family of query templates, and its negative controls.

Hypothesis (per template, tests/audit/auditor.py): for every event S of the analyst's view,
P_D(S) <= e^eps P_D'(S) + delta in both directions, (eps, delta) being what the statement was
charged. The auditor certifies a lower bound on the epsilon actually spent at confidence
1 - 1e-4 (Clopper–Pearson, Bonferroni over the 8 events chosen on a held-out half of the runs);
a template fails when that bound exceeds the charge. Each negative control breaks one mechanism
in-process and must be caught by the same audit (its bound above the charge). Seeds are fixed:
every outcome is deterministic. The templates and run counts run here are the CI portion; the
long sweep over every template is `python bench/audit.py`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from tests.audit.auditor import Columns, Sample, audit, candidate_events, epsilon_bound, result_features, run_audit, sample, seed_of
from tests.audit.pairs import PAIRS, TARGET
from tests.audit.templates import BY_NAME, CONTROLS, TEMPLATES

CI_TEMPLATES = [t for t in TEMPLATES if t.ci_runs is not None]
CI_CONTROLS = [c for c in CONTROLS if c.ci]


@pytest.mark.statistical
@pytest.mark.parametrize("template", CI_TEMPLATES, ids=lambda t: t.name)
def test_the_template_passes_the_audit(template, tmp_path: Path) -> None:
    d, d2 = sample(template, PAIRS[template.pair](), tmp_path, template.ci_runs, seed=seed_of(template.name))
    # Charges are made from the SQL and the policy before any data is read: every run on either
    # database is charged the same (a charge that moved with the data would itself leak).
    assert len(set(d.charges + d2.charges)) == 1, sorted(set(d.charges + d2.charges))
    result = audit(template.name, d, d2)
    assert not result.refuted, str(result)


@pytest.mark.statistical
@pytest.mark.parametrize("control", CI_CONTROLS, ids=lambda c: c.name)
def test_the_auditor_catches_the_negative_control(control, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    template = BY_NAME[control.template]
    control.patch(monkeypatch)
    result = run_audit(template, PAIRS[template.pair](), control.runs, seed=12345, directory=tmp_path)
    assert result.refuted, f"{control.what}: not caught; {result}"


# Mechanisms audited only by the long sweep (their run cost is high, or a CI template already
# runs the same code), and CI mechanisms whose control lives on another template: a renewal is
# the layer's reservation again, broken by the single session's control.
SWEEP_ONLY = {"gaussian (ci95)", "exponential (coarse grid)", "PTR (Scale)"}
CONTROLLED_ELSEWHERE = {"median mechanism (renewal)"}


def test_every_mechanism_runs_in_ci_with_a_control() -> None:
    mechanisms = {t.mechanism for t in TEMPLATES}
    in_ci = {t.mechanism for t in CI_TEMPLATES}
    assert mechanisms - in_ci == SWEEP_ONLY
    assert in_ci - {BY_NAME[c.template].mechanism for c in CI_CONTROLS} == CONTROLLED_ELSEWHERE


# --- the auditor itself, on samples of known distributions ------------------------------------------------------


def _binary_samples(p: float, q: float, n: int, seed: int) -> tuple[Sample, Sample]:
    """Runs releasing one bit with P = p on D and q on D' (synthetic draws, not privacy noise)."""
    rng = np.random.default_rng(seed)
    d, d2 = Sample(), Sample()
    for out, prob in ((d, p), (d2, q)):
        for bit in rng.random(n) < prob:
            out.runs.append({"bit": bool(bit)})
            out.charges.append((Fraction(1), Fraction(0)))
    return d, d2


def test_the_bound_is_below_the_true_loss_and_finds_it() -> None:
    # P_D(bit) = 0.5, P_D'(bit) = 0.5 / e: the true loss is exactly 1 on the event {bit}.
    d, d2 = _binary_samples(0.5, 0.5 / math.e, 20_000, 1)
    result = audit("bit", d, d2)
    assert 0.8 < result.epsilon_lower <= 1.0 and not result.refuted, str(result)
    # Negative control: the loss 2 (P_D' = 0.5 / e^2) refutes the claim of 1.
    d, d2 = _binary_samples(0.5, 0.5 / math.e**2, 20_000, 2)
    assert audit("bit", d, d2).refuted


def test_identical_databases_certify_nothing() -> None:
    d, d2 = _binary_samples(0.3, 0.3, 4000, 3)
    assert audit("same", d, d2).epsilon_lower < 0.2


def test_delta_is_subtracted_before_the_ratio() -> None:
    # 100 of 1000 against 0 of 1000: ln(0.066 / 0.0138) at delta 0, nothing at delta 0.2.
    assert epsilon_bound(100, 0, 1000, 0.0, 1e-6) > 1.4
    assert epsilon_bound(100, 0, 1000, 0.2, 1e-6) == -math.inf


def test_events_cover_thresholds_absence_values_and_joint_shifts() -> None:
    # b and c are larger in the first 20 runs (D) than in the last 20 (D'): a shift over two cells.
    runs = [{"a": float(i % 7), "b": float(i % 5 + (i < 20)), "c": float(i % 3 + 2 * (i < 20)), "k": "x" if i % 2 else "y"}
            for i in range(40)]
    runs[0].pop("a")  # a missing key row / a ⊥ reads as None
    names = ["a", "b", "c", "k"]
    events = {e.name for e in candidate_events(Columns(runs[:20], names), Columns(runs[20:], names))}
    assert {"a is None", "k == 'x'", "a >= 3", "b <= 2", "a == 3"} <= events
    assert any(name.startswith("orthant(") for name in events) and any(name.startswith("weighted sum(") for name in events)


def test_result_features_read_keys_cells_and_noise_info(tmp_path: Path) -> None:
    import dpsql

    pair = PAIRS["people"]()
    policy = tmp_path / "policy.toml"
    policy.write_text(pair.policy, encoding="utf-8")
    with dpsql.connect(policy=policy, tables=pair.d, random_seed=1) as con:
        grouped = result_features("q:", con.execute("SELECT dept, COUNT(*) AS n, MODE(team) AS m FROM people GROUP BY dept"))
        mode = result_features("r:", con.execute("SELECT MODE(dept) AS m FROM people"))
    assert {"q:'hr'/n", "q:'engineering'/m", "q:charge", "q:m.refused", "q:n.ci95"} <= set(grouped)
    assert {"r:#0/m", "r:m.confidence"} <= set(mode)
    assert pair.d["people"]["person_id"].eq(TARGET).sum() == 5 and not pair.d2["people"]["person_id"].eq(TARGET).any()


def test_a_template_refused_before_its_charge_fails_loudly(tmp_path: Path) -> None:
    import dpsql
    from tests.audit.auditor import Template

    refused = Template.one("refused", "none", "people", "SELECT COUNT(*) FROM people WHERE secret_column = 1")
    with pytest.raises(dpsql.Error):
        run_audit(refused, PAIRS["people"](), 20, directory=tmp_path)
