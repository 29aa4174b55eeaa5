"""A plan's identity: the digest of a canonical form of the plan itself (the ledger's `plan_hash`).

The canonical form is a walk of the plan's frozen values: each dataclass by its class name and
fields in declaration order, tuples and lists in order, mappings in insertion order (a policy's
order, fixed by its text), sets sorted, exact numbers as fractions, dates in ISO form, and each
sqlglot expression by its node classes and arguments (sorted by name; absent and empty arguments
left out). Nothing in it depends on the process: no object ids, no `hash()` of strings (which
Python salts per process), no rendered SQL. So the same plan has the same identity in every
process and release of the engine's SQL renderer, and any change to what is computed or how it
is noised (an epsilon, a bound, a filter, a mechanism) changes it. A table's `source` (where its
file lies on this machine) is left out, so the identity is the same on every machine. It is an
identity column only: budget decisions never read it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import hashlib
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import PurePath
from typing import Any

from sqlglot import exp

from dpsql.catalog.policy import Table

VERSION = b"dpsql-plan-1"
DIGEST_CHARS = 16  # as the ledger's plan_hash column has always held


def plan_identity(*parts: object) -> str:
    """The digest (hex, 16 characters) of the canonical form of `parts` (a plan, or a
    post-processing query and its plans)."""
    out: list[str] = []
    _Canon(out).add(parts)
    digest = hashlib.sha256(VERSION)
    digest.update("\x1f".join(out).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:DIGEST_CHARS]


def canonical_form(*parts: object) -> str:
    """The canonical form itself, readable (tests and debugging)."""
    out: list[str] = []
    _Canon(out).add(parts)
    return "\x1f".join(out)


class _Canon:
    """One walk: shared values (a table, a column used by many aggregates) are written once and
    then referred to by their position, so the form stays linear in the plan's size."""

    def __init__(self, out: list[str]) -> None:
        self.out = out
        self.seen: dict[int, int] = {}
        self.keep: list[object] = []  # the values `seen` refers to, alive for the walk

    def add(self, value: object) -> None:
        kind = type(value)
        write = _WRITERS.get(kind)
        if write is None:
            write = _WRITERS[kind] = _writer(kind)
        write(self, value)

    def _shared(self, value: Any, write: Callable[[Any], None]) -> None:
        key = id(value)
        index = self.seen.get(key)
        if index is not None:
            self.out.append(f"@{index}")
            return
        self.seen[key] = len(self.seen)
        self.keep.append(value)
        write(value)

    def _dataclass(self, value: Any) -> None:
        kind = type(value)
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _FIELDS[kind] = _fields(kind)
        head, names = fields
        out = self.out
        out.extend(head)
        for name in names:
            out.append(name)
            self.add(getattr(value, name))

    def _expression(self, node: exp.Expr) -> None:
        args = [(name, arg) for name, arg in node.args.items() if arg is not None and not (isinstance(arg, list) and not arg)]
        self.out.append(f"X{type(node).__name__}({len(args)}")
        for name, arg in sorted(args, key=lambda item: item[0]):
            self.out.append(name)
            self.add(arg)


# --- the writer of each kind of value, chosen once per type --------------------------------------------
# The same tests in the same order as a plain chain of isinstance checks (bool before int, an Enum
# that is also an int is an Enum...), decided once per exact type: a walk writes tens of
# thousands of values, of a few dozen types.

def _scalar(value: object) -> str:  # noqa: C901 - one branch per kind of value, flat on purpose
    if value is None or isinstance(value, (bool, int)):
        return f"{type(value).__name__[0]}{value!r}"  # bool before int: True is "bTrue", 1 is "i1"
    if isinstance(value, str):
        return f"s{len(value)}:{value}"
    if isinstance(value, Fraction):
        return f"q{value.numerator}/{value.denominator}"
    if isinstance(value, float):
        return f"f{value!r}"
    if isinstance(value, decimal.Decimal):
        return f"d{value}"
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return f"t{value.isoformat()}"
    if isinstance(value, enum.Enum):
        return f"e{type(value).__name__}.{value.name}"
    assert isinstance(value, PurePath)
    return f"p{value.as_posix()}"


def _write_scalar(canon: _Canon, value: object) -> None:
    canon.out.append(_scalar(value))


def _write_expression(canon: _Canon, value: object) -> None:
    canon._shared(value, canon._expression)


def _write_dataclass(canon: _Canon, value: object) -> None:
    canon._shared(value, canon._dataclass)


def _write_sequence(canon: _Canon, value: Any) -> None:
    canon.out.append(f"[{len(value)}")
    for item in value:
        canon.add(item)


def _write_mapping(canon: _Canon, value: Any) -> None:
    canon.out.append(f"{{{len(value)}")
    for key, item in value.items():
        canon.add(key)
        canon.add(item)


def _write_set(canon: _Canon, value: Any) -> None:
    items = []
    for item in value:
        sub: list[str] = []
        _Canon(sub).add(item)
        items.append("\x1e".join(sub))
    canon.out.append(f"<{len(items)}")
    canon.out.extend(sorted(items))


# Decided once per type (types, not values: a few dozen); a race only computes an entry twice.
_WRITERS: dict[type, Callable[[_Canon, Any], None]] = {}
_FIELDS: dict[type, tuple[tuple[str, str], tuple[str, ...]]] = {}
_SCALARS = (type(None), bool, int, str, Fraction, float, decimal.Decimal, dt.date, dt.datetime, dt.time, enum.Enum, PurePath)


def _writer(kind: type) -> Callable[[_Canon, Any], None]:
    """How values of exactly this type are written (the checks of the canonical form, in its order)."""
    if issubclass(kind, _SCALARS):
        return _write_scalar
    if issubclass(kind, exp.Expr):
        return _write_expression
    if dataclasses.is_dataclass(kind):
        return _write_dataclass
    if issubclass(kind, (tuple, list)):
        return _write_sequence
    if issubclass(kind, Mapping):
        return _write_mapping
    if issubclass(kind, (set, frozenset)):
        return _write_set

    def refuse(canon: _Canon, value: object) -> None:
        raise TypeError(f"no canonical form for {kind.__qualname__} (dpsql/ir/identity.py)")

    return refuse


def _fields(kind: type) -> tuple[tuple[str, str], tuple[str, ...]]:
    """A dataclass type's head (its name and field count) and the fields written, in declaration order."""
    fields = dataclasses.fields(kind)
    # A table's `source` (where the data file lies on this machine) is not what the plan computes.
    names = tuple(f.name for f in fields if not (f.name == "source" and issubclass(kind, Table)))
    return (f"D{kind.__qualname__}", f"({len(fields)}"), names
