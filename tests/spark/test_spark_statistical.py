"""The end-to-end (epsilon, delta) audit of tests/statistical/test_end_to_end_dp.py, on Spark.

Same hypothesis, databases (D' = generate_people(3000, seed=5), D = D' plus one person with 3
rows), query (COUNT(*) at epsilon 1), events, seeds (0.. for D, 10000.. for D'), run counts,
Clopper-Pearson bounds and negative control (half the Laplace scale): that module's own helpers
run here, with a SparkEngine per database instead of a DuckDBEngine.

The exact aggregate comes from Spark: each database's COUNT(*) is compiled by a real Session and
run once on its SparkEngine (bounded relation, engine SQL rendered for Spark). Each of the
thousands of runs then replays the real release code (`pipeline.release_rows`, `simple_rows`)
with its own SeededRandomSource, drawing from the source exactly as Executor._answer does (the
session's bounding seed first). A Spark query per run (0.3 s or more) would take half an hour;
`test_replay_is_the_session_path_on_spark` checks that the replay IS the Session path on Spark
(and dpsql.connect(engine="spark")), run for run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest

import dpsql
from dpsql.analysis.context import AnalysisContext
from dpsql.backend.engines.engine import EngineResult
from dpsql.backend.engines.spark_engine import SparkEngine
from dpsql.backend.sql.engine_dialects import render
from dpsql.catalog.policy import Policy
from dpsql.execution.assemble import simple_rows
from dpsql.execution.compiled import CompiledQuery, compile_statement
from dpsql.execution.release import release_rows
from dpsql.mechanisms.laplace import LaplaceSpec
from dpsql.mechanisms.rng import SeededRandomSource
from tests.statistical import test_end_to_end_dp as audit

pytestmark = pytest.mark.statistical  # and `spark` (tests/spark/conftest.py)


@dataclass
class Exact:
    """One database's compiled query and its exact raw aggregate, computed by Spark."""

    compiled: CompiledQuery
    raw: EngineResult


@pytest.fixture(scope="module")
def databases(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[audit.Neighbours]:
    def spark_engine(policy: Policy, frame: pd.DataFrame) -> SparkEngine:
        return SparkEngine(policy, spark, frames={"people": frame})

    neighbours = audit.build_neighbours(tmp_path_factory.mktemp("e2e-dp-spark"), spark_engine)
    yield neighbours
    for engine in neighbours.engines.values():
        engine.close()


@pytest.fixture(scope="module")
def exact(databases: audit.Neighbours) -> dict[str, Exact]:
    out = {}
    for name, engine in databases.engines.items():
        assert isinstance(engine, SparkEngine)
        context = AnalysisContext(databases.policy, databases.policy.budget.default_query)
        _, compiled = compile_statement(audit.SQL, None, context)
        assert isinstance(compiled, CompiledQuery) and not compiled.uses_seed
        # The bounding seed is irrelevant here: no person has more than max_rows rows (checked by build_neighbours).
        engine.ensure_bounded(compiled.plan.query.table, 1)
        raw = engine.run(render(compiled.engine, engine.dialect))
        assert raw.rows == [(databases.count(name),)]  # Spark's exact COUNT(*) of the database
        out[name] = Exact(compiled, raw)
    return out


def replay(exact: dict[str, Exact]) -> audit.Outputs:
    """Outputs of runs with the given seeds, released from Spark's exact aggregate."""
    def draw(db: audit.Neighbours, name: str, seeds: range) -> list[int]:
        compiled, raw = exact[name].compiled, exact[name].raw
        values = []
        for seed in seeds:
            rng = SeededRandomSource(seed)
            rng.randbelow(2**62)  # Executor._answer: the session's bounding seed, drawn before the release
            columns, types = release_rows(compiled, raw, rng)
            _, _, rows, _ = simple_rows(compiled, columns, types)
            values.append(rows[0][0])
        return values

    return draw


def test_replay_is_the_session_path_on_spark(spark: Any, databases: audit.Neighbours, exact: dict[str, Exact]) -> None:
    draw = replay(exact)
    for name, first in (("D", audit.SEEDS_D), ("D2", audit.SEEDS_D2)):
        seeds = range(first, first + 3)
        # Session.execute on the shared SparkEngine: dry run, charge, engine SQL on Spark, release.
        assert audit.outputs(databases, name, seeds) == draw(databases, name, seeds)
        with dpsql.connect(policy=databases.policy_path, tables={"people": databases.frames[name]}, random_seed=first,
                           engine="spark", spark=spark) as con:
            assert con.session.engine_name == "spark"
            assert [con.execute(audit.SQL).fetchone()[0]] == draw(databases, name, range(first, first + 1))


def test_count_satisfies_the_dp_inequality_on_neighbouring_databases(databases: audit.Neighbours,
                                                                     exact: dict[str, Exact]) -> None:
    assert databases.count("D") - databases.count("D2") == 3
    audit.assert_dp_inequality_holds(audit.event_counts(databases, audit.RUNS, replay(exact)))


def test_negative_control_half_the_laplace_scale_is_detected(databases: audit.Neighbours, exact: dict[str, Exact],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    true_scale = LaplaceSpec.scale
    monkeypatch.setattr(LaplaceSpec, "scale", property(lambda spec: true_scale.fget(spec) / 2))
    audit.assert_violation_detected(audit.event_counts(databases, audit.CONTROL_RUNS, replay(exact)))
