"""Queries per second and p50/p99 latency through `dpsql serve` vs the DB-API in-process.

    python bench/server.py [--clients 1 4 16] [--queries 240] [--warmup 2]

Run by hand, not a test (bench/README.md). Every number printed is measured in this run:

1. Data: `people`, 100,000 rows as Parquet, from bench/overhead.py's data (the demo generator with
   15% of persons above max_rows = 3), with its policy plus the analyst `bench` (a SCRAM
   verifier; budget epsilon 1e9, so nothing is exhausted).
2. Server: `dpsql serve` in a subprocess on 127.0.0.1 (a free port), ledger in a temp directory.
   Clients: N threads, each with its own psycopg 3 connection (autocommit, server-side
   parameters), connected and warmed up before the clock starts.
3. In-process: the same N threads, each with its own `dpsql.connect(...)` DB-API connection on
   the same policy and one shared ledger file (one analyst, as through the server), warmed up
   the same way.
4. Each thread runs its share of --queries statements, cycling through the query mix below; a
   query's latency is time.perf_counter around execute + fetchall. QPS = queries / wall time of
   the measured phase. Every query is a real charged query with real (cryptographic) noise.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import psycopg
import sqlglot

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import dpsql  # noqa: E402
from bench.overhead import ensure_data  # noqa: E402
from dpsql.server.scram import make_verifier  # noqa: E402

HERE = Path(__file__).resolve().parent
PASSWORD = "bench-password"
ROWS = 100_000
QUERIES = (
    ("count", "SELECT COUNT(*) FROM people WHERE age > {p}", (40,)),
    ("dept", "SELECT dept, COUNT(*), AVG(income) FROM people GROUP BY dept", ()),
    ("region", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) region, SUM(income) FROM people "
               "WHERE age > {p} GROUP BY region", (40,)),
)  # fmt: skip


def write_policy(directory: Path, data_dir: Path) -> Path:
    """overhead.py's policy for 100,000 rows (source: its cached Parquet) and the `bench` analyst."""
    parquet, policy = ensure_data(data_dir, ROWS)
    text = policy.read_text(encoding="utf-8").replace('source = "people.parquet"', f'source = "{parquet}"', 1)
    assert str(parquet) in text, "the bench policy text changed: update write_policy"
    text += f'\n[analysts.bench]\npassword = "{make_verifier(PASSWORD)}"\n'
    path = directory / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(policy: Path, ledger: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    command = [sys.executable, "-m", "dpsql", "serve", "--policy", str(policy), "--port", str(port), "--ledger", str(ledger)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not start: " + (process.stderr.read().decode() if process.stderr else ""))


Runner = Callable[[str, tuple[object, ...]], int]


def run_level(make_runner: Callable[[], tuple[Runner, Callable[[], None]]], clients: int, total: int, warmup: int) -> dict[str, float]:
    """QPS and latency percentiles of `clients` threads sharing `total` queries."""
    runners = [make_runner() for _ in range(clients)]
    for run, _ in runners:
        for _ in range(warmup):
            for _, sql, params in QUERIES:
                run(sql, params)
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(clients + 1)
    share = [total // clients + (1 if i < total % clients else 0) for i in range(clients)]

    def work(index: int) -> None:
        run = runners[index][0]
        mine = []
        barrier.wait()
        for i in range(share[index]):
            _, sql, params = QUERIES[(i + index) % len(QUERIES)]
            start = time.perf_counter()
            run(sql, params)
            mine.append(time.perf_counter() - start)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    for _, close in runners:
        close()
    latencies.sort()
    return {
        "qps": len(latencies) / wall,
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1000,
    }


def server_runner(port: int) -> tuple[Runner, Callable[[], None]]:
    con = psycopg.connect(f"host=127.0.0.1 port={port} user=bench password={PASSWORD} dbname=bench sslmode=disable", autocommit=True)

    def run(sql: str, params: tuple[object, ...]) -> int:
        return len(con.execute(sql.format(p="%s"), params).fetchall())

    return run, con.close


def inprocess_runner(policy: Path, ledger: Path) -> tuple[Runner, Callable[[], None]]:
    con = dpsql.connect(policy=policy, analyst="bench", ledger=ledger)

    def run(sql: str, params: tuple[object, ...]) -> int:
        cursor = con.cursor()
        cursor.execute(sql.format(p="?"), list(params))
        return len(cursor.fetchall())

    return run, con.close


def header() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "dpsql"], cwd=HERE.parent, capture_output=True, text=True, check=False).stdout.strip()
    print(f"command: {' '.join([Path(sys.argv[0]).name, *sys.argv[1:]])}")
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"dpsql {dpsql.__version__}, DuckDB {duckdb.__version__}, sqlglot {sqlglot.__version__}, psycopg {psycopg.__version__}")
    print(f"commit {commit or '?'}{' (dpsql/ has uncommitted edits)' if dirty else ''}")
    print("queries (cycled): " + "; ".join(f"{label}: {sql.format(p='$1')}" for label, sql, _ in QUERIES))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--queries", type=int, default=240, help="measured queries per level (shared by the clients)")
    parser.add_argument("--warmup", type=int, default=2, help="rounds of the query mix per client before the clock")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data", help="where generated data is cached")
    args = parser.parse_args()
    header()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        policy = write_policy(directory, args.data_dir)
        process, port = start_server(policy, directory / "server-ledger.sqlite")
        ledger = directory / "inprocess-ledger.sqlite"  # one analyst, one ledger: shared by the threads as by the server
        try:
            print(f"\n{'clients':>7} | {'mode':<10} | {'QPS':>7} | {'p50 ms':>7} | {'p99 ms':>7}")
            for clients in args.clients:
                measured = {
                    "server": run_level(lambda: server_runner(port), clients, args.queries, args.warmup),
                    "in-process": run_level(lambda: inprocess_runner(policy, ledger), clients, args.queries, args.warmup),
                }
                for mode, m in measured.items():
                    print(f"{clients:>7} | {mode:<10} | {m['qps']:>7.1f} | {m['p50']:>7.2f} | {m['p99']:>7.2f}")
                ratio = measured["in-process"]["qps"] / measured["server"]["qps"]
                print(f"{'':>7} | in-process / server QPS = {ratio:.2f}x")
        finally:
            process.terminate()
            process.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
