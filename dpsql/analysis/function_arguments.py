"""Function arguments that must be constants, and a static bound on the size of every string a
row-level expression can build (DP125).

Why: whether a query answers must never depend on one person's value. A row predicate runs
inside the engine's TRY(...), which turns most failures on a value into NULL, but not all of
them: an out-of-memory error is not caught, and Spark compiles a pattern or format that is not
a constant per row and fails the whole query on a bad one. So an expression such as
`CASE WHEN person_id = 17 AND age > 40 THEN repeat(region, 400000000) <> region END` would turn
the answer/error distinction into the target's secret bit, after the charge. dpsql therefore
refuses, before any data is read:

- a pattern, format, escape or flag argument (LIKE, ILIKE, SIMILAR TO, GLOB, the regexp
  functions, strftime) that is not a constant: a bad constant fails on every dataset alike, and
  the dry run checks it once on a constant before the charge (`constant_probes`);
- a size argument (`repeat`, `lpad`, `rpad`) that is not a non-negative integer constant;
- any expression whose output could be longer than `MAX_GROWTH` times the longest input string
  plus `MAX_CONSTANT` characters. With that bound, no row can make the engine allocate more
  than a small multiple of what reading the row itself takes, so memory and time per row are
  bounded by the data's shape, not by a value the analyst singles out.

Numeric functions have fixed-width outputs and cannot amplify memory; their failures
(overflow, invalid casts) become NULL inside TRY, which tests/security pins per DuckDB release.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dpsql.analysis.row_cost import check_row_work
from dpsql.errors import UnsupportedQueryError
from dpsql.frontend.spans import span_of

# A row-level string may be at most MAX_GROWTH times the longest input string plus MAX_CONSTANT
# characters: generous for real queries (padding, a few repeats, labels), far from a memory bomb.
MAX_GROWTH = 64
MAX_CONSTANT = 65_536
# Characters a non-string value (a number, a date, a boolean) can take once cast to text.
_SCALAR_TEXT = 48

# node class -> the arguments that must be constants (patterns, formats, escapes, flags).
CONSTANT_ARGUMENTS: dict[type[exp.Expr], tuple[str, ...]] = {
    exp.Like: ("expression",),
    exp.ILike: ("expression",),
    exp.SimilarTo: ("expression",),
    exp.Glob: ("expression",),
    exp.Escape: ("expression",),
    exp.RegexpLike: ("expression", "flag"),
    exp.RegexpILike: ("expression", "flag"),
    exp.RegexpFullMatch: ("expression", "options"),
    exp.RegexpExtract: ("expression", "position", "occurrence", "parameters", "group"),
    exp.RegexpReplace: ("expression", "replacement", "position", "occurrence", "modifiers"),
    exp.TimeToStr: ("format",),
    exp.StrToTime: ("format",),
    exp.StrToDate: ("format",),
}
# node class -> its size argument: a non-negative integer constant.
SIZE_ARGUMENTS: dict[type[exp.Expr], str] = {exp.Repeat: "times", exp.Pad: "expression"}
_ARGUMENT_WORDS = {"expression": "pattern", "format": "format", "flag": "flags", "options": "flags",
                   "modifiers": "flags", "times": "count", "replacement": "replacement"}
# The value a probe substitutes for the non-constant input of a pattern or format function.
_PROBE_INPUT: dict[type[exp.Expr], exp.Expr] = {
    exp.TimeToStr: exp.cast(exp.Literal.string("2000-01-01 00:00:00"), "TIMESTAMP"),
}


def is_constant(node: exp.Expr | None) -> bool:
    """A literal (possibly negated, parenthesised or cast): the same value for every row."""
    if node is None or isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
        return True
    if isinstance(node, (exp.Paren, exp.Neg)):
        return is_constant(node.this)
    return isinstance(node, (exp.Cast, exp.TryCast)) and is_constant(node.this)


def _name(node: exp.Expr) -> str:
    if isinstance(node, exp.Pad):
        return "lpad" if node.args.get("is_left") else "rpad"
    return node.sql_name().lower() if isinstance(node, exp.Func) else node.key.upper()


def _refuse(message: str, node: exp.Expr, sql: str, hint: str) -> UnsupportedQueryError:
    return UnsupportedQueryError(message, code="DP125", span=span_of(node, sql), sql=sql, hint=hint)


def check_constant_arguments(tree: exp.Expr, sql: str) -> None:
    """DP125: patterns, formats, escapes and flags are constants, on every engine."""
    for node in tree.walk():
        for argument in CONSTANT_ARGUMENTS.get(type(node), ()):
            value = node.args.get(argument)
            if value is not None and not is_constant(value):
                word = _ARGUMENT_WORDS.get(argument, argument)
                raise _refuse(f"the {word} of {_name(node)} must be a constant: a {word} read from the data could "
                              "make the query fail on one person's value", value, sql,
                              f"write the {word} as a literal (a string in quotes)")


@dataclass(frozen=True, slots=True)
class Length:
    """A bound on a string's length: growth * (the longest input string) + constant."""

    growth: int
    constant: int

    def __add__(self, other: Length) -> Length:
        return Length(self.growth + other.growth, self.constant + other.constant)

    def times(self, factor: int) -> Length:
        return Length(self.growth * factor, self.constant * factor)

    def fits(self) -> bool:
        return self.growth <= MAX_GROWTH and self.constant <= MAX_CONSTANT


def _size(node: exp.Expr, sql: str) -> int:
    argument = SIZE_ARGUMENTS[type(node)]
    value = node.args.get(argument)
    number = value.this if isinstance(value, exp.Paren) else value
    if isinstance(number, exp.Literal) and not number.is_string:
        try:
            size = int(number.this)
        except ValueError:
            size = -1
        if 0 <= size <= MAX_CONSTANT:
            return size
    raise _refuse(f"the length argument of {_name(node)} must be an integer literal from 0 to {MAX_CONSTANT:,}: "
                  "a length read from the data could make one person's row exhaust the engine's memory",
                  value if value is not None else node, sql, "write the length as a small integer literal")


def length_bound(node: exp.Expr, sql: str, memo: dict[int, Length] | None = None) -> Length:  # noqa: C901 - a visitor: one branch per string function
    """A static bound on the length of the string `node` can produce for any row (DP125 if none).

    `memo` keeps the bounds already found, by node identity, so a whole tree costs one pass (and
    the recursion is one frame per level, as deep as sqlglot's own)."""
    if memo is not None and id(node) in memo:
        return memo[id(node)]
    if isinstance(node, exp.Literal):
        return Length(0, len(node.this) if node.is_string else _SCALAR_TEXT)
    if isinstance(node, exp.Column):
        return Length(1, 0)
    if isinstance(node, exp.Pad):
        for child in node.iter_expressions():
            length_bound(child, sql, memo)
        bound = Length(0, _size(node, sql))  # lpad/rpad cut or fill to exactly that length
    elif isinstance(node, exp.Repeat):
        bound = length_bound(node.this, sql, memo).times(_size(node, sql))
    elif isinstance(node, exp.Replace):
        replacement = length_bound(node.args["replacement"], sql, memo) if node.args.get("replacement") is not None else Length(0, 0)
        if replacement.growth:
            raise _refuse("the replacement of replace() must have a constant length: a replacement read from the data "
                          "multiplies the length of the result", node.args["replacement"], sql,
                          "write the replacement as a literal")
        length_bound(node.args["expression"], sql, memo)
        bound = length_bound(node.this, sql, memo).times(max(1, replacement.constant))
    elif isinstance(node, exp.ConcatWs):
        separator, *items = node.expressions or [exp.Literal.string("")]
        bound = sum((length_bound(item, sql, memo) for item in items), Length(0, 0)) + length_bound(separator, sql, memo).times(max(1, len(items)))
    elif isinstance(node, (exp.Concat, exp.DPipe)):
        bound = sum((length_bound(child, sql, memo) for child in node.iter_expressions()), Length(0, 0))
    elif isinstance(node, (exp.Predicate, exp.Connector, exp.Not, exp.Binary)):
        for operand in node.iter_expressions():  # a comparison, connective or arithmetic: fixed width
            length_bound(operand, sql, memo)
        bound = Length(0, _SCALAR_TEXT)
    else:
        # Every other allowlisted function returns at most as much as its longest argument
        # (substring, case, upper, trim...) or a fixed-width value cast to text.
        children = [length_bound(child, sql, memo) for child in node.iter_expressions()]
        bound = Length(max((c.growth for c in children), default=0),
                       max([c.constant for c in children] + [_SCALAR_TEXT]))
    if not bound.fits():
        raise _refuse(f"{_name(node)} could build a string longer than {MAX_GROWTH} times its input plus "
                      f"{MAX_CONSTANT:,} characters: one person's row could then exhaust the engine's memory",
                      node, sql, "use smaller repeat counts, paddings or replacements")
    if memo is not None:
        memo[id(node)] = bound
    return bound


def check_bounded_expressions(tree: exp.Expr, sql: str) -> None:
    """DP125: constant patterns and formats, constant sizes, a bounded string size everywhere, and
    a bounded amount of engine work per row (`row_cost.py`)."""
    check_constant_arguments(tree, sql)
    memo: dict[int, Length] = {}
    for part in tree.iter_expressions():
        length_bound(part, sql, memo)
    check_row_work(tree, sql, lambda node: length_bound(node, sql, memo))


def constant_probes(tree: exp.Expr) -> tuple[exp.Expr, ...]:
    """Each pattern or format function of `tree` applied to a constant input: evaluating these
    bare (outside TRY) once finds an invalid constant pattern or format on every engine, with no
    data involved (DP123 before the charge). The node's non-constant input becomes a public
    dummy value of the kind the function reads."""
    probes: list[exp.Expr] = []
    for node in tree.walk():
        if type(node) not in CONSTANT_ARGUMENTS or not all(is_constant(node.args.get(a)) for a in CONSTANT_ARGUMENTS[type(node)]):
            continue
        probe = node.copy()
        if isinstance(probe, exp.Escape):
            inner = probe.this
            if isinstance(inner, (exp.Like, exp.ILike)) and is_constant(inner.args.get("expression")):
                inner.set("this", exp.Literal.string(""))
                probes.append(probe)
            continue
        if not is_constant(probe.this):
            probe.set("this", _PROBE_INPUT.get(type(probe), exp.Literal.string("")).copy())
        if isinstance(node.parent, exp.Escape):
            continue  # probed with its escape, above
        probes.append(probe)
    return tuple(probes)
