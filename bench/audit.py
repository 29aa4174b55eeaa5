"""The privacy auditor's long sweep: every query template and every negative control.

    python bench/audit.py                          # every template and control (about an hour on 2 shared cores)
    python bench/audit.py --runs 2000 --mm-runs 300
    python bench/audit.py --only count median_em_sharper   # some templates and controls

Run by hand, not a test (bench/README.md); the CI portion is tests/audit/test_audit.py. For each
template (tests/audit/templates.py) it samples `--runs` runs per neighbouring database
(`--mm-runs` for the templates that open a session per run) through dpsql.connect and prints the
auditor's lower confidence bound on epsilon (confidence 1 - 1e-4, tests/audit/README.md), the
epsilon and delta charged, and the event that certified the bound; then each negative control
at the larger of `--runs` and its CI run count, which must show a bound above its charge. A row
marked REFUTED is a template whose charge the data refute (a privacy bug), or a control caught.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
import pytest  # noqa: E402

import dpsql  # noqa: E402
from tests.audit.auditor import AuditResult, run_audit  # noqa: E402
from tests.audit.pairs import PAIRS  # noqa: E402
from tests.audit.templates import BY_NAME, CONTROLS, TEMPLATES  # noqa: E402


def log(message: str = "") -> None:
    print(message, flush=True)


def header(argv: list[str]) -> None:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "dpsql"], cwd=ROOT, capture_output=True, text=True, check=False).stdout
    except OSError:
        commit, dirty = "?", ""
    log(f"command: python bench/audit.py {' '.join(argv)}")
    log(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; commit {commit}{' (+ uncommitted dpsql edits)' if dirty else ''}")
    log(f"machine: {platform.machine()} {platform.system()}; cores = {os.cpu_count()}; load average {os.getloadavg()}")
    log(f"versions: dpsql {dpsql.__version__}, duckdb {duckdb.__version__}, python {platform.python_version()}")


def row(kind: str, name: str, mechanism: str, result: AuditResult, seconds: float) -> str:
    verdict = "REFUTED" if result.refuted else "holds"
    return (f"| {kind} | {name} | {mechanism} | {result.runs} | {result.claimed_epsilon:.4g} | {result.claimed_delta:.3g} | "
            f"{result.epsilon_lower:.3f} | {verdict} | {seconds:.0f} s | {result.event} |")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4000, help="runs per database (default 4000)")
    parser.add_argument("--mm-runs", type=int, default=600, help="runs per database of the session-per-run templates (default 600)")
    parser.add_argument("--only", nargs="*", default=None, help="template or control names")
    parser.add_argument("--no-controls", action="store_true")
    args = parser.parse_args(argv)
    header(argv)
    log("| kind | name | mechanism | runs | epsilon charged | delta | epsilon lower bound | claim | time | event |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    bugs = 0
    for template in TEMPLATES:
        if args.only and template.name not in args.only:
            continue
        runs = args.mm_runs if template.fresh else args.runs
        start = time.perf_counter()
        result = run_audit(template, PAIRS[template.pair](), runs)
        bugs += result.refuted
        log(row("template", template.name, template.mechanism, result, time.perf_counter() - start))
    missed = 0
    for control in () if args.no_controls else CONTROLS:
        if args.only and control.name not in args.only:
            continue
        template = BY_NAME[control.template]
        runs = max(control.runs, args.mm_runs if template.fresh else args.runs)
        start = time.perf_counter()
        with pytest.MonkeyPatch.context() as patch:
            control.patch(patch)
            result = run_audit(template, PAIRS[template.pair](), runs, seed=12345)
        missed += not result.refuted
        log(row("control", control.name, control.what, result, time.perf_counter() - start))
    log(f"templates refuted: {bugs}; controls missed: {missed}")
    return 1 if bugs or missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
