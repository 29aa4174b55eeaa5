"""The privacy auditor: an empirical lower confidence bound on the epsilon a query really spends.

Hypothesis H0 (the DP claim of the query, as charged): for two neighbouring databases D and D'
(one person added) and every event S over what the analyst sees,

    P_D(S) <= e^eps P_D'(S) + delta   and   P_D'(S) <= e^eps P_D(S) + delta,

where (eps, delta) is what one run was charged (the answers' costs). The auditor runs the real SQL path
(`dpsql.connect` with DataFrames, or a DuckDB file through a shared database for templates
that open a session per run; a fixed `random_seed`) N times on each database and looks for an
event that certifies a violation, in the manner of Google's stochastic DP tester and
DP-Auditorium (Kong et al. 2024):

1. Outputs. Everything a run returns is flattened into features: each released cell by its
   row key and column (a missing key row reads as None), each data-dependent noise_info field
   (ci95, MODE's confidence, ⊥ flags, the Median Mechanism layer's kind), the charge, and the
   error code of a statement that failed after its charge.
2. Events, chosen on a held-out half. The first half of each database's runs proposes candidate
   events: for every numeric feature the thresholds {f >= t} and {f <= t} at pooled quantiles,
   {f == v} for its most frequent values (an exact value released shows there) and {f is None}
   (⊥ or an absent key); for every other feature {f == v} per value seen; and,
   over the few features whose means differ most between D and D', orthant events
   {every f_i beyond its quantile, each in its own direction} and thresholds on a weighted
   sum (what a shift spread over several cells, as in ROLLUP, needs). The K candidates (event,
   direction) with the largest estimated bound on that half are kept; nothing else of the
   first half is used.
3. The bound, on the other half. For each kept (S, direction x > y) with counts a of n runs on x
   and b of n on y: a one-sided Clopper–Pearson lower bound p_lo on P_x(S) and upper bound p_hi
   on P_y(S), each at level alpha / (2K), and

       eps_lo(S) = ln((p_lo - delta) / p_hi)      (no bound when p_lo <= delta).

   The audit's bound is the largest eps_lo over the K events (0 when none is positive). It
   exceeds the true privacy loss of some event only if one of the 2K Clopper–Pearson bounds
   fails: probability <= alpha (Bonferroni over the K events and their two bounds). Choosing
   the events on independent runs keeps this valid whatever the selection does.

A test fails when eps_lo > eps (the claim is refuted at confidence 1 - alpha); a negative control
(a deliberately broken mechanism, patched in-process) must make eps_lo > eps. Seeds are fixed, so
every outcome is deterministic.

Coupling: the two databases' connections get the same random_seed, so the secret seeds a
session draws before its first release (bounded relations, keyed relations) are equal on D and
D'. DP holds for each fixed secret seed (docs/privacy-model.md, contribution bounding), so the
audit checks the stronger conditional claim; with different seeds the comparison would not be
between neighbours. Runs on one connection are one pseudo-random stream: independent draws.
"""

from __future__ import annotations

import itertools
import math
import tempfile
import warnings
import zlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from scipy import stats

import dpsql
from dpsql.catalog.loader import load_policy
from dpsql.errors import MedianMechanismWarning
from dpsql.session import open_shared
from tests.security.attack_support import cp_lower, cp_upper

ALPHA = 1e-4  # per audit: a correct mechanism is refuted with probability <= 1e-4
KEPT_EVENTS = 8  # K: the events certified on the second half (Bonferroni over 2K bounds)
QUANTILES = np.linspace(0.01, 0.99, 50)  # threshold levels of the candidate events
JOINT_FEATURES = 4  # features the orthant and weighted-sum events combine
CATEGORIES = 64  # most distinct values of a non-numeric feature that get {f == v} events
POINTS = 16  # most frequent values of a numeric feature that get {f == v} events

Features = dict[str, Hashable]
# Fresh-session runs are each their own analyst: the Median Mechanism layer's learned model is
# kept per analyst in the process, so a name must never be reused by another run (or audit).
_ANALYSTS = itertools.count()


# --- what one run releases ---------------------------------------------------------------------------------


def _plain(value: Any) -> Hashable:
    """A released value as a comparable scalar: numbers as float, dates as day numbers."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float, Fraction, Decimal, np.integer, np.floating)):
        number = float(value)
        return None if math.isnan(number) else number
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, date):
        return float(value.toordinal())
    return repr(value)


def result_features(prefix: str, cursor: Any) -> Features:
    """Everything the analyst sees of one answered statement, as named scalars.

    Rows are keyed by their exact (key) columns, else by position; every noisy column of a row
    is one feature, and so is every per-row or per-column noise_info field that can depend on
    the data (a field that never varies yields no event).
    """
    result = cursor.result
    assert result is not None
    names = [c.name for c in result.columns]
    infos = list(result.noise_info)
    keys = [i for i, info in enumerate(infos) if info is None]
    out: Features = {f"{prefix}charge": float(result.cost.epsilon), f"{prefix}charge_delta": float(result.cost.delta)}
    seen: dict[str, int] = {}
    row_keys = []
    for position, row in enumerate(result.rows):
        key = "|".join(repr(row[i]) for i in keys) if keys else f"#{position}"
        seen[key] = seen.get(key, 0) + 1
        key = key if seen[key] == 1 else f"{key}~{seen[key]}"
        row_keys.append(key)
        for i, value in enumerate(row):
            if infos[i] is not None:
                out[f"{prefix}{key}/{names[i]}"] = _plain(value)
    for i, info in enumerate(infos):
        if info is None:
            continue
        for field_name in ("ci95", "confidence", "refused", "kind", "hard_slots_left", "epsilon"):
            value = info.get(field_name)
            if isinstance(value, tuple):
                for key, cell in zip(row_keys, value):
                    out[f"{prefix}{key}/{names[i]}.{field_name}"] = _plain(cell)
            elif value is not None:
                out[f"{prefix}{names[i]}.{field_name}"] = _plain(value)
    return out


# --- runs on two neighbouring databases ----------------------------------------------------------------------


@dataclass(frozen=True)
class Neighbours:
    """A neighbouring pair: one policy and the tables of D (with the added person) and D'."""

    name: str
    policy: str  # TOML text
    d: dict[str, pd.DataFrame]
    d2: dict[str, pd.DataFrame]


@dataclass(frozen=True)
class Template:
    """A query template: what one run executes, on which pair.

    `sessions` lists the statements of one run per connection. With `fresh` False (the default)
    there is one session and one connection per database serves every run (a run = its
    statements once more on it); with `fresh` True each run opens a new connection per session,
    in order, all as one analyst named after the run (the Median Mechanism layer's state and
    its learned model live per session and per analyst: fresh per run, chained within it).
    """

    name: str
    mechanism: str
    pair: str
    sessions: tuple[tuple[str, ...], ...]
    fresh: bool = False
    ci_runs: int | None = None  # runs per database in CI (tests/audit/test_audit.py); None: the long sweep only

    @staticmethod
    def one(name: str, mechanism: str, pair: str, sql: str, ci_runs: int | None = None) -> Template:
        return Template(name, mechanism, pair, ((sql,),), ci_runs=ci_runs)


@dataclass
class Sample:
    """The features of each run on one database, and what each run was charged."""

    runs: list[Features] = field(default_factory=list)
    charges: list[tuple[Fraction, Fraction]] = field(default_factory=list)


def _write_policy(directory: Path, pair: Neighbours) -> Path:
    path = directory / f"{pair.name}.toml"
    path.write_text(pair.policy, encoding="utf-8")
    return path


def _run_statements(con: dpsql.Connection, statements: Sequence[str], prefix: str, out: Features) -> tuple[Fraction, Fraction]:
    """Execute a session's statements once; add their features to `out`; return the run's charge
    (each answer's cost; for a statement that failed after its charge (DP300), what it is charged
    before running, which EXPLAIN states: reading the ledger back costs time linear in its
    length). A refusal before the charge is raised: an audit of a refused template is vacuous."""
    eps, delta = Fraction(0), Fraction(0)
    for j, sql in enumerate(statements):
        tag = f"{prefix}{j}:"
        try:
            cursor = con.execute(sql)
        except dpsql.Error as error:
            if getattr(error, "code", None) != "DP300":  # refused before its charge: the template is wrong
                raise
            out[f"{tag}error"] = error.code  # an engine failure after the charge is an output too
            cost = con.session.cost_of(sql)
        else:
            out.update(result_features(tag, cursor))
            assert cursor.result is not None
            cost = cursor.result.cost
        eps, delta = eps + cost.epsilon, delta + cost.delta
    return eps, delta


def _database_file(directory: Path, name: str, tables: dict[str, pd.DataFrame]) -> Path:
    """The tables as a DuckDB database file (what `dpsql serve --database` reads)."""
    path = directory / f"{name}.duckdb"
    if not path.exists():
        con = duckdb.connect(str(path))
        try:
            for table, frame in tables.items():
                con.register("frame", frame)
                con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM frame')
                con.unregister("frame")
        finally:
            con.close()
    return path


def sample(template: Template, pair: Neighbours, directory: Path, runs: int, seed: int) -> tuple[Sample, Sample]:
    """`runs` runs of the template on D and on D' (same seeds on both: see the module doc).

    A template of fresh sessions reads its pair from DuckDB files through one shared database per
    file, as the server's connections do (a connection then costs tens of milliseconds instead
    of loading the DataFrames again); every connection still has its own seeded noise and ledger.
    """
    policy = _write_policy(directory, pair)
    samples = (Sample(), Sample())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MedianMechanismWarning)  # the layer's notices: public, and no output
        for side, tables in enumerate((pair.d, pair.d2)):
            out = samples[side]
            if not template.fresh:
                (statements,) = template.sessions
                with dpsql.connect(policy=policy, tables=tables, random_seed=seed) as con:
                    for _ in range(runs):
                        features: Features = {}
                        out.charges.append(_run_statements(con, statements, "", features))
                        out.runs.append(features)
                continue
            database = _database_file(directory, f"{pair.name}-{side}", tables)
            shared = open_shared(load_policy(policy), database, prepare=False)
            try:
                for run in range(runs):
                    features = {}
                    eps, delta = Fraction(0), Fraction(0)
                    for s, statements in enumerate(template.sessions):
                        with dpsql.connect(database=database, policy=policy, shared=shared, prepare=False,
                                           random_seed=seed + 7919 * run + s, analyst=f"audit{next(_ANALYSTS)}") as con:
                            e, d = _run_statements(con, statements, f"s{s}.", features)
                        eps, delta = eps + e, delta + d
                    out.charges.append((eps, delta))
                    out.runs.append(features)
            finally:
                shared.close()
    return samples


# --- events ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """A set of outputs, as a predicate over the columns of a run table."""

    name: str
    test: Callable[[Columns], np.ndarray]


class Columns:
    """The runs as one column per feature: the values (None when a run lacks the feature) and,
    for numeric features, floats with NaN for None (computed once, shared by every event)."""

    def __init__(self, runs: list[Features], names: list[str]) -> None:
        self.size = len(runs)
        self.values = {name: np.array([run.get(name) for run in runs], dtype=object) for name in names}
        self._numbers: dict[str, np.ndarray | None] = {}

    def numbers(self, name: str) -> np.ndarray | None:
        if name not in self._numbers:
            self._numbers[name] = _numeric(self.values[name])
        return self._numbers[name]

    def floats(self, name: str) -> np.ndarray:
        numbers = self.numbers(name)
        if numbers is None:
            numbers = self._numbers[name] = _floats(self.values[name])
        return numbers


def _numeric(values: np.ndarray) -> np.ndarray | None:
    """The values as floats (NaN for None), or None when some value is not a number."""
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        if v is None:
            continue
        if not isinstance(v, float):
            return None
        out[i] = v
    return out


def _floats(values: np.ndarray) -> np.ndarray:
    """The values as floats, NaN for None and for anything not a number."""
    return np.array([v if isinstance(v, float) else np.nan for v in values], dtype=float)


def candidate_events(first: Columns, second: Columns) -> list[Event]:
    """Candidate events proposed from (held-out) runs of D (`first`) and D' (`second`)."""
    events: list[Event] = []
    shifts: list[tuple[float, str, float, float]] = []
    for name in first.values:
        values = np.concatenate([first.values[name], second.values[name]])
        numbers = _numeric(values)
        if numbers is None:
            kinds = list(dict.fromkeys(values.tolist()))[:CATEGORIES]
            for v in kinds:
                events.append(Event(f"{name} == {v!r}", lambda c, name=name, v=v: np.array([x == v for x in c.values[name]])))
            continue
        missing = np.isnan(numbers)
        if missing.any() and not missing.all():
            events.append(Event(f"{name} is None", lambda c, name=name: np.isnan(c.floats(name))))
        present = numbers[~missing]
        if present.size == 0 or present.min() == present.max():
            continue
        for t in np.unique(np.quantile(present, QUANTILES, method="inverted_cdf")):
            events.append(Event(f"{name} >= {t:.6g}", lambda c, name=name, t=t: c.floats(name) >= t))
            events.append(Event(f"{name} <= {t:.6g}", lambda c, name=name, t=t: c.floats(name) <= t))
        values_seen, counts = np.unique(present, return_counts=True)
        for v in values_seen[np.argsort(-counts)][:POINTS]:  # the most frequent values: a released exact value shows here
            events.append(Event(f"{name} == {v:.6g}", lambda c, name=name, v=v: c.floats(name) == v))
        if np.isfinite(numbers).all():  # a joint candidate: no None, no infinity (a ratio over a zero count)
            a, b = numbers[: first.size], numbers[first.size :]
            spread = float(np.std(numbers))
            if spread > 0:
                shifts.append((abs(float(a.mean() - b.mean())) / spread, name, float(np.sign(a.mean() - b.mean())), spread))
    shifts.sort(reverse=True)
    joint = [s for s in shifts[:JOINT_FEATURES] if s[0] > 0]
    if len(joint) >= 2:
        events += _joint_events(joint, first, second)
    return events


def _joint_events(joint: list[tuple[float, str, float, float]], first: Columns, second: Columns) -> list[Event]:
    """Orthants (every feature beyond its own quantile, in the direction it moves) and thresholds
    on a weighted sum, over the features whose means differ most between the databases."""
    events: list[Event] = []
    levels = len(QUANTILES)
    for size in sorted({2, len(joint)}):
        chosen = joint[:size]
        label = ", ".join(name for _, name, _, _ in chosen)
        cuts = {name: np.quantile(np.concatenate([first.floats(name), second.floats(name)]), QUANTILES)
                for _, name, _, _ in chosen}

        def orthant(c: Columns, i: int, chosen: list = chosen, cuts: dict = cuts) -> np.ndarray:
            hit = np.ones(c.size, dtype=bool)
            for _, name, sign, _ in chosen:
                cut = cuts[name][i] if sign > 0 else cuts[name][levels - 1 - i]
                hit &= sign * (c.floats(name) - cut) >= 0
            return hit

        for i, level in enumerate(QUANTILES):
            events.append(Event(f"orthant({label}) at level {level:.2f}", lambda c, i=i, orthant=orthant: orthant(c, i)))

        def score(c: Columns, chosen: list = chosen) -> np.ndarray:
            total = np.zeros(c.size)
            for d, name, sign, spread in chosen:
                total += d * sign * c.floats(name) / spread
            return total

        pooled = np.concatenate([score(first), score(second)])
        for t in np.unique(np.quantile(pooled, QUANTILES)):
            events.append(Event(f"weighted sum({label}) >= {t:.6g}", lambda c, t=t, score=score: score(c) >= t))
            events.append(Event(f"weighted sum({label}) <= {t:.6g}", lambda c, t=t, score=score: score(c) <= t))
    return events


# --- the bound -------------------------------------------------------------------------------------------------


def epsilon_bound(hits_x: int, hits_y: int, n: int, delta: float, alpha: float) -> float:
    """ln((p_lo - delta) / p_hi): p_lo a lower bound on P_x(S), p_hi an upper bound on P_y(S),
    each one-sided Clopper–Pearson at level alpha; -inf when p_lo <= delta."""
    low = cp_lower(hits_x, n, alpha) - delta
    return math.log(low / cp_upper(hits_y, n, alpha)) if low > 0 else -math.inf


def _estimated_bounds(x: np.ndarray, y: np.ndarray, n: int, delta: float, alpha: float) -> np.ndarray:
    """The same bound for many events at once (used only to rank candidates on the first half)."""
    low = np.where(x > 0, stats.beta.ppf(alpha, np.maximum(x, 1), n - x + 1), 0.0) - delta
    high = np.where(y < n, stats.beta.ppf(1 - alpha, y + 1, np.maximum(n - y, 1)), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(low > 0, np.log(np.maximum(low, 1e-300) / high), -np.inf)


@dataclass(frozen=True)
class AuditResult:
    """The certified bound, the claim it is compared with, and where it was found."""

    template: str
    epsilon_lower: float  # >= 0: 0 when no event certifies anything
    claimed_epsilon: float
    claimed_delta: float
    event: str
    runs: int
    alpha: float

    @property
    def refuted(self) -> bool:
        """The claim is refuted at confidence 1 - alpha."""
        return self.epsilon_lower > self.claimed_epsilon

    def __str__(self) -> str:
        return (f"{self.template}: epsilon >= {self.epsilon_lower:.3f} at confidence {1 - self.alpha:g} "
                f"(claimed epsilon {self.claimed_epsilon:g}, delta {self.claimed_delta:g}; {self.runs} runs per "
                f"database; {self.event})")


def claimed(d: Sample, d2: Sample) -> tuple[float, float]:
    """The (epsilon, delta) of one run: the largest total any run was charged on either database.
    Charges are made before data is read, so every run of a plain template is charged the same."""
    eps, delta = max(d.charges + d2.charges)
    return float(eps), float(delta)


def audit(name: str, d: Sample, d2: Sample, *, alpha: float = ALPHA, kept: int = KEPT_EVENTS,
          claim: tuple[float, float] | None = None) -> AuditResult:
    """The lower confidence bound on epsilon from two samples (see the module doc)."""
    n = len(d.runs)
    assert len(d2.runs) == n and n >= 20
    eps, delta = claim if claim is not None else claimed(d, d2)
    half = n // 2
    names = sorted({key for run in d.runs + d2.runs for key in run})
    first = (Columns(d.runs[:half], names), Columns(d2.runs[:half], names))
    second = (Columns(d.runs[half:], names), Columns(d2.runs[half:], names))
    m = second[0].size
    events = candidate_events(*first)
    per_alpha = alpha / (2 * kept)
    if not events:
        return AuditResult(name, 0.0, eps, delta, "no candidate events", n, alpha)
    # 1. Selection on the first half: every candidate in both directions, ranked by its bound there.
    hits = np.array([(int(e.test(first[0]).sum()), int(e.test(first[1]).sum())) for e in events])
    forward = _estimated_bounds(hits[:, 0], hits[:, 1], half, delta, per_alpha)
    backward = _estimated_bounds(hits[:, 1], hits[:, 0], half, delta, per_alpha)
    scored = [(float(forward[i]), i, 0) for i in range(len(events))] + [(float(backward[i]), i, 1) for i in range(len(events))]
    scored.sort(key=lambda s: -s[0])
    chosen = scored[:kept]
    # 2. The certified bound on the second half, with Bonferroni over the kept events.
    best, where = 0.0, "no event certifies a positive bound"
    for _, i, direction in chosen:
        a, b = int(events[i].test(second[0]).sum()), int(events[i].test(second[1]).sum())
        x, y, label = (a, b, "D over D'") if direction == 0 else (b, a, "D' over D")
        bound = epsilon_bound(x, y, m, delta, per_alpha)
        if bound > best:
            best, where = bound, f"{events[i].name}, {label}: {x} vs {y} of {m}"
    return AuditResult(name, best, eps, delta, where, n, alpha)


def run_audit(template: Template, pair: Neighbours, runs: int, *, seed: int | None = None,
              directory: Path | None = None, claim: tuple[float, float] | None = None) -> AuditResult:
    """Sample the template on the pair and audit it."""
    seed = seed if seed is not None else seed_of(template.name)
    if directory is None:
        with tempfile.TemporaryDirectory(prefix="dpsql-audit-") as tmp:
            d, d2 = sample(template, pair, Path(tmp), runs, seed)
    else:
        d, d2 = sample(template, pair, directory, runs, seed)
    return audit(template.name, d, d2, claim=claim)


def seed_of(name: str) -> int:
    """The fixed seed of a template's audit (its name's CRC-32): every run is reproducible."""
    return zlib.crc32(name.encode()) % 1_000_000
