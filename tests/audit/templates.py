"""The family of query templates the auditor runs, and the negative controls it must catch.

Every template is ordinary SQL an analyst could send, at epsilon 1 (the pair's policy default;
delta 1e-6 where a mechanism needs it). A negative control is one template run with one
mechanism deliberately broken in-process (a pytest MonkeyPatch on the real code path, undone
afterwards); the auditor must certify an epsilon above what that statement is charged.

Adding a template: append a `Template` to TEMPLATES (a name, the mechanism it exercises, the
pair it runs on, its statements); add a `Control` naming it when it exercises a mechanism no
control covers yet. tests/audit/README.md says more.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import pytest
from sqlglot import exp

from dpsql.aggregates.sums import SUM
from dpsql.analysis import joins
from dpsql.analysis import post_processing as post
from dpsql.backend.sql import join_sql
from dpsql.ir.join import JoinedTable
from dpsql.mechanisms import ptr, subsample
from dpsql.mechanisms.gaussian import GaussianSpec
from dpsql.mechanisms.histogram_mode import HistogramModeSpec
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.median_mechanism import core as layer_core
from dpsql.mechanisms.noisy_max import NoisyMaxModeSpec
from dpsql.mechanisms.partition import PartitionSelectionSpec
from dpsql.mechanisms.window_exponential import WindowQuantileSpec, _rho
from dpsql.planner import build as planner
from dpsql.result import NoisyResult
from dpsql.session import Session
from tests.audit.auditor import Template
from tests.statistical.test_join_sensitivity import drop_bound_after_join, drop_fanout

one = Template.one
D6 = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6)"
GAUSS = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'gaussian', epsilon = 1, delta = 1e-5)"

# The Median Mechanism pair ties ages to departments, so these queries are far from the model
# its noisy 1-way marginals give: the sparse vector finds them hard (fresh-noise answers), and the
# person's cell (hr, 90) is in each. Two queries at most use the reservation's 2 hard slots, so a
# session is charged its reservation once (epsilon 2); the next session renews it.
MM_SESSION = (
    "SELECT COUNT(*) FROM people WHERE dept = 'hr' AND age >= 60",
    "SELECT dept, COUNT(*) FROM people WHERE age >= 60 GROUP BY dept",
)
MM_NEXT_SESSION = (
    "SELECT COUNT(*) FROM people WHERE dept IN ('hr', 'sales') AND age >= 45",
    "SELECT COUNT(*) FROM people WHERE dept = 'hr' OR age >= 75",
)

TEMPLATES: tuple[Template, ...] = (
    # discrete Laplace on counts, sums, averages, variances
    one("count", "laplace", "people", "SELECT COUNT(*) FROM people", ci_runs=500),
    one("count_col", "laplace", "people", "SELECT COUNT(income) FROM people"),
    one("count_distinct", "laplace", "people", "SELECT COUNT(DISTINCT person_id) FROM people", ci_runs=500),
    one("sum", "laplace", "people", "SELECT SUM(income) FROM people", ci_runs=500),
    one("avg", "laplace", "people", "SELECT AVG(income) FROM people", ci_runs=500),
    one("variance", "laplace (variance)", "people", "SELECT VARIANCE(age) FROM people"),
    one("stddev", "laplace (variance)", "people", "SELECT STDDEV_POP(income) FROM people", ci_runs=500),
    # GROUP BY public domains, derived domains, grouping sets
    one("group_public", "laplace", "people", "SELECT dept, COUNT(*), SUM(age) FROM people GROUP BY dept", ci_runs=500),
    one("group_derived", "laplace", "people", "SELECT age // 10 * 10 AS decade, COUNT(*) FROM people GROUP BY decade", ci_runs=500),
    one("group_case", "laplace", "people",
        "SELECT CASE WHEN age >= 65 THEN 'senior' ELSE 'other' END AS band, SUM(income) FROM people GROUP BY band"),
    one("group_date", "laplace", "people", "SELECT date_trunc('year', hired) AS y, COUNT(*) FROM people GROUP BY y", ci_runs=500),
    # The sets as released (consistent = false): the reconciliation is post-processing of them
    # (free), and auditing the releases themselves keeps the one-set control's power.
    one("rollup", "grouping sets", "people", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, consistent = false) "
        "dept, grade, COUNT(*) AS n FROM people GROUP BY ROLLUP(dept, grade)", ci_runs=300),
    one("rollup_consistent", "grouping sets", "people",
        "SELECT dept, grade, COUNT(*) AS n FROM people GROUP BY ROLLUP(dept, grade)", ci_runs=300),
    one("cube", "grouping sets", "people",
        f"{D6} dept, region, COUNT(*) AS n FROM people GROUP BY CUBE(dept, region)"),
    # post-processing
    one("outer", "post-processing", "people",
        "SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t WHERE n > 100 ORDER BY n DESC", ci_runs=500),
    one("cte_window", "post-processing", "people",
        "WITH t AS (SELECT dept, COUNT(*) AS n, SUM(income) AS s FROM people GROUP BY dept) "
        "SELECT dept, s / n AS mean, RANK() OVER (ORDER BY n DESC) AS r FROM t"),
    one("union_all", "post-processing", "people",
        "SELECT 'all' AS k, COUNT(*) AS n FROM people UNION ALL SELECT 'old', COUNT(*) FROM people WHERE age > 60", ci_runs=300),
    # joins
    one("join_public", "join (public)", "people", "SELECT COUNT(*) FROM people p JOIN depts d ON p.dept = d.name", ci_runs=500),
    one("join_public_group", "join (public)", "people",
        "SELECT d.floor, SUM(p.age) FROM people p JOIN depts d ON p.dept = d.name GROUP BY d.floor"),
    one("semi_join", "join (public)", "people",
        "SELECT COUNT(*) FROM people WHERE dept IN (SELECT name FROM depts WHERE floor >= 3)", ci_runs=500),
    one("join_private", "join (private)", "people", "SELECT COUNT(*) FROM people p JOIN visits v ON p.person_id = v.person_id", ci_runs=500),
    one("join_private_sum", "join (private)", "people", "SELECT SUM(v.minutes) FROM people p JOIN visits v USING (person_id)"),
    # A per-person aggregate, then a histogram of it (analysis/per_unit.py): the relation has one
    # row per person (the outer release's max_rows is 1), so H0 is (1, 0)-DP with COUNT's
    # sensitivity 1 and, for SUM(s), the per-person range's width m U = 3 x 60. The person's 5
    # visits are bounded to m = 3: they land in bucket n = 3, and their 3 x 60 minutes in bucket
    # s // 60 = 3, empty in D' (a key that exists only because the range is m U), moving its
    # count by 1 and its total by 180: both sensitivities attained. These three templates run in CI
    # at their controls' run counts, so the CI audit has the power each control shows.
    one("per_unit_histogram", "per-person aggregate", "people",
        "SELECT n, COUNT(*) AS persons FROM (SELECT person_id, COUNT(*) AS n FROM visits GROUP BY person_id) t GROUP BY n",
        ci_runs=1000),
    one("per_unit_sum_buckets", "per-person aggregate", "people",
        "SELECT s // 60 AS b, COUNT(*) AS persons, SUM(s) AS total "
        "FROM (SELECT person_id, SUM(minutes) AS s FROM visits GROUP BY person_id) t GROUP BY b", ci_runs=4000),
    # Private rows for released keys (analysis/released_keys.py), Superset's series limit: two
    # releases, each (1, 0)-DP, so H0 is (2, 0)-DP. The inner picks the larger of engineering and
    # hr, tied in D' (the person's 3 rows make hr the larger), the outer counts the picked key's
    # rows (hr's move by 3 = max_rows): the person moves both releases' outputs.
    one("released_keys", "released keys", "people",
        "SELECT t.dept, COUNT(*) AS n FROM people AS t JOIN (SELECT dept, COUNT(*) AS c FROM people GROUP BY dept "
        "ORDER BY 2 DESC LIMIT 1) AS s ON t.dept = s.dept GROUP BY t.dept", ci_runs=2000),
    # Gaussian noise and accuracy-first budgets
    one("gaussian_count", "gaussian", "people", f"{GAUSS} COUNT(*) FROM people", ci_runs=500),
    one("gaussian_sum_avg", "gaussian", "people", f"{GAUSS} SUM(age), AVG(income) FROM people"),
    one("ci95_count", "laplace (ci95)", "people", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (ci95 = 10) COUNT(*) FROM people", ci_runs=500),
    one("ci95_gaussian", "gaussian (ci95)", "people",
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (ci95 = 1000, noise = 'gaussian', delta = 1e-5) SUM(age) FROM people"),
    # partition selection of private keys
    one("partition", "partition selection", "people", f"{D6} region, COUNT(*) FROM people GROUP BY region", ci_runs=500),
    # MEDIAN / QUANTILE / IQR / MIN / MAX
    one("median", "exponential (fine grid)", "people", "SELECT MEDIAN(income) FROM people", ci_runs=500),
    one("quantile", "exponential (fine grid)", "people", "SELECT QUANTILE(income, 0.9) FROM people"),
    one("percentile_date", "exponential (fine grid)", "people",
        "SELECT PERCENTILE_DISC(0.75) WITHIN GROUP (ORDER BY hired) FROM people"),
    one("iqr", "exponential (fine grid)", "people", "SELECT IQR(income) FROM people"),
    one("min", "exponential (fine grid)", "people", "SELECT MIN(age) FROM people"),
    one("max", "exponential (fine grid)", "people", "SELECT MAX(income) FROM people", ci_runs=300),
    one("median_coarse", "exponential (coarse grid)", "people",
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'exponential') MEDIAN(income) FROM people"),
    one("median_smed", "PTR (SMed)", "people",
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'smed', epsilon = 1, delta = 1e-6) MEDIAN(score) FROM people", ci_runs=500),
    one("median_ptr", "PTR (PTR-Laplace)", "people", f"{D6} MEDIAN(income, 20000) FROM people"),
    # at epsilon 2 the test gets epsilon 1 and delta 1e-6: on `score`, with a bound below the grid, its distance
    # is SMed's, at the threshold in D' and one step below it in D
    one("median_ptr_score", "PTR (PTR-Laplace)", "people",
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2, delta = 1e-6) MEDIAN(score, 0.5) FROM people", ci_runs=500),
    one("iqr_scale", "PTR (Scale)", "people",
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'smed', epsilon = 1, delta = 1e-6) IQR(income) FROM people"),
    # MODE in its forms
    one("mode_declared", "report-noisy-max", "people", "SELECT MODE(dept) FROM people", ci_runs=500),
    one("mode_within_group", "report-noisy-max", "people", "SELECT MODE() WITHIN GROUP (ORDER BY dept) FROM people"),
    one("mode_histogram", "stable histogram", "people", f"{D6} MODE(team) FROM people", ci_runs=500),
    one("mode_asamp", "A_samp", "people",
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, mode_blocks = 1000000) MODE(badge) FROM people", ci_runs=500),
    # the Median Mechanism layer: one session; and a renewal across two sessions (learned model kept)
    Template("mm_session", "median mechanism", "mm", (MM_SESSION,), fresh=True, ci_runs=150),
    Template("mm_two_sessions", "median mechanism (renewal)", "mm", (MM_SESSION, MM_NEXT_SESSION), fresh=True, ci_runs=100),
)

BY_NAME = {t.name: t for t in TEMPLATES}


# --- negative controls -------------------------------------------------------------------------------------------

Patch = Callable[[pytest.MonkeyPatch], None]


def scaled(spec: type, attribute: str, factor: float) -> Patch:
    """The spec's noise scale (a property; for a Gaussian, sigma^2) divided by `factor`."""
    def patch(mp: pytest.MonkeyPatch) -> None:
        real = getattr(spec, attribute)
        mp.setattr(spec, attribute, property(lambda self: real.fget(self) / factor))
    return patch


def drop_max_rows(mp: pytest.MonkeyPatch) -> None:
    """Sensitivities computed as if each person kept one row (bounding still keeps max_rows)."""
    real = planner.needs_of
    mp.setattr(planner, "needs_of", lambda family, call, query, bounding: real(family, call, query,
                                                                              dataclasses.replace(bounding, max_rows=1)))


def drop_join_fanout(mp: pytest.MonkeyPatch) -> None:
    """A public join's fan-out read as 1 and the bound after the join dropped."""
    drop_fanout(mp)
    drop_bound_after_join(mp)


def drop_join_product(mp: pytest.MonkeyPatch) -> None:
    """A private join claims the first table's max_rows (not the product) and drops the bound after the join."""
    real = joins._JoinAnalysis._joined

    def joined(self, *args):  # type: ignore[no-untyped-def]
        table = real(self, *args)
        return dataclasses.replace(table, max_rows=table.parts[0].table.max_rows) if isinstance(table, JoinedTable) else table

    mp.setattr(joins._JoinAnalysis, "_joined", joined)
    drop_bound_after_join(mp)


def per_person_rows(mp: pytest.MonkeyPatch) -> None:
    """The per-person relation computed per row, not per person: each of a person's bounded rows
    carries the person's aggregate (a window over the person's rows, what Tableau's LOD join
    counted with COUNT(*) instead of COUNT(DISTINCT unit) amounts to), and the bound to one row per
    person after it dropped; the outer count still claims sensitivity 1."""
    real = join_sql._per_unit_select

    def per_row(table: JoinedTable, relations):  # type: ignore[no-untyped-def]
        select = real(table, relations)
        assert table.per_unit is not None
        unit = exp.column(table.per_unit.unit, quoted=True)
        for item in select.expressions:
            if isinstance(item.this, exp.AggFunc):
                item.set("this", exp.Window(this=item.this.copy(), partition_by=[unit.copy()]))
        select.set("group", None)
        return select

    mp.setattr(join_sql, "_per_unit_select", per_row)
    drop_bound_after_join(mp)


def drop_per_person_m(mp: pytest.MonkeyPatch) -> None:
    """A per-person SUM's sensitivity read from one value's range [L, U] (the factor m of its
    range [min(L, m L), max(U, m U)] dropped), its values still clamped to m U."""
    real = planner.needs_of

    def needs_of(family, call, query, bounding):  # type: ignore[no-untyped-def]
        needs = real(family, call, query, bounding)
        table = query.table
        if call.kind != SUM or not isinstance(table, JoinedTable) or table.per_unit is None:
            return needs
        m = table.parts[0].table.max_rows
        return dataclasses.replace(needs, releases=tuple((raw, sensitivity / m) for raw, sensitivity in needs.releases))

    mp.setattr(planner, "needs_of", needs_of)


def one_set_epsilon(mp: pytest.MonkeyPatch) -> None:
    """Every grouping set gets the query's whole epsilon, and the statement is billed the query's
    epsilon once (what charging the sets as one release amounts to)."""
    sets = {"count": 1}

    def share(count: int) -> Fraction:
        sets["count"] = count
        return Fraction(1)

    real = Session.execute

    def execute(self: Session, sql: str, parameters: object = None) -> NoisyResult:
        result = real(self, sql, parameters)  # type: ignore[arg-type]
        return dataclasses.replace(result, cost=result.cost.scale(Fraction(1, sets["count"])))

    mp.setattr(post, "set_share", share)
    mp.setattr(Session, "execute", execute)


def no_selection_threshold(mp: pytest.MonkeyPatch) -> None:
    """Partition selection releases every key whose noisy person count reaches 1."""
    mp.setattr(PartitionSelectionSpec, "threshold", property(lambda self: 1))


def em_sharper(factor: int) -> Patch:
    """The exponential mechanism's base rho = exp(-eps / (2 Delta)) computed with `factor` x eps
    (6: both the max_rows factor of Delta and the 2 of the exponent dropped)."""
    def patch(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(WindowQuantileSpec, "rho", property(lambda self: _rho(Fraction(self.epsilon) * factor, self.sensitivity)))
    return patch


def ptr_test_noise(factor: int) -> Patch:
    """Propose-Test-Release's noise drawn at scale / `factor` (the test's, drawn in ptr.passes and
    in subsample for A_samp, and PTR-Laplace's release), the threshold left as calibrated."""
    def patch(mp: pytest.MonkeyPatch) -> None:
        for module in (ptr, subsample):
            real = module.discrete_laplace
            mp.setattr(module, "discrete_laplace", lambda scale, rng, real=real: real(Fraction(scale) / factor, rng))
    return patch


def mm_answers_without_noise(mp: pytest.MonkeyPatch) -> None:
    """The Median Mechanism layer's hard answers released without their fresh noise."""
    mp.setattr(layer_core, "answer_noise", lambda calibration, rng: 0)


@dataclass(frozen=True)
class Control:
    """A deliberately broken mechanism and the template that shows it."""

    name: str
    template: str
    patch: Patch
    what: str
    runs: int = 1000  # per database: enough that the control is caught (tests/audit/README.md)
    ci: bool = True  # False: the long sweep only (bench/audit.py)


CONTROLS: tuple[Control, ...] = (
    Control("count_quarter_scale", "count", scaled(LaplaceSpec, "scale", 4), "COUNT: Laplace scale / 4", 500),
    Control("count_no_max_rows", "count", drop_max_rows, "COUNT: sensitivity without max_rows", 500),
    Control("sum_no_max_rows", "sum", drop_max_rows, "SUM: sensitivity without max_rows", 500),
    Control("avg_quarter_scale", "avg", scaled(LaplaceSpec, "scale", 4), "AVG: Laplace scale / 4"),
    Control("variance_quarter_scale", "stddev", scaled(LaplaceSpec, "scale", 4), "STDDEV: Laplace scale / 4", 2000),
    Control("group_derived_quarter_scale", "group_derived", scaled(LaplaceSpec, "scale", 4), "derived GROUP BY: Laplace scale / 4", 500),
    Control("rollup_one_set", "rollup", one_set_epsilon, "ROLLUP: each set the whole epsilon, billed once"),
    Control("union_quarter_scale", "union_all", scaled(LaplaceSpec, "scale", 4), "UNION ALL: Laplace scale / 4", 500, ci=False),
    Control("outer_half_scale", "outer", scaled(LaplaceSpec, "scale", 2), "outer query: Laplace scale / 2"),
    Control("join_public_no_fanout", "join_public", drop_join_fanout, "public join: fan-out dropped", 500),
    Control("join_private_no_product", "join_private", drop_join_product, "private join: product of max_rows dropped", 500),
    # The person's bucket moves by 3 at scale 1 (loss 3), their bucket total by 180 at scale 120 with
    # the count's half of epsilon (loss 1.5 + 0.5), hr's count by 3 at scale 1 in both releases
    # (loss 3 + the key's): run counts at which seeds 1-4 and 12345 all certify 0.35 or more above the claim.
    Control("per_unit_rows_not_persons", "per_unit_histogram", per_person_rows,
            "per-person aggregate: a row per row, not per person (bound after it dropped)", 1000),
    Control("per_unit_sum_no_m", "per_unit_sum_buckets", drop_per_person_m, "per-person SUM: sensitivity without m", 4000),
    Control("released_keys_no_max_rows", "released_keys", drop_max_rows, "released keys: both releases without max_rows", 2000),
    Control("gaussian_tenth_sigma", "gaussian_count", scaled(GaussianSpec, "sigma2", 100), "Gaussian: sigma / 10", 500),
    Control("ci95_quarter_scale", "ci95_count", scaled(LaplaceSpec, "scale", 4), "ci95: Laplace scale / 4 (epsilon / 4 charged)", 1500),
    Control("partition_no_threshold", "partition", no_selection_threshold, "partition selection: threshold 1", 500),
    # The value gets 2/5 of epsilon (the interval the rest): 15 x sharpens the value to 6 x the claim.
    Control("median_em_sharper", "median", em_sharper(15), "MEDIAN: EM base with 15 x epsilon", 600),
    Control("max_em_sharper", "max", em_sharper(15), "MAX: EM base with 15 x epsilon", ci=False),
    Control("smed_test_noise", "median_smed", ptr_test_noise(4), "SMed: test noise scale / 4", 500),
    Control("ptr_laplace_test_noise", "median_ptr_score", ptr_test_noise(4), "PTR-Laplace: test and release noise scale / 4"),
    Control("asamp_test_noise", "mode_asamp", ptr_test_noise(4), "MODE (A_samp): test noise scale / 4", 500),
    Control("mode_noisy_max_quarter_scale", "mode_declared", scaled(NoisyMaxModeSpec, "scale", 4), "MODE (noisy max): scale / 4"),
    Control("mode_histogram_eighth_scale", "mode_histogram", scaled(HistogramModeSpec, "scale", 8), "MODE (histogram): scale / 8"),
    Control("mm_no_answer_noise", "mm_session", mm_answers_without_noise, "Median Mechanism: hard answers without noise", 300),
)
