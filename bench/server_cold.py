"""Cold connections through `dpsql serve`: what each new connection's first query costs.

    python bench/server_cold.py [--rows 10000000] [--connections 4] [--data-dir bench/data] [--wait]

Run by hand, not a test (bench/README.md). A BI tool opens a pool of connections and reconnects
often; each connection is a session. Printed, all measured in this run (time.perf_counter):

- raw DuckDB: CREATE TABLE from the Parquet file + the query (the baseline of the cold ratio);
- the server started in this process (ServerThread, ledger in a temp directory), then for each of
  --connections psycopg 3 connections opened one after another: connect, then the first query
  (`--query`, default the partition-selection one: it needs the bounded and the keyed relation),
  then a second, warm run; the cold ratio = (connect + first query) / (raw load + query).
  --wait lets the server finish its startup preparation before the first connection.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.overhead import ensure_data, log, source_state, sql_string  # noqa: E402
from dpsql.server.scram import make_verifier  # noqa: E402
from dpsql.server.transport import ServerConfig, ServerThread  # noqa: E402

QUERY = "SELECT region, SUM(income) FROM people WHERE age > 40 GROUP BY region"
DP_OPTIONS = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) "


def raw_cold(parquet: Path, query: str) -> float:
    con = duckdb.connect(":memory:")
    started = time.perf_counter()
    con.execute(f"CREATE TABLE people AS SELECT * FROM read_parquet({sql_string(str(parquet))})")
    con.execute(query).fetchall()
    elapsed = time.perf_counter() - started
    con.close()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parent / "data")
    parser.add_argument("--query", default=QUERY)
    parser.add_argument("--wait", action="store_true", help="let the startup preparation finish first")
    args = parser.parse_args(argv)
    log(f"source: {source_state()}")
    parquet, policy = ensure_data(args.data_dir, args.rows)
    # delta > 0 for partition selection (region has no public domain)
    dp_query = args.query if "DIFFERENTIAL_PRIVACY" in args.query.upper() else DP_OPTIONS + args.query.strip()[len("SELECT "):]
    baseline = raw_cold(parquet, args.query)
    with tempfile.TemporaryDirectory() as tmp:
        served = Path(tmp) / "policy.toml"
        text = policy.read_text(encoding="utf-8").replace('source = "people.parquet"', f"source = {sql_string(str(parquet))}".replace("'", '"'))
        served.write_text(text + f'\n[analysts.bench]\npassword = "{make_verifier("bench-pw")}"\n', encoding="utf-8")
        started = time.perf_counter()
        with ServerThread(ServerConfig(policy=served, port=0, ledger=Path(tmp) / "ledger.sqlite")) as server:
            log(f"server started in {time.perf_counter() - started:.3f}s")
            wait = getattr(server.server.context, "wait_prepared", None)  # None: no shared database
            log(f"shared database: {'yes' if wait is not None else 'no (a database per connection)'}")
            if args.wait and wait is not None:
                wait()
                log(f"startup preparation done after {time.perf_counter() - started:.3f}s")
            dsn = f"host=127.0.0.1 port={server.port} user=bench password=bench-pw dbname=x sslmode=disable"
            log(f"{args.rows:,} rows; query: {dp_query}")
            log(f"raw DuckDB load + query: {baseline * 1000:.0f} ms")
            log("connection  connect ms  first query ms  warm query ms  cold ratio")
            for index in range(args.connections):
                t0 = time.perf_counter()
                con = psycopg.connect(dsn, autocommit=True)
                t1 = time.perf_counter()
                con.execute(dp_query).fetchall()
                t2 = time.perf_counter()
                con.execute(dp_query).fetchall()
                t3 = time.perf_counter()
                log(f"{index + 1:>10}  {(t1 - t0) * 1000:>10.1f}  {(t2 - t1) * 1000:>14.1f}  {(t3 - t2) * 1000:>13.1f}  "
                    f"{(t2 - t0) / baseline:>9.2f}x")
                con.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
