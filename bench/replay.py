"""Latency of a replayed answer against a charged one (docs/privacy-model.md, "Replayed answers").

    python bench/replay.py [--repeats 30] [--rows 100000]

Run by hand, not a test (bench/README.md). Every number printed is measured in this run. The
bundled demo's people table (Parquet, --rows rows) behind a SQLite ledger file in the temp
directory (a disk: each charge's COMMIT is fsync'ed). For each query, one connection with
`[budget] replay_seconds = 0` runs it --repeats times (each run charged, noised and computed: the
plan is cached after the first), and one with replay on runs it once (charged, kept) and then
--repeats times more (replayed: a read of the ledger's `replays` table and the JSON decode).
Medians and 90th percentiles of the repeats, in milliseconds.

`--server` also measures through `dpsql serve` (a ServerThread on 127.0.0.1) with psycopg, one
new connection per statement as Superset's NullPool opens them (login included in the time).
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

import dpsql
from dpsql.backend.auxiliary.files import write_parquet
from dpsql.demo.people import generate_people, policy_text

QUERIES = {
    "count": "SELECT COUNT(*) FROM people",
    "grouped avg": "SELECT dept, COUNT(*) AS n, AVG(income) AS m FROM people GROUP BY dept",
}


def _policy(directory: Path, replay: float) -> Path:
    text = policy_text("people.parquet")
    text = re.sub(r"(?m)^epsilon = \S+", "epsilon = 1000000.0", text, count=1)
    text = re.sub(r"(?m)^(\[budget\].*)$", rf"\1\nreplay_seconds = {replay}", text, count=1)
    path = directory / f"policy-{replay:g}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _times(con: dpsql.Connection, sql: str, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _server_times(directory: Path, replay: float, sql: str, repeats: int) -> list[float]:
    import psycopg

    from dpsql.server.scram import make_verifier
    from dpsql.server.transport import ServerConfig, ServerThread

    policy = _policy(directory, replay)
    policy.write_text(policy.read_text(encoding="utf-8") + f'\n[analysts.bench]\npassword = "{make_verifier("pw")}"\n',
                      encoding="utf-8")
    config = ServerConfig(policy=policy, port=0, ledger=directory / f"server-{replay:g}.sqlite")
    with ServerThread(config) as server:
        dsn = f"host=127.0.0.1 port={server.port} user=bench password=pw dbname=db sslmode=disable"

        def once() -> float:
            start = time.perf_counter()
            with psycopg.connect(dsn, autocommit=True) as con:
                con.execute(sql).fetchall()
            return (time.perf_counter() - start) * 1000

        once()  # the first: charged (and kept, with replay on)
        return [once() for _ in range(repeats)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--server", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_parquet(generate_people(args.rows, seed=1), directory / "people.parquet")
        ledger = directory / "ledger.sqlite"
        for name, sql in QUERIES.items():
            with dpsql.connect(policy=_policy(directory, 0), tables={}, ledger=ledger, analyst="charged") as con:
                con.execute(sql).fetchall()  # the plan compiled and the bounded relation built
                charged = _times(con, sql, args.repeats)
            with dpsql.connect(policy=_policy(directory, 3600), tables={}, ledger=ledger, analyst="replayed") as con:
                con.execute(sql).fetchall()  # charged once and kept
                replayed = _times(con, sql, args.repeats)
            for label, times in (("charged", charged), ("replayed", replayed)):
                p90 = statistics.quantiles(times, n=10)[-1]
                print(f"{name:12s} {label:9s} median {statistics.median(times):8.2f} ms   p90 {p90:8.2f} ms")
            if args.server:
                for label, replay in (("charged", 0.0), ("replayed", 3600.0)):
                    times = _server_times(directory, replay, sql, args.repeats)
                    p90 = statistics.quantiles(times, n=10)[-1]
                    print(f"{name:12s} {label:9s} server median {statistics.median(times):8.2f} ms   p90 {p90:8.2f} ms")


if __name__ == "__main__":
    main()
