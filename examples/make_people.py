"""Write the synthetic `people` table and a matching policy, for benchmarks and experiments.

    python examples/make_people.py --rows 1000000 --out DIR [--format parquet|duckdb] [--seed N]

parquet: DIR/people.parquet and DIR/policy.toml (its `source` names the Parquet file).
duckdb:  DIR/people.duckdb (table `people`) and DIR/policy.toml (no `source`: the table is read
         from the database given to dpsql, e.g. `dpsql DIR/people.duckdb --policy DIR/policy.toml`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

if importlib.util.find_spec("dpsql") is None:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpsql.backend.auxiliary.files import write_duckdb, write_parquet
from dpsql.demo.people import DEFAULT_SEED, PARQUET_NAME, POLICY_NAME, generate_people, policy_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, required=True, help="number of rows (1-3 rows per person)")
    parser.add_argument("--out", type=Path, required=True, help="output directory (created if missing)")
    parser.add_argument("--format", choices=("parquet", "duckdb"), default="parquet")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the synthetic data")
    args = parser.parse_args(argv)
    if args.rows < 0:
        parser.error("--rows must be >= 0")

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    people = generate_people(args.rows, seed=args.seed)
    generated = time.perf_counter()
    if args.format == "parquet":
        data = out / PARQUET_NAME
        _replace(data, lambda tmp: write_parquet(people, tmp))
        policy = policy_text(source=PARQUET_NAME)
    else:
        data = out / "people.duckdb"
        _replace(data, lambda tmp: write_duckdb(people, tmp, "people"))
        policy = policy_text(source=None)
    written = time.perf_counter()
    (out / POLICY_NAME).write_text(policy, encoding="utf-8")
    print(
        f"{len(people):,} rows ({people['person_id'].nunique():,} persons) -> {data}  "
        f"[generate {generated - started:.2f}s, write {written - generated:.2f}s]"
    )
    print(f"policy -> {out / POLICY_NAME}")
    return 0


def _replace(target: Path, write: Callable[[Path], None]) -> None:
    """Write to a fresh temporary file next to `target`, then move it into place."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


if __name__ == "__main__":
    raise SystemExit(main())
