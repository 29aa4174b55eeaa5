"""Print the corpus counts for a closing note: `python -m tests.corpus.report [--misses]`.

Runs every query of tests/corpus/queries through dpsql (the same fixed seed as the test) and
prints the counts, the per-source table, the misses by cause and by refusal code, and every
error; `--misses` adds one line per miss with its refusal.
"""

from __future__ import annotations

import sys
import time

from tests.corpus import runner


def main(argv: list[str]) -> int:
    started = time.perf_counter()
    summary = runner.run_corpus()
    print(runner.report(summary))
    if "--misses" in argv:
        print("\nmisses:")
        print(runner.misses_listing(summary))
    print(f"\n{len(summary.outcomes)} queries in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
