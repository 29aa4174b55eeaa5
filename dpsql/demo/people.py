"""The synthetic `people` table of the demo, its policy, and the on-disk cache that holds both.

`ensure_demo()` writes `people.parquet` and `policy.toml` once into a per-user cache directory
(never the current directory) and returns the policy path on every later call.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy and pandas only when data is generated (once per cache), not with every session
    import numpy as np
    import pandas as pd

DEFAULT_ROWS = 100_000
DEFAULT_SEED = 20261122
DEMO_VERSION = "demo-v1"  # bump when the data or the policy changes, so old caches are not reused
PARQUET_NAME = "people.parquet"
POLICY_NAME = "policy.toml"

DEPTS: tuple[str, ...] = (
    "engineering", "sales", "support", "operations", "marketing", "finance",
    "hr", "legal", "research", "product", "design", "security",
)  # fmt: skip
REGIONS: tuple[str, ...] = ("north", "south", "east", "west", "central")
AGE_MIN, AGE_MAX = 18, 90
INCOME_MAX = 500_000.0

ROWS_PER_PERSON: Mapping[int, float] = {1: 0.5, 2: 0.3, 3: 0.2}  # the demo: nobody above max_rows = 3
_REGION_P = (0.26, 0.22, 0.20, 0.18, 0.14)
_DEPT_LOG_INCOME = (0.15, 0.0, -0.2, -0.1, 0.0, 0.1, -0.1, 0.2, 0.1, 0.1, 0.0, 0.1)
_DEPT_STAYS = 0.7  # chance a person's further row keeps their main department


def _dept_p() -> np.ndarray:
    """Zipf-like: engineering ~27%, security ~2% (computed in NumPy: the same bits as ever, so a
    seed gives the same data)."""
    import numpy as np

    weights = 1.0 / np.arange(1, len(DEPTS) + 1) ** 1.1
    p: np.ndarray = weights / weights.sum()
    return p


def _age_weights() -> np.ndarray:
    """Adult ages: flat to 60, then thinning out towards 90."""
    import numpy as np

    ages = np.arange(AGE_MIN, AGE_MAX + 1)
    weights = np.where(ages <= 60, 1.0, np.exp(-(ages - 60) / 12.0))
    p: np.ndarray = weights / weights.sum()
    return p


def _draw(rng: np.random.Generator, p: np.ndarray | tuple[float, ...], size: int) -> np.ndarray:
    """Indices drawn with probabilities `p` (inverse CDF; faster than rng.choice for large sizes)."""
    import numpy as np

    return np.minimum(np.searchsorted(np.cumsum(p), rng.random(size), side="right"), len(p) - 1)


def _text(values: tuple[str, ...], codes: np.ndarray) -> pd.Series:
    import pandas as pd

    return pd.Series(pd.array(values, dtype="str").take(codes))  # a take on the string array: no Python loop


def generate_people(n_rows: int = DEFAULT_ROWS, seed: int = DEFAULT_SEED,
                    rows_per_person: Mapping[int, float] = ROWS_PER_PERSON) -> pd.DataFrame:
    """A synthetic people table of exactly `n_rows` rows, the same for the same seed.

    Columns: person_id (int64, from 1; a person's number of rows drawn from `rows_per_person`,
    {rows: probability}: 1-3 for the demo), age (int64 in [18, 90], constant per person), income
    (float64 lognormal in [0, 500000], per row, higher in mid-career and in some departments),
    dept (str, 12 values, Zipf-like, mostly constant per person), region (str, 5 values, mildly
    skewed, constant per person). The benchmarks pass a distribution with persons above the
    policy's max_rows, whose extra rows the bounded relation drops.
    """
    import numpy as np
    import pandas as pd

    if n_rows < 0:
        raise ValueError("n_rows must be >= 0")
    # Synthetic DATA generation, not privacy noise: a seeded NumPy generator is right here; the
    # mechanisms draw their noise from their own (cryptographic) source.
    rng = np.random.default_rng(seed)
    sizes = np.array(list(rows_per_person), dtype=np.int64)
    weights = np.array(list(rows_per_person.values()), dtype=np.float64)
    counts = sizes[_draw(rng, weights / weights.sum(), max(n_rows, 1))]
    n_persons = int(np.searchsorted(np.cumsum(counts), n_rows)) + 1 if n_rows else 0
    counts = counts[:n_persons]
    person_age = AGE_MIN + _draw(rng, _age_weights(), n_persons).astype(np.int64)
    dept_p = _dept_p()
    person_dept = _draw(rng, dept_p, n_persons)
    person_region = _draw(rng, _REGION_P, n_persons)

    def per_row(values: np.ndarray) -> np.ndarray:
        return np.repeat(values, counts)[:n_rows]

    person_id = per_row(np.arange(1, n_persons + 1, dtype=np.int64))
    age = per_row(person_age)
    dept = np.where(rng.random(n_rows) < _DEPT_STAYS, per_row(person_dept), _draw(rng, dept_p, n_rows))
    career = 0.5 * np.exp(-(((age - 50) / 18.0) ** 2))  # earnings peak around 50
    log_income = rng.normal(10.35 + career + np.array(_DEPT_LOG_INCOME)[dept], 0.8)
    income = np.round(np.clip(np.exp(log_income), 0.0, INCOME_MAX), 2)
    return pd.DataFrame(
        {
            "person_id": person_id,
            "age": age,
            "income": income.astype(np.float64),
            "dept": _text(DEPTS, dept),
            "region": _text(REGIONS, per_row(person_region)),
        },
        copy=False,  # the arrays are fresh: keep one block per column instead of copying into one
    )


_SOURCE_LINE = "@SOURCE@\n"
_DEPT_LIST = ", ".join(json.dumps(d) for d in DEPTS)  # as TOML strings
_POLICY_TEMPLATE = f"""\
# dpsql demo policy: the synthetic `people` table (see dpsql/demo/people.py).
# Copy this file and edit it to describe your own data; docs/policy-reference.md in the dpsql
# repository lists every key (`dpsql policy init SOURCE` writes a skeleton from your data).

[budget]                          # the privacy budget of each analyst, for the life of the ledger
epsilon = 10.0                    # total epsilon an analyst may spend over all queries
delta = 1e-5                      # total delta an analyst may spend over all queries
default_query_epsilon = 0.1       # epsilon charged to a query that names none
default_query_delta = 1e-8        # delta charged to a query that names none

[tables.people]                   # a private table: every row belongs to one person
privacy_unit = "person_id"        # the column that identifies the person protected
max_rows = 3                      # rows kept per person (extra rows dropped by random sampling)
max_groups = 2                    # groups a person may contribute to in a GROUP BY query
{_SOURCE_LINE}
[tables.people.columns]           # the columns analysts may use, with public bounds and domains
person_id = {{ type = "int" }}                                # identifies a person; no bounds, so it is never summed
age       = {{ type = "int",   lower = 18, upper = 90 }}      # bounds: values are clamped to them in sums and averages
income    = {{ type = "float", lower = 0,  upper = 500000 }}  # bounds: clamped to [0, 500000] before summing
dept      = {{ type = "text",  values = [                    # public domain: every listed key is released, even if empty
  {_DEPT_LIST}
] }}                                                         # (listing the keys costs no privacy: they are public)
region    = {{ type = "text" }}                               # private domain: only keys passing a noisy threshold are released
"""


def policy_text(source: str | None = PARQUET_NAME) -> str:
    """The demo policy TOML, with `source` (relative to the policy file) or no source line."""
    if source is None:
        return _POLICY_TEMPLATE.replace(_SOURCE_LINE, "")
    line = f"source = {json.dumps(source, ensure_ascii=False)}"  # a JSON string is a TOML basic string
    return _POLICY_TEMPLATE.replace(_SOURCE_LINE.rstrip("\n"), f"{line:<33} # the data, relative to this file")


DEMO_POLICY: str = policy_text()


def user_cache_dir() -> Path:
    """The dpsql cache directory: $DPSQL_CACHE_DIR, else the platform's per-user cache."""
    explicit = os.environ.get("DPSQL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "dpsql"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        return (Path(local) if local else home / "AppData" / "Local") / "dpsql" / "Cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():  # the XDG spec says to ignore relative paths
        return Path(xdg) / "dpsql"
    return home / ".cache" / "dpsql"


def ensure_demo(cache_dir: Path | None = None) -> Path:
    """The path of the demo policy file, writing the demo data and policy on first use.

    Files are written under a temporary name in the same directory and moved into place with
    `os.replace`, the policy last, so concurrent first uses never read a half-written file.
    """
    directory = (Path(cache_dir).expanduser().resolve() if cache_dir is not None else user_cache_dir()) / DEMO_VERSION
    policy, data = directory / POLICY_NAME, directory / PARQUET_NAME
    if policy.is_file() and data.is_file():
        return policy
    directory.mkdir(parents=True, exist_ok=True)
    if not data.is_file():
        from dpsql.backend.auxiliary.files import write_parquet  # pandas: only when the data is written

        _atomic_write(data, lambda tmp: write_parquet(generate_people(), tmp))
    _atomic_write(policy, lambda tmp: tmp.write_text(DEMO_POLICY, encoding="utf-8"))
    return policy


def _atomic_write(target: Path, write: Callable[[Path], object]) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
