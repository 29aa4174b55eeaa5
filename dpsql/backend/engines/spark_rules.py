"""What the Spark engine refuses before the charge, because on Spark it could fail on private
data (tests/spark records each case). Functions whose meaning differs are rendered with DuckDB's
meaning instead (backend/sql/spark_semantics.py), or refused on every engine (DP142, DP113).

Spark evaluates with ANSI mode off, so most failing expressions yield NULL, but not all: a
regular expression, LIKE escape or datetime format that is not a constant is compiled per row,
and one person's bad pattern then fails the whole query after the charge, an error that depends
on data (DuckDB wraps the predicate in TRY instead). A huge repeat/pad length can exhaust memory
the same way. So those arguments must be constants on Spark; constants are checked before the
charge by a dry run over one row of public dummy values (Spark compiles them at the first row).
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.analysis.function_arguments import CONSTANT_ARGUMENTS, SIZE_ARGUMENTS, is_constant


def spark_refusal(tree: exp.Expr) -> str | None:
    """Why the Spark engine refuses this engine query (before the charge), or None."""
    for node in tree.walk():
        # The analysis refuses these already (DP125, every engine); kept as a second line on Spark.
        arguments = CONSTANT_ARGUMENTS.get(type(node), ()) + ((SIZE_ARGUMENTS[type(node)],) if type(node) in SIZE_ARGUMENTS else ())
        argument = next((a for a in arguments if not is_constant(node.args.get(a))), None)
        if argument is not None:
            name = node.sql_name() if isinstance(node, exp.Func) else node.key.upper()
            return (f"on the Spark engine the {argument if argument != 'expression' else 'pattern'} of {name} must be a constant: "
                    "Spark compiles it per row, and a bad value would fail the query on private data")
    return None
