"""Consistent grouping sets: accuracy of ROLLUP/CUBE before and after reconciliation.

    python bench/consistency.py                       # 100k rows, 200 runs per query and setting
    python bench/consistency.py --rows 20000 --runs 100

For each query (COUNT(*) and SUM(income) by ROLLUP(dept) and CUBE(dept, region), region given
public values), the same statement runs `--runs` times with the default reconciliation and with
OPTIONS (consistent = false), each run with its own seed, against the exact answers computed with
pandas (the demo's people keep at most 3 rows per person, so bounding drops nothing). Printed:
the mean squared error of the total row and of the finest cells (averaged over them) before and
after, their ratio, and the median 95% half-width the answers state. The policy's budget is made
large enough for every run; the queries run at the default query epsilon.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import dpsql  # noqa: E402
from dpsql.demo.people import REGIONS, generate_people, policy_text  # noqa: E402

QUERIES = {
    "ROLLUP(dept)": ["dept"],
    "CUBE(dept, region)": ["dept", "region"],
}


def describe_machine() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "dpsql"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}, numpy {np.__version__}, "
          f"pandas {pd.__version__}; git {commit}{' (dpsql/ has uncommitted edits)' if dirty else ''}")


def policy(directory: Path) -> Path:
    text = policy_text(None)
    text = re.sub(r"(?m)^epsilon = 10\.0", "epsilon = 1000000.0", text)
    values = ", ".join(f'"{r}"' for r in REGIONS)
    text, count = re.subn(r'(?m)^region\s*=\s*\{ type = "text" \}', f'region = {{ type = "text", values = [{values}] }}', text)
    assert count == 1
    path = directory / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


def truth(people: pd.DataFrame, keys: list[str]) -> dict[tuple[Any, ...], tuple[float, float]]:
    """(COUNT(*), SUM(income)) per cell of every grouping set of the query, keyed with None for rolled-up keys."""
    income = people["income"].clip(0, 500_000)
    out: dict[tuple[Any, ...], tuple[float, float]] = {}
    sets = [keys[:n] for n in range(len(keys), -1, -1)] if len(keys) == 1 else [["dept", "region"], ["dept"], ["region"], []]
    for s in sets:
        if not s:
            out[(None,) * len(keys)] = (float(len(people)), float(income.sum()))
            continue
        for k, g in people.assign(income=income).groupby(s):
            k = k if isinstance(k, tuple) else (k,)
            key = tuple(k[s.index(c)] if c in s else None for c in keys)
            out[key] = (float(len(g)), float(g["income"].sum()))
    return out


def run(con: dpsql.Connection, grouping: str, keys: list[str], consistent: bool) -> tuple[list[tuple[Any, ...]], list[Any]]:
    hint = "" if consistent else "WITH DIFFERENTIAL_PRIVACY OPTIONS (consistent = false) "
    cur = con.execute(f"SELECT {hint}{', '.join(keys)}, COUNT(*) AS n, SUM(income) AS s FROM people GROUP BY {grouping}")
    return cur.fetchall(), [cur.noise_info[len(keys)]["ci95"], cur.noise_info[len(keys) + 1]["ci95"]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    describe_machine()
    people = generate_people(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = policy(Path(tmp))
        print(f"{args.rows:,} rows, {args.runs} runs per query and setting, epsilon 0.1 per statement (split over the sets)")
        print(f"{'query':22} {'aggregate':10} {'cells':6} {'MSE released':>14} {'MSE reconciled':>15} {'ratio':>6} "
              f"{'median ci95 released':>21} {'reconciled':>11}")
        for grouping, keys in QUERIES.items():
            exact = truth(people, keys)
            errors: dict[bool, dict[str, list[list[float]]]] = {}
            widths: dict[bool, list[list[float]]] = {}
            for consistent in (False, True):
                errors[consistent] = {"total": [[], []], "finest": [[], []]}
                widths[consistent] = [[], []]
                for seed in range(args.runs):
                    with dpsql.connect(tables={"people": people}, policy=path, random_seed=1000 + seed) as con:
                        rows, ci = run(con, grouping, keys, consistent)
                    for a in range(2):
                        ci_a = ci[a] if isinstance(ci[a], tuple) else (ci[a],) * len(rows)
                        widths[consistent][a].extend(w for w in ci_a if w is not None)
                        for row in rows:
                            key = tuple(row[:len(keys)])
                            err = (row[len(keys) + a] - exact.get(key, (0.0, 0.0))[a]) ** 2
                            if all(k is None for k in key):
                                errors[consistent]["total"][a].append(err)
                            elif all(k is not None for k in key):
                                errors[consistent]["finest"][a].append(err)
            for a, name in enumerate(("COUNT(*)", "SUM")):
                for cells in ("total", "finest"):
                    before = float(np.mean(errors[False][cells][a]))
                    after = float(np.mean(errors[True][cells][a]))
                    print(f"{grouping:22} {name:10} {cells:6} {before:14.4g} {after:15.4g} {after / before:6.3f} "
                          f"{float(np.median(widths[False][a])):21.4g} {float(np.median(widths[True][a])):11.4g}")


if __name__ == "__main__":
    main()
