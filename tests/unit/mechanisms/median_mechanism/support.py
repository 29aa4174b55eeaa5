"""Shared helpers for the Median Mechanism layer tests: policies, tiny domains, data-free replicas."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpsql.catalog.policy import MedianMechanismConfig, MMColumnDomain
from dpsql.demo.people import REGIONS
from dpsql.mechanisms.median_mechanism.core import LayerCore, measured_answer
from dpsql.mechanisms.median_mechanism.domain import DomainIndex, QueryShape
from dpsql.mechanisms.median_mechanism.public_model import PublicModel
from tests.conftest import make_policy_text

REGION_LINE = 'region    = { type = "text" }'


def mm_policy_text(section: str = "", *, budget_epsilon: float = 10.0, max_rows: int | None = None, **layer: object) -> str:
    """The demo policy with declared regions and a [tables.people.median_mechanism] section.

    `layer` gives the section's keys (TOML values rendered with json.dumps, which TOML reads for
    strings, numbers, lists); `section` is appended verbatim.
    """
    text = make_policy_text(epsilon=budget_epsilon, max_rows=max_rows)
    assert REGION_LINE in text
    text = text.replace(REGION_LINE, f"region = {{ type = \"text\", values = {json.dumps(list(REGIONS))} }}")
    keys = {"columns": ["dept", "region", "age"], "epsilon": 1.0, "accuracy": 1000, "mode": "pure"}
    keys.update(layer)
    lines = ["", "[tables.people.median_mechanism]"]
    for key, value in keys.items():
        if value is None:
            continue
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {inner} }}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return text + "\n".join(lines) + "\n" + section


def write_policy(tmp_path: Path, name: str = "policy.toml", **kwargs: object) -> Path:
    path = tmp_path / name
    path.write_text(mm_policy_text(**kwargs), encoding="utf-8")  # type: ignore[arg-type]
    return path


def tiny_domain(*sizes: int) -> DomainIndex:
    """A domain of int columns c0, c1, ... with values 0..size-1 (plus the NULL cell each)."""
    domains = tuple(MMColumnDomain(f"c{i}", "int", "values", values=tuple(range(s))) for i, s in enumerate(sizes))
    return DomainIndex(MedianMechanismConfig(domains=domains, epsilon=Fraction(1), accuracy=Fraction(100)))


def random_shapes(domain: DomainIndex, count: int, seed: int, grouped: bool = False) -> list[QueryShape]:
    """Random conjunction masks (and GROUP BY on c0 when `grouped`)."""
    rng = np.random.default_rng(seed)
    shapes = []
    for _ in range(count):
        mask = np.ones(1, dtype=bool)
        for size in domain.sizes:
            allowed = rng.random(size) < rng.uniform(0.3, 1.0)
            mask = np.outer(mask, allowed).ravel()
        keys = ("c0",) if grouped and rng.random() < 0.3 else ()
        shapes.append(domain.shape(mask, keys))
    return shapes


def replay(core: LayerCore, shapes: list[QueryShape]) -> tuple[int, PublicModel]:
    """A data-free replica fed only the public transcript: the released warm-start measurement (or
    the released n̂), the queries, the easy/hard bits and the released answers. Returns (easy
    answers it fails to reproduce, its model)."""
    accuracy = core.calibration.accuracy
    if core.measured:
        replica = PublicModel.from_measurement(core.domain, core.plan.axes, [m.copy() for m in core.measured],
                                               tau_p=accuracy / 8)
    else:
        replica = PublicModel.uniform(core.domain, core.n_hat, tau_p=accuracy / 8)
    released: dict[bytes, tuple[int, ...]] = {}
    mismatches = 0
    for entry, shape in zip(core.transcript, shapes, strict=True):
        assert entry.key == shape.key
        if entry.kind == "repeat":
            mismatches += released[entry.key] != entry.values
            continue
        if entry.kind == "easy":
            mismatches += tuple(int(v) for v in replica.answer(shape)) != entry.values
        elif entry.kind == "measured":
            again = measured_answer(core.domain, core.measured_plan, core.measured, shape)
            mismatches += again is None or tuple(int(v) for v in again[0]) != entry.values
        else:
            replica.update(shape, np.array(entry.values, dtype=np.int64))
        released[entry.key] = entry.values
    return mismatches, replica


def run_core(core: LayerCore, shapes: list[QueryShape]) -> list[QueryShape]:
    """Answer shapes until the layer halts; the shapes it answered, in order."""
    done = []
    for shape in shapes:
        if core.answer(shape) is None:
            break
        done.append(shape)
    return done


def strip_comments(text: str) -> str:
    return re.sub(r"#.*", "", text)
