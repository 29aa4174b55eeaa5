"""Where things happen, checked on the source: one module charges the ledger, one calls the
engine, one module per concern, and no dispatch on mechanism spec types outside the registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from dpsql.mechanisms import registry

DPSQL = Path(__file__).resolve().parents[3] / "dpsql"


def sources() -> dict[str, str]:
    return {str(p.relative_to(DPSQL.parent)): p.read_text(encoding="utf-8") for p in DPSQL.rglob("*.py")}


def calls_of(method: str) -> set[str]:
    """Modules that call `<something>.<method>(...)`."""
    found = set()
    for name, text in sources().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method:
                found.add(name)
    return found


def test_only_execution_charge_writes_to_the_ledger() -> None:
    assert calls_of("charge") == {"dpsql/execution/charge.py"}
    # A pre-rendered charge (a repeated query's): from the same module; Ledger.charge delegates to it.
    assert calls_of("charge_record") == {"dpsql/execution/charge.py", "dpsql/accounting/ledger.py"}


def test_only_execution_engine_calls_reads_private_data() -> None:
    # The engine's private entry points, outside the backend itself.
    for method in ("ensure_bounded", "private_arrays", "dry_run"):
        callers = {m for m in calls_of(method) if not m.startswith("dpsql/backend/")}
        assert callers <= {"dpsql/execution/engine_calls.py", "dpsql/execution/executor.py",
                           "dpsql/execution/median_layer.py"}, (method, callers)
    # ... and the executor and the layer reach them only through EngineCalls (self.calls / self._engine).
    executor = (DPSQL / "execution" / "executor.py").read_text(encoding="utf-8")
    assert "ensure_bounded" not in executor and "Engine.run" not in executor


def test_noise_is_drawn_only_through_the_registry_in_execution() -> None:
    for name, text in sources().items():
        if name.startswith("dpsql/execution/"):
            assert not re.search(r"\b(laplace|partition|ptr|exponential|subsample)\.(release|keep|\w+_release)\(", text), name
            assert "discrete_laplace(" not in text and "discrete_gaussian(" not in text, name


def test_no_isinstance_dispatch_on_mechanism_specs() -> None:
    spec_types = "|".join(m.spec_type.__name__ for m in registry.MECHANISMS)
    offenders = [name for name, text in sources().items() if re.search(rf"isinstance\([^)]*\b({spec_types})\b", text)]
    assert offenders == []


def test_one_module_per_name() -> None:
    stems: dict[str, list[str]] = {}
    for name in sources():
        stem = Path(name).stem
        if stem != "__init__":
            stems.setdefault(stem, []).append(name)
    assert "robust" not in stems and "pipeline" not in stems
    assert not (DPSQL / "mmlayer").exists()


def test_multi_step_reads_are_driven_by_the_executor() -> None:
    # backend/sql/robust_sql.reads yields each statement and receives its rows: no function of the
    # backend's robust SQL takes a callable from its caller (the old fetch(run=...) climbed back).
    tree = ast.parse((DPSQL / "backend" / "sql" / "robust_sql.py").read_text(encoding="utf-8"))
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    annotated = [(f.name, ast.unparse(a.annotation)) for f in functions for a in f.args.args if a.annotation is not None]
    assert not [pair for pair in annotated if "Callable" in pair[1] or "Runner" in pair[1]], annotated
    reads = next(f for f in functions if f.name == "reads")
    assert any(isinstance(node, ast.Yield) for node in ast.walk(reads))
    # The executor is the one that runs them, through EngineCalls.
    executor = (DPSQL / "execution" / "executor.py").read_text(encoding="utf-8")
    assert "steps.send(" in executor and "self.calls.run(" in executor
