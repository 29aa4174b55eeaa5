"""The state machine's hardening, bytes only: plaintext queued behind an SSLRequest under TLS,
the post-login cap switching on at login, and the serve flags overriding [server]."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import pandas as pd
import pytest

from dpsql.catalog.loader import load_policy
from dpsql.server import codec, scram
from dpsql.server.catalog_emulation import CatalogEmulation
from dpsql.server.cli_args import serve_parser
from dpsql.server.protocol import PgConnection, ServerContext
from dpsql.server.transport import ServerConfig
from dpsql.session import open_session
from tests.conftest import make_policy_text
from tests.unit.server.test_protocol import login, messages, startup, untyped


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory, people_frame: pd.DataFrame) -> ServerContext:
    path: Path = tmp_path_factory.mktemp("limits") / "policy.toml"
    extra = f'[analysts.alice]\npassword = "{scram.make_verifier("pw")}"\n\n[server]\nmax_message_bytes = 30000\n'
    path.write_text(make_policy_text(extra=extra), encoding="utf-8")
    policy = load_policy(path)
    return ServerContext(policy, CatalogEmulation(policy), lambda user: open_session(None, policy, analyst=user, tables={"people": people_frame}),
                         limits=policy.server)


def test_plaintext_after_an_ssl_request_is_refused_under_tls(context: ServerContext) -> None:
    connection = PgConnection(dataclasses.replace(context, tls=True), pid=1)
    out = connection.receive(untyped(struct.pack("!i", codec.SSL_REQUEST)) + startup(user="alice"))
    (kind, payload), = messages(bytes(out.data))
    assert kind == b"E" and b"C08P01" in payload and b"SFATAL" in payload
    assert out.close and not out.start_tls


def test_the_post_login_cap_applies_only_after_login(context: ServerContext) -> None:
    before = PgConnection(context, pid=2)
    assert before.decoder.limit == codec.MAX_STARTUP_MESSAGE
    connection, _ = login(context)
    assert connection.authenticated and connection.decoder.limit == 30_000


def test_serve_flags_override_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(make_policy_text(extra="[server]\nmax_connections = 5\nstatement_timeout = 10\n"), encoding="utf-8")
    policy = load_policy(path)
    args = serve_parser().parse_args(["--policy", str(path), "--max-connections", "9", "--authentication-timeout", "2.5"])
    config = ServerConfig(policy=path, max_connections=args.max_connections, authentication_timeout=args.authentication_timeout,
                          statement_timeout=args.statement_timeout)
    limits = config.limits(policy)
    assert (limits.max_connections, limits.authentication_timeout, limits.statement_timeout) == (9, 2.5, 10.0)


@pytest.mark.parametrize("flag, value", [("--max-connections", "0"), ("--statement-timeout", "-1"), ("--authentication-timeout", "nan")])
def test_serve_flags_are_checked(tmp_path: Path, flag: str, value: str) -> None:
    with pytest.raises(SystemExit):
        serve_parser().parse_args(["--policy", "p.toml", flag, value])
