"""Release the robust aggregates (MEDIAN/QUANTILE, IQR, MODE) after the charge, and describe them.

Runs each raw request of the plan through the engine (backend.robust: exact windows,
histograms or subsample votes), then, per released group, calls the mechanism's `release` with
the injected random source. A ⊥ becomes NULL in its cell; `noise_info` marks the column with
`refused` and a refusal sentence that holds public facts only (the aggregate as written, the
mechanism family, its epsilon and delta): never a distance, a noisy distance, n, or which
discretisation failed (design/ptr-and-asamp.md 2.3, attacks A14).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from dpsql.backend.robust import GroupKey, RobustQuery, Runner, decode, fetch
from dpsql.ir.plan import ModeRequest, Plan, RobustRelease, release_name, robust_name
from dpsql.mechanisms import ptr, registry
from dpsql.mechanisms.ranks import Histogram, OrderStatistics
from dpsql.mechanisms.rng import RandomSource

SEED_BOUND = 2**62
TYPE_NAMES = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR", "bool": "BOOLEAN", "date": "DATE"}
MECHANISM_NAMES = {
    "smed": "SMed (stable quantile, PTR)",
    "ptr-laplace": "PTR-Laplace (proposed bound)",
    "exponential": "exponential mechanism",
    "scale": "Scale (PTR on log-binned IQR)",
    "asamp": "A_samp (subsample modes + stability test)",
}


def robust_type(plan: Plan, release: RobustRelease) -> str:
    """The engine type of a robust release's noisy column (known from the plan alone)."""
    if release.mechanism == "asamp":
        request = plan.requests[release.request]
        assert isinstance(request, ModeRequest)
        return TYPE_NAMES[request.column.type]
    if release.mechanism == "scale":
        return "DOUBLE"
    assert release.values is not None
    column = release.values.column
    if column.type == "date":
        return "DATE"
    if release.mechanism in ("smed", "exponential") and column.type == "int":
        grid = release.values.grid or Fraction(1)
        return "BIGINT" if grid.denominator == 1 else "DOUBLE"
    return "DOUBLE"


def release_robust(plan: Plan, queries: Sequence[RobustQuery], groups: Sequence[GroupKey], columns: dict[str, list[Any]],
                   types: dict[str, str], run: Runner, rng: RandomSource) -> None:
    """Add one noisy column per robust release to `columns` (None where ⊥), in `groups` order."""
    data = []
    for query in queries:
        params = {"mode_seed": rng.randbelow(SEED_BOUND), "tie_seed": rng.randbelow(SEED_BOUND)} if query.seeded else {}
        data.append(fetch(query, plan, run, params))
    for index, release in enumerate(plan.robust):
        raw = data[release.request]
        empty = plan.requests[release.request].empty
        values = []
        for row, group in enumerate(groups):
            value = _release_one(release, raw.get(tuple(group), empty), columns, row, rng)
            values.append(None if value is ptr.REFUSED else value)
        columns[robust_name(index)] = values
        types[robust_name(index)] = robust_type(plan, release)


def _release_one(release: RobustRelease, raw: Any, columns: dict[str, list[Any]], row: int, rng: RandomSource) -> Any:
    """One group's release: votes (MODE), order statistics, or (IQR) order statistics and n_hat."""
    if release.n_hat is not None:  # Scale: its value is the IQR itself, not a mapped value
        return registry.release(release.spec, ptr.ScaleInput(raw, columns[release_name(release.n_hat)][row]), rng)
    value = registry.release(release.spec, raw, rng)
    return value if value is ptr.REFUSED else decode(release.values, value)


# --- description ------------------------------------------------------------------------------


def _what(release: RobustRelease) -> str:
    spec = release.spec
    if release.mechanism == "scale":
        return "the quartiles are not stable on this data (too few rows, or a quartile in a sparse region)"
    if release.mechanism == "asamp":
        return ("no value is consistently most frequent across subsamples (top values too close, or too few rows)")
    p = getattr(spec, "p", Fraction(1, 2))
    name = "median" if p == Fraction(1, 2) else f"{float(p):g} quantile"
    return (f"the {name} is not stable on this data (too few rows, the {name} lies in a gap between clusters, "
            f"or at the edge of a block of equal values)")


def _advice(release: RobustRelease) -> str:
    if release.mechanism == "smed":
        return "Try a coarser precision, a proposed bound b, a larger epsilon, or more rows."
    if release.mechanism == "ptr-laplace":
        return "Try a larger bound b, a larger epsilon, or more rows."
    return "Try a larger epsilon or more rows."


def refusal_sentence(release: RobustRelease, label: str) -> str:
    """The ⊥ message: public facts only (the aggregate, the mechanism family, its cost)."""
    cost = registry.cost(release.spec)
    return (f"{label} refused: {_what(release)}. {_advice(release)} Its budget (epsilon {float(cost.epsilon):.4g}, "
            f"delta {float(cost.delta):.3g}) was spent.")


def describe(plan: Plan, release: RobustRelease) -> dict[str, Any]:
    """noise_info of a bare robust output (ci95 filled per cell by the caller)."""
    cost = registry.cost(release.spec)
    error = registry.error(release.spec)
    label = plan.query.aggregates[release.aggregate].label
    info: dict[str, Any] = {"mechanism": release.mechanism, "scale": error.scale, "ci95": error.ci95,
                            "epsilon": float(cost.epsilon), "delta": float(cost.delta)}
    info.update(error.details)
    if "threshold" in info:  # a stability test: the release can be ⊥
        info.update({"refusal": refusal_sentence(release, label), "refused": False})
    return info


def mark_refusals(infos: list[dict[str, Any] | None], rows: Sequence[Sequence[Any]]) -> None:
    """`refused`: True/False for the column, or one flag per row when rows differ (⊥ = a NULL cell)."""
    for i, info in enumerate(infos):
        if info is None or "refusal" not in info:
            continue
        flags = tuple(row[i] is None for row in rows)
        info["refused"] = flags[0] if flags and len(set(flags)) == 1 else (flags if flags else False)


def robust_params(plan: Plan, release: RobustRelease) -> dict[str, Any]:
    """The ledger's record of a robust release: mechanism and public parameters (no data)."""
    cost = registry.cost(release.spec)
    record: dict[str, Any] = {"mechanism": release.mechanism, "aggregate": plan.query.aggregates[release.aggregate].label,
                              "epsilon": str(cost.epsilon), "delta": str(cost.delta)}
    test = getattr(release.spec, "test", None)
    if test is not None:
        record.update({"test_scale": str(test.scale), "threshold": test.threshold, "cap": test.cap})
    for name in ("shift", "bound", "blocks", "candidates", "epsilon_step"):
        value = getattr(release.spec, name, None)
        if value is not None:
            record[name] = str(value)
    return record
