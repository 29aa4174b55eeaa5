"""Server startup: the shared database prepares the policy's sources, and nothing imports the PLD
library (dp-accounting, numpy and scipy: 0.6-1.2 s): the privacy filter decides without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from dpsql.backend.auxiliary.files import write_parquet
from dpsql.demo.people import PARQUET_NAME, POLICY_NAME, generate_people, policy_text
from dpsql.server.scram import make_verifier

SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from dpsql.server.transport import ServerConfig, build_context
    policy = Path(sys.argv[1])
    context = build_context(ServerConfig(policy=policy, port=0, ledger=policy.with_name("ledger.sqlite")))
    context.wait_prepared()
    session = context.open_session("a")
    session.execute("SELECT COUNT(*) FROM people")  # a charge, and the budget report after it
    print(session.queries_left is not None, session.remaining.epsilon > 0)
    if len(sys.argv) > 2:
        from dpsql.accounting.accountant import preload
        preload()  # the negative control: what importing the library looks like
    context.close()
    print("dp_accounting.pld.privacy_loss_distribution" in sys.modules)
""")


def _run(tmp_path: Path, *extra: str) -> list[str]:
    write_parquet(generate_people(2_000, seed=1), tmp_path / PARQUET_NAME)
    text = policy_text(source=PARQUET_NAME) + f'\n[analysts.a]\npassword = "{make_verifier("pw")}"\n'
    (tmp_path / POLICY_NAME).write_text(text, encoding="utf-8")
    # A fresh interpreter: in this one the library may already be imported by other tests.
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / POLICY_NAME), *extra], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_server_charges_and_reports_the_budget_without_the_pld_library(tmp_path: Path) -> None:
    assert _run(tmp_path) == ["True", "True", "False"]


def test_negative_control_importing_the_library_is_seen(tmp_path: Path) -> None:
    assert _run(tmp_path, "control") == ["True", "True", "True"]
