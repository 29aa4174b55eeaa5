"""SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL uses it: verifiers and the server side.

SASLprep is scramp's (the SCRAM implementation pg8000 uses), with PostgreSQL's fallback to the
raw password; the server side of the exchange is written here, because scramp's server refuses
the empty user name libpq sends (`n=,r=...`: RFC 5802 asks for one character, PostgreSQL ignores
the name, the startup packet carries it), so psql, psycopg and every libpq client could not log
in through it (tests/unit/server/test_scram.py shows it). A verifier is
`SCRAM-SHA-256$<iterations>:<salt_b64>$<StoredKey_b64>:<ServerKey_b64>`, the format of
PostgreSQL's pg_authid.rolpassword, so a verifier made by `dpsql hash-password` is also valid in
PostgreSQL and vice versa. The server never sees or stores the password. Channel binding
(SCRAM-SHA-256-PLUS) is not offered.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from scramp import ScramException
from scramp.utils import saslprep as _strict_saslprep

MECHANISM = "SCRAM-SHA-256"
DEFAULT_ITERATIONS = 4096  # PostgreSQL's default (scram_iterations)
SALT_BYTES = 16
NONCE_BYTES = 18


class ScramError(Exception):
    """The exchange failed: malformed message, wrong nonce, or wrong password."""


@dataclass(frozen=True, slots=True)
class Verifier:
    """A parsed SCRAM-SHA-256 verifier."""

    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    def text(self) -> str:
        """The PostgreSQL verifier text."""
        return f"{MECHANISM}${self.iterations}:{_b64(self.salt)}${_b64(self.stored_key)}:{_b64(self.server_key)}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as err:
        raise ScramError("invalid base64") from err


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def saslprep(password: str) -> str:
    """SASLprep (RFC 4013) of a password (scramp's); like PostgreSQL and libpq, the raw text when
    it is not a valid SASLprep string (a prohibited or unassigned character)."""
    try:
        return str(_strict_saslprep(password))
    except ScramException:
        return password


def make_verifier(password: str, *, salt: bytes | None = None, iterations: int = DEFAULT_ITERATIONS) -> str:
    """A SCRAM-SHA-256 verifier for `password` (fresh random salt unless given)."""
    salt = salt if salt is not None else secrets.token_bytes(SALT_BYTES)
    salted = hashlib.pbkdf2_hmac("sha256", saslprep(password).encode("utf-8"), salt, iterations)
    client_key = _hmac(salted, b"Client Key")
    verifier = Verifier(iterations, salt, hashlib.sha256(client_key).digest(), _hmac(salted, b"Server Key"))
    return verifier.text()


def parse_verifier(text: str) -> Verifier:
    """Parse a PostgreSQL SCRAM-SHA-256 verifier; ScramError when it is not one."""
    try:
        mechanism, params, keys = text.split("$")
        iterations_text, salt_text = params.split(":")
        stored_text, server_text = keys.split(":")
        iterations = int(iterations_text)
    except ValueError as err:
        raise ScramError("not a SCRAM-SHA-256 verifier (expected SCRAM-SHA-256$<iter>:<salt>$<stored>:<server>)") from err
    if mechanism != MECHANISM or iterations < 1:
        raise ScramError("not a SCRAM-SHA-256 verifier")
    verifier = Verifier(iterations, _unb64(salt_text), _unb64(stored_text), _unb64(server_text))
    if len(verifier.stored_key) != 32 or len(verifier.server_key) != 32:
        raise ScramError("not a SCRAM-SHA-256 verifier (keys must be 32 bytes)")
    return verifier


def mock_verifier(secret: bytes, user: str) -> Verifier:
    """A verifier no password matches, stable per user: unknown users look like known ones."""
    salt = _hmac(secret, b"salt:" + user.encode("utf-8"))[:SALT_BYTES]
    return Verifier(DEFAULT_ITERATIONS, salt, _hmac(secret, b"stored:" + user.encode()), _hmac(secret, b"server:" + user.encode()))


def _attributes(text: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError("malformed SCRAM message")
        attrs.setdefault(part[0], part[2:])
    return attrs


class ScramServer:
    """The server side of one SCRAM-SHA-256 exchange (sans-IO).

    `first(client_first) -> server_first`, then `final(client_final) -> server_final`, which
    raises ScramError when the proof is wrong. A mock verifier (unknown user) fails at `final`.
    """

    def __init__(self, verifier: Verifier, *, nonce: str | None = None) -> None:
        self._verifier = verifier
        self._server_nonce = nonce if nonce is not None else _b64(secrets.token_bytes(NONCE_BYTES))
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._gs2_header = ""

    def first(self, client_first: bytes) -> bytes:
        """Answer the client-first-message with the server-first-message."""
        text = _decode(client_first)
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y") or parts[1]:
            # 'p=...' is channel binding, which is not offered; an authzid is not supported.
            raise ScramError("unsupported SCRAM channel binding or authorization identity")
        self._gs2_header = f"{parts[0]},{parts[1]},"
        self._client_first_bare = parts[2]
        attrs = _attributes(self._client_first_bare)
        client_nonce = attrs.get("r", "")
        # RFC 5802: a nonce is printable ASCII without ','; anything else could not be echoed back.
        if not client_nonce or "m" in attrs or not all("!" <= ch <= "~" for ch in client_nonce):
            raise ScramError("malformed client-first-message")
        self._nonce = client_nonce + self._server_nonce
        v = self._verifier
        self._server_first = f"r={self._nonce},s={_b64(v.salt)},i={v.iterations}"
        return self._server_first.encode("ascii")

    def final(self, client_final: bytes) -> bytes:
        """Check the client proof; return the server-final-message (server signature)."""
        text = _decode(client_final)
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise ScramError("malformed client-final-message")
        attrs = _attributes(without_proof)
        if attrs.get("c") != _b64(self._gs2_header.encode("ascii")) or attrs.get("r") != self._nonce:
            raise ScramError("SCRAM nonce or channel binding mismatch")
        proof = _unb64(proof_text)
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self._verifier.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("password authentication failed")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.sha256(client_key).digest(), self._verifier.stored_key):
            raise ScramError("password authentication failed")
        return f"v={_b64(_hmac(self._verifier.server_key, auth_message))}".encode("ascii")


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ScramError("SCRAM message is not UTF-8") from err


def client_proof(password: str, salt: bytes, iterations: int, auth_message: bytes) -> tuple[bytes, bytes]:
    """The client proof and the expected server signature (for tests of the server side)."""
    salted = hashlib.pbkdf2_hmac("sha256", saslprep(password).encode("utf-8"), salt, iterations)
    client_key = _hmac(salted, b"Client Key")
    signature = _hmac(hashlib.sha256(client_key).digest(), auth_message)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return proof, _hmac(_hmac(salted, b"Server Key"), auth_message)
