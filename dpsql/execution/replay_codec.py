"""A released answer as text and back, exactly: what the replay store keeps (execution/replay.py).

JSON, never pickle: the ledger's storage is read back into this process, and loading a pickle
from a database would run whatever code it names. Each cell keeps its Python type (an int stays
an int, 0.1 stays the same float, a Decimal, a date, a timestamp, an interval or a UUID comes
back as one); a value of another type makes the answer unstorable (`Unstorable`), and it is
then simply not kept: the next identical statement is charged and noised anew.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import uuid
from decimal import Decimal
from fractions import Fraction
from typing import Any

from dpsql.accounting.cost import PrivacyCost
from dpsql.result import NOISE_KEYS, NoiseInfo, NoisyResult, ResultColumn

FORMAT = 1
_KINDS = frozenset({"query", "explain", "set", "public", "show", "probe"})


class Unstorable(ValueError):
    """An answer holding a value the codec does not keep exactly."""


def dumps(result: NoisyResult) -> str:
    """The answer as JSON text (its cost as exact fractions; no replay marker).

    Raises:
        Unstorable: a cell or noise field of a type the codec does not keep exactly.
    """
    payload = {
        "format": FORMAT,
        "kind": result.kind,
        "columns": [[c.name, c.type_name] for c in result.columns],
        "rows": [[_value(v) for v in row] for row in result.rows],
        "noise": [None if info is None else _noise(info) for info in result.noise_info],
        "ci95": [[_value(w) for w in row] for row in result.cell_ci95],
        "bounds": None if result.cell_bounds is None else
        [[None if b is None else [_value(b[0]), _value(b[1])] for b in row] for row in result.cell_bounds],
        "cost": [_fraction(result.cost.epsilon), _fraction(result.cost.delta)],
        "message": result.message,
    }
    return json.dumps(payload, allow_nan=False, separators=(",", ":"))


def loads(text: str) -> NoisyResult:
    """The answer `dumps` wrote.

    Raises:
        Unstorable: the text is not an answer this codec wrote (another format, damaged).
    """
    try:
        payload = json.loads(text)
        if payload.get("format") != FORMAT or payload["kind"] not in _KINDS:
            raise Unstorable("an answer of another format")
        bounds = payload.get("bounds")  # each asymmetric cell's (low, high): a clipped interval replays clipped
        eps, delta = (Fraction(int(n), int(d)) for n, d in payload["cost"])
        return NoisyResult(
            payload["kind"],
            tuple(ResultColumn(str(name), str(type_name)) for name, type_name in payload["columns"]),
            [tuple(_read(v) for v in row) for row in payload["rows"]],
            tuple(None if info is None else _read_noise(info) for info in payload["noise"]),
            [tuple(_read(w) for w in row) for row in payload["ci95"]],
            PrivacyCost(eps, delta),
            payload["message"],
            None if bounds is None else [tuple(None if b is None else (float(_read(b[0])), float(_read(b[1]))) for b in row)
                                         for row in bounds],
        )
    except (ValueError, TypeError, KeyError, AttributeError, ZeroDivisionError) as err:
        raise Unstorable("not a kept answer") from err


def _fraction(value: Fraction) -> list[str]:
    return [str(value.numerator), str(value.denominator)]


def _noise(info: NoiseInfo) -> dict[str, Any]:
    return {key: _value(value) for key in NOISE_KEYS if (value := getattr(info, key)) is not None}


def _read_noise(fields: dict[str, Any]) -> NoiseInfo:
    values = {key: _read(value) for key, value in fields.items() if key in NOISE_KEYS}
    # Lists in JSON are the tuples of per-row fields.
    values = {key: tuple(value) if isinstance(value, list) else value for key, value in values.items()}
    known = {field.name for field in dataclasses.fields(NoiseInfo)}
    # `scale` and `ci95` are always fields but may be None (an exponential mechanism's MAX has
    # neither), and `_noise` writes no key whose value is None.
    return NoiseInfo(**{"scale": None, "ci95": None, **{key: value for key, value in values.items() if key in known}})


def _value(value: Any) -> Any:  # noqa: C901 - one branch per kept type, flat on purpose
    """A cell as JSON: plain for None, bool, int, str and finite floats; tagged otherwise."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, dt.datetime):
        return {"timestamp": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"time": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"interval": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, uuid.UUID):
        return {"uuid": str(value)}
    if isinstance(value, (tuple, list)):
        return {"tuple" if isinstance(value, tuple) else "list": [_value(v) for v in value]}
    raise Unstorable(f"a value of type {type(value).__name__}")


def _read(value: Any) -> Any:  # noqa: C901 - the inverse of _value
    if not isinstance(value, dict):
        if isinstance(value, list):  # a per-row field of a NoiseInfo
            return [_read(v) for v in value]
        return value
    (tag, body), = value.items()
    if tag == "float":
        return float(body)
    if tag == "decimal":
        return Decimal(body)
    if tag == "timestamp":
        return dt.datetime.fromisoformat(body)
    if tag == "date":
        return dt.date.fromisoformat(body)
    if tag == "time":
        return dt.time.fromisoformat(body)
    if tag == "interval":
        return dt.timedelta(days=body[0], seconds=body[1], microseconds=body[2])
    if tag == "uuid":
        return uuid.UUID(body)
    if tag in ("tuple", "list"):
        items = [_read(v) for v in body]
        return tuple(items) if tag == "tuple" else items
    raise Unstorable(f"an unknown tag {tag!r}")
