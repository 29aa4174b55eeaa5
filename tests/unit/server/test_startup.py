"""Server startup: the PLD accountant's library is imported in the background (0.6-1.2 s), not
inside the first connection's first budget report; the shared database prepares the policy's
sources."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from dpsql.backend.files import write_parquet
from dpsql.demo.people import PARQUET_NAME, POLICY_NAME, generate_people, policy_text
from dpsql.server.scram import make_verifier

SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from dpsql.server.app import ServerConfig, build_context
    policy = Path(sys.argv[1])
    context = build_context(ServerConfig(policy=policy, port=0, ledger=policy.with_name("ledger.sqlite")))
    context.wait_prepared()
    context.close()  # joins the background import
    print("dp_accounting.pld.privacy_loss_distribution" in sys.modules)
""")


def test_startup_imports_the_accountant_and_prepares_in_the_background(tmp_path: Path) -> None:
    write_parquet(generate_people(2_000, seed=1), tmp_path / PARQUET_NAME)
    text = policy_text(source=PARQUET_NAME) + f'\n[analysts.a]\npassword = "{make_verifier("pw")}"\n'
    (tmp_path / POLICY_NAME).write_text(text, encoding="utf-8")
    # A fresh interpreter: in this one the library may already be imported by other tests.
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / POLICY_NAME)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_negative_control_a_plain_session_does_not_import_it(tmp_path: Path) -> None:
    # The check above can fail: opening a session and answering nothing imports no PLD library.
    write_parquet(generate_people(2_000, seed=1), tmp_path / PARQUET_NAME)
    (tmp_path / POLICY_NAME).write_text(policy_text(source=PARQUET_NAME), encoding="utf-8")
    script = ("import sys, dpsql; con = dpsql.connect(policy=sys.argv[1], ledger=':memory:', prepare=False); con.close(); "
              "print('dp_accounting.pld.privacy_loss_distribution' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / POLICY_NAME)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
