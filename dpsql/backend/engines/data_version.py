"""Which version of the data a session answers from, for the replay of released answers.

A version is the digest of where each of the policy's tables is read and of the size and
modification time (nanoseconds) of every local file read: a Parquet or CSV source, or the DuckDB
database file (and its write-ahead log). Replacing or rewriting a file changes it, so an answer
released from the old file is never given again as an answer about the new one (the first
statement after the change is charged and noised anew).

An in-memory table (a DataFrame given as `tables=`) has a version counter instead: each distinct
frame object this process is given gets the next number (`frame_version`), with its row count
and column names, and keeps it while the object lives. Giving `connect` a new frame (a reloaded
or filtered one, a copy) is a new version; a frame changed in place without changing its length
or columns keeps its version (pass a new frame to start afresh). The counter is this process's
own (a random process id is part of it), so a frame's answers are replayed only in the process
that holds the frame. Data that has no version at all is not shared by sessions: a remote URI
(`s3a://...`), a table of a Spark catalog. Then `data_version` answers None and the session
replays only its own answers.

A stale version is never a privacy question (a replay gives back an answer already released and
charged, whatever the data is now); it only decides when an answer is fresh enough to give again.

Public: it reads file metadata the data owner's process can see, never the data, and the digest
is only compared, never shown.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import threading
import uuid
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpsql.catalog.policy import Policy

VERSION = b"dpsql-data-1"
_PROCESS = uuid.uuid4().hex  # frame versions mean something in this process only
_counter = itertools.count(1)
_frames: dict[int, tuple[weakref.ref[Any], int]] = {}  # id(frame) -> (the frame, its number)
_lock = threading.RLock()  # reentrant: a weakref callback may run while it is held


def frame_version(frame: Any) -> str | None:
    """An in-memory table's version (module docstring): this process's number for the frame
    object, its row count and column names; None for an object that cannot be tracked."""
    key = id(frame)
    with _lock:
        known = _frames.get(key)
        if known is None or known[0]() is not frame:
            try:
                ref = weakref.ref(frame, lambda _: _forget(key))
            except TypeError:  # not weakly referenceable: no version
                return None
            known = (ref, next(_counter))
            _frames[key] = known
    shape = getattr(frame, "shape", None)
    rows = shape[0] if isinstance(shape, tuple) and shape else getattr(frame, "num_rows", "?")
    columns = "\x1e".join(str(c) for c in getattr(frame, "columns", ()))
    return f"frame\x1f{_PROCESS}\x1f{known[1]}\x1f{rows}\x1f{columns}"


def _forget(key: int) -> None:
    with _lock:
        known = _frames.get(key)
        if known is not None and known[0]() is None:
            del _frames[key]


def data_version(policy: Policy, database: str | Path | None, frames: Mapping[str, object] | None, engine: str) -> str | None:
    """The digest of the data every table of the policy is read from, or None when one of them
    has no file version (module docstring)."""
    parts: list[str] = []
    framed = {name.lower(): frame for name, frame in (frames or {}).items()}
    database_read = False
    for name, table in policy.tables.items():
        if name in framed:
            version = frame_version(framed[name])
            if version is None:
                return None
            parts.append(f"{name}\x1f{version}")
            continue
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
