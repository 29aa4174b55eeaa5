"""Which version of the data a session answers from, for the replay of released answers.

A version is the digest of where each of the policy's tables is read and of the size and
modification time (nanoseconds) of every local file read: a Parquet or CSV source, or the DuckDB
database file (and its write-ahead log). Replacing or rewriting a file changes it, so an answer
released from the old file is never given again as an answer about the new one (the first
statement after the change is charged and noised anew). Data that has no such version cannot be
shared by sessions: a DataFrame (`tables=`), a remote URI (`s3a://...`), a table of a Spark
catalog. Then `data_version` answers None and the session replays only its own answers.

Public: it reads file metadata the data owner's process can see, never the data, and the digest
is only compared, never shown.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Mapping

from dpsql.catalog.model import Policy

VERSION = b"dpsql-data-1"


def data_version(policy: Policy, database: str | Path | None, frames: Mapping[str, object] | None, engine: str) -> str | None:
    """The digest of the data every table of the policy is read from, or None when one of them
    has no file version (module docstring)."""
    parts: list[str] = []
    framed = {name.lower() for name in frames or {}}
    database_read = False
    for name, table in policy.tables.items():
        if name in framed:
            return None
        if table.source is not None:
            if not table.source_is_local:
                return None
            stamp = _stamp(Path(table.source))
            if stamp is None:
                return None
            parts.append(f"{name}\x1fsource\x1f{stamp}")
        elif engine == "duckdb" and database:
            parts.append(f"{name}\x1fdatabase\x1f{table.engine_table or table.name}")
            database_read = True
        else:
            return None
    if database_read:
        assert database is not None
        path = Path(database).expanduser().resolve()
        stamp = _stamp(path)
        if stamp is None:
            return None
        wal = _stamp(Path(f"{path}.wal"))
        parts.append(f"database\x1f{stamp}\x1f{wal}")
    digest = hashlib.sha256(VERSION)
    digest.update("\x1e".join(parts).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _stamp(path: Path) -> str | None:
    """A file's resolved path, size and modification time; None when it is not a readable file."""
    try:
        resolved = path.expanduser().resolve()
        stat = os.stat(resolved)
    except OSError:
        return None
    if not os.path.isfile(resolved):
        return None
    return f"{resolved.as_posix()}\x1f{stat.st_size}\x1f{stat.st_mtime_ns}"
