"""What the Spark engine refuses before the charge, because on Spark it could fail on private
data or answer differently from DuckDB (tests/spark records each case).

Spark evaluates with ANSI mode off, so most failing expressions yield NULL, but not all: a
regular expression, LIKE escape or datetime format that is not a constant is compiled per row,
and one person's bad pattern then fails the whole query after the charge, an error that depends
on data (DuckDB wraps the predicate in TRY instead). A huge repeat/pad length can exhaust memory
the same way. So those arguments must be constants on Spark; constants are checked before the
charge by a dry run over one row of public dummy values (Spark compiles them at the first row).
"""

from __future__ import annotations

from sqlglot import exp

# node class -> the argument that must be a constant (patterns, formats, sizes)
CONSTANT_ARGUMENTS: dict[type[exp.Expr], str] = {
    exp.Like: "expression",
    exp.ILike: "expression",
    exp.SimilarTo: "expression",
    exp.Glob: "expression",
    exp.RegexpLike: "expression",
    exp.RegexpILike: "expression",
    exp.RegexpFullMatch: "expression",
    exp.RegexpExtract: "expression",
    exp.RegexpReplace: "expression",
    exp.TimeToStr: "format",
    exp.StrToTime: "format",
    exp.StrToDate: "format",
    exp.Repeat: "times",
    exp.Pad: "expression",
}

# Functions whose Spark meaning differs from DuckDB's (so the same SQL would answer differently).
DIFFERENT_MEANING: dict[type[exp.Expr], str] = {
    exp.DayOfWeek: "the day of the week is numbered from Sunday = 1 on Spark, 0 on DuckDB",
    exp.DateDiff: "date differences count month and year boundaries differently on Spark",
}
_EXTRACT_PARTS = {"dow", "dayofweek", "weekday", "isodow"}


def _constant(node: exp.Expr | None) -> bool:
    if node is None:
        return True
    if isinstance(node, exp.Paren):
        return _constant(node.this)
    if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
        return True
    if isinstance(node, exp.Neg):
        return _constant(node.this)
    return isinstance(node, exp.Cast) and _constant(node.this)


def spark_refusal(tree: exp.Expr) -> str | None:
    """Why the Spark engine refuses this engine query (before the charge), or None."""
    for node in tree.walk():
        argument = CONSTANT_ARGUMENTS.get(type(node))
        if argument is not None and not _constant(node.args.get(argument)):
            name = node.sql_name() if isinstance(node, exp.Func) else node.key.upper()
            return (f"on the Spark engine the {argument if argument != 'expression' else 'pattern'} of {name} must be a constant: "
                    "Spark compiles it per row, and a bad value would fail the query on private data")
        reason = DIFFERENT_MEANING.get(type(node))
        if reason is not None:
            return f"{node.sql_name() if isinstance(node, exp.Func) else node.key} is not available on the Spark engine: {reason}"
        if isinstance(node, exp.Extract) and node.this is not None and node.this.name.lower() in _EXTRACT_PARTS:
            return f"EXTRACT({node.this.name}) is not available on the Spark engine: {DIFFERENT_MEANING[exp.DayOfWeek]}"
        if isinstance(node, exp.Log) and node.args.get("expression") is None:
            return "LOG(x) with one argument is base 10 on DuckDB and natural on Spark: write LOG10(x) or LN(x)"
    return None
