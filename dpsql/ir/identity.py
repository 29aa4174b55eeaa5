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

    def add(self, value: object) -> None:  # noqa: C901 - one branch per kind of value, flat on purpose
        out = self.out
        if value is None or isinstance(value, (bool, int)):
            out.append(f"{type(value).__name__[0]}{value!r}")  # bool before int: True is "bTrue", 1 is "i1"
        elif isinstance(value, str):
            out.append(f"s{len(value)}:{value}")
        elif isinstance(value, Fraction):
            out.append(f"q{value.numerator}/{value.denominator}")
        elif isinstance(value, float):
            out.append(f"f{value!r}")
        elif isinstance(value, decimal.Decimal):
            out.append(f"d{value}")
        elif isinstance(value, (dt.date, dt.datetime, dt.time)):
            out.append(f"t{value.isoformat()}")
        elif isinstance(value, enum.Enum):
            out.append(f"e{type(value).__name__}.{value.name}")
        elif isinstance(value, PurePath):
            out.append(f"p{value.as_posix()}")
        elif isinstance(value, exp.Expr):
            self._shared(value, self._expression)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            self._shared(value, self._dataclass)
        elif isinstance(value, (tuple, list)):
            out.append(f"[{len(value)}")
            for item in value:
                self.add(item)
        elif isinstance(value, Mapping):
            out.append(f"{{{len(value)}")
            for key, item in value.items():
                self.add(key)
                self.add(item)
        elif isinstance(value, (set, frozenset)):
            items = []
            for item in value:
                sub: list[str] = []
                _Canon(sub).add(item)
                items.append("\x1e".join(sub))
            out.append(f"<{len(items)}")
            out.extend(sorted(items))
        else:
            raise TypeError(f"no canonical form for {type(value).__qualname__} (dpsql/ir/identity.py)")

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
        self.out.append(f"D{type(value).__qualname__}")
        fields = dataclasses.fields(value)
        self.out.append(f"({len(fields)}")
        for field in fields:
            if field.name == "source" and isinstance(value, Table):
                continue  # where the data file lies on this machine: not what the plan computes
            self.out.append(field.name)
            self.add(getattr(value, field.name))

    def _expression(self, node: exp.Expr) -> None:
        args = [(name, arg) for name, arg in node.args.items() if arg is not None and not (isinstance(arg, list) and not arg)]
        self.out.append(f"X{type(node).__name__}({len(args)}")
        for name, arg in sorted(args, key=lambda item: item[0]):
            self.out.append(name)
            self.add(arg)
