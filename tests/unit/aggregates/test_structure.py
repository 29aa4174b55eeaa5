"""Aggregates as modules, checked on the source: nothing outside dpsql/aggregates/ and
dpsql/mechanisms/ tests an aggregate's or a mechanism's name, so a new aggregate is its module and
a registry line, and a new mechanism declares its facts instead of being added to name lists.

A name test is a comparison (==, !=, in, not in, or a match case) with a string literal that is
an aggregate kind or spelling (dpsql/aggregates/registry.py) or a mechanism name
(dpsql/mechanisms/registry.py), also inside a tuple, list or set literal. Negative controls: the
same checker flags the name ladders this structure replaced, and it does see the comparisons the
aggregate modules themselves make (so it is not blind).
"""

from __future__ import annotations

import ast
from pathlib import Path

from dpsql.aggregates import registry as aggregates
from dpsql.ir.query import AggregateCall
from dpsql.mechanisms import registry as mechanisms

DPSQL = Path(__file__).resolve().parents[3] / "dpsql"
OWNERS = ("dpsql/aggregates/", "dpsql/mechanisms/")
NAMES = frozenset(aggregates.KINDS) | frozenset(aggregates.NAMES) | frozenset(mechanisms.BY_NAME)


def _strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for item in node.elts for s in _strings(item)]
    return []


def name_tests(source: str, names: frozenset[str] = NAMES) -> list[tuple[int, str]]:
    """(line, name) of every comparison of a value with an aggregate or mechanism name literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.MatchValue):
            operands = [node.value]
        else:
            continue
        found += [(node.lineno, s) for operand in operands for s in _strings(operand) if s in names]
    return found


def sources() -> dict[str, str]:
    return {str(p.relative_to(DPSQL.parent)): p.read_text(encoding="utf-8") for p in sorted(DPSQL.rglob("*.py"))}


def test_no_name_tests_outside_aggregate_and_mechanism_modules() -> None:
    offenders = {name: found for name, text in sources().items()
                 if not name.startswith(OWNERS) and (found := name_tests(text))}
    assert offenders == {}, f"name tests outside {OWNERS} (ask the aggregate's Estimate or the mechanism's facts): {offenders}"


def test_the_names_cover_every_registered_aggregate_and_mechanism() -> None:
    assert {"count", "sum", "avg", "quantile", "iqr", "mode", "var_samp"} <= NAMES
    assert {"laplace", "gaussian", "smed", "exponential-fine", "asamp", "noisy-max", "stable-histogram"} <= NAMES


def test_negative_control_the_old_name_ladders_are_caught() -> None:
    ladders = '''
if release.mechanism in ("scale", "exponential-iqr", "exponential-fine-iqr"):
    pass
if estimate.kind == "variance" or call.kind not in ("count_star", "count", "sum"):
    pass
gaussian = query.noise == "gaussian"
match release.mechanism:
    case "smed":
        pass
'''
    found = {name for _, name in name_tests(ladders)}
    assert found == {"scale", "exponential-iqr", "exponential-fine-iqr", "variance", "count_star", "count", "sum",
                     "gaussian", "smed"}
    assert name_tests('if kind == "bins" or command.kind in ("set", "show"):\n    pass\n') == []


def test_negative_control_the_checker_sees_the_aggregate_modules_own_tests() -> None:
    owned = {name: found for name, text in sources().items() if name.startswith(OWNERS) and (found := name_tests(text))}
    assert "dpsql/aggregates/quantiles.py" in owned and "dpsql/aggregates/mode.py" in owned


def test_every_kind_and_spelling_belongs_to_one_registered_family() -> None:
    families = aggregates.AGGREGATES
    kinds = [kind for family in families for kind in family.kinds]
    classes = [cls for family in families for cls in family.classes]
    names = [name for family in families for name in family.names]
    assert len(kinds) == len(set(kinds)) and len(classes) == len(set(classes)) and len(names) == len(set(names))
    for family in families:
        assert all(aggregates.for_call(AggregateCall(kind=kind, column=None, text=kind)) is family for kind in family.kinds)
