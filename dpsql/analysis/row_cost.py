"""A static bound on the engine work one row can cost (DP125, its work half).

Why: a row predicate such as `CASE WHEN person_id = 17 AND age > 40 THEN <slow> ELSE false END`
spends `<slow>` on the target's row only, and only when the secret holds. If `<slow>` can take
seconds (a regular expression whose DFA gives up, `[ab]*a[ab]{999}c`, over a 65,536-character
padding: about 0.5-2 s per call), the statement timeout turns it into the target's bit, after
the charge: the query answers on one dataset and fails with 57014 on its neighbour. DP125's
length bounds stop one row from exhausting memory, not from burning time.

So every row-level expression gets a bound on its work, in *steps*, from the SQL and the policy
alone (lengths from `function_arguments.length_bound`, patterns from `pattern_size.py`):

- each operation (function, operator, comparison, CASE, cast) costs NODE steps, each item of
  an IN list IN_ITEM steps (the engine's fixed cost of calling it on one row);
- a string operation also costs CHAR steps per character it reads or writes (its arguments' and
  its result's length bounds); a comparison reads at most its shorter side;
- LIKE/ILIKE/GLOB and the searches (contains, strpos, replace, trim's character set) cost
  MATCH_STEP per (input character x pattern or needle character): their matchers compare the
  pattern again at many input positions (`'%' || repeat('_a', 500) || 'c%'` over 'aaa...');
- a regular expression (regexp_matches, regexp_full_match, `~`, SIMILAR TO) costs REGEX_STEP per
  (input character x compiled instruction), its worst case once RE2's DFA falls back;
- calls nest by adding their work; a call's input length already carries what the calls below
  it can build (repeat multiplies it), so a regex over a repeat pays for the repeat's length.

A row's work is then at most `growth x l + constant` steps, l the longest string the row holds
in the columns the expression reads; dpsql refuses (DP125, before the charge) an expression whose
`constant` exceeds MAX_ROW_WORK or whose `growth` exceeds MAX_ROW_GROWTH. The weights are set
so that one step is at most about a nanosecond of one core on the reference machine for every
expression measured by `bench/row_cost.py`, which also times the worst expressions the caps
admit. One person's rows (max_rows, times a join's fan-out) can therefore change a statement's
work by at most max_rows x fan-out x (MAX_ROW_WORK + MAX_ROW_GROWTH x l) steps: a millisecond or
so, against a statement timeout that cannot tell milliseconds apart (docs/trust-model.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from dpsql.analysis.pattern_size import regex_program_size, similar_to_regex
from dpsql.errors import UnsupportedQueryError
from dpsql.frontend.spans import span_of

if TYPE_CHECKING:
    from dpsql.analysis.function_arguments import Length

NODE = 256  # one operation on one row (the engine's per-call overhead on a one-row selection)
IN_ITEM = 2048  # one item of an IN list (DuckDB builds the list's set per call: ~1 us an item)
CHAR = 4  # one character read or written by a string operation
MATCH_STEP = 4  # one (input character x pattern or needle character) of LIKE, GLOB, contains, strpos, replace, trim
REGEX_STEP = 8  # one (input character x RE2 instruction, as pattern_size bounds it) of a regular expression

# The caps: about 1 ms of one core, plus about 4 us per character of the row's longest string.
MAX_ROW_WORK = 1 << 20
MAX_ROW_GROWTH = 1 << 12

_REGEX = (exp.RegexpLike, exp.RegexpILike, exp.RegexpFullMatch)
_LIKE = (exp.Like, exp.ILike)
# Nodes that are no work of their own: names, values, and the clauses that hold expressions.
_NO_WORK = (exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Identifier, exp.Star, exp.DataType,
            exp.Paren, exp.Alias, exp.Tuple, exp.Var, exp.Placeholder, exp.Parameter)
_FIXED_WIDTH = (exp.Connector, exp.Not, exp.Neg, exp.Is, exp.Case, exp.If)
# Searches: the argument holding the needle (or trim's character set).
_SEARCHES: dict[type[exp.Expr], str] = {exp.StrPosition: "substr", exp.Contains: "expression", exp.Replace: "expression",
                                        exp.Trim: "expression"}
_OPERATIONS = (exp.Func, exp.Predicate, exp.Binary, exp.Unary, exp.Case, exp.Cast)


@dataclass(frozen=True, slots=True)
class Work:
    """A bound on the steps one row can cost: growth * (the row's longest string) + constant."""

    growth: int
    constant: int

    def __add__(self, other: Work) -> Work:
        return Work(self.growth + other.growth, self.constant + other.constant)

    def fits(self) -> bool:
        return self.growth <= MAX_ROW_GROWTH and self.constant <= MAX_ROW_WORK


NO_WORK = Work(0, 0)
Lengths = Callable[[exp.Expr], "Length"]


def _per_char(length: Length, weight: int) -> Work:
    return Work(length.growth * weight, length.constant * weight)


def _shorter(a: Length, b: Length) -> Length:
    """Either side bounds the shorter one: keep the bound that does not grow with the data."""
    return min(a, b, key=lambda length: (length.growth, length.constant))


def _search(haystack: Length, needle: Length) -> Work:
    """MATCH_STEP per (haystack character x needle character), affine when one of them has a
    constant length; when both grow with the row's strings the work is quadratic in them, with
    no static bound: priced over the growth cap, so refused."""
    if haystack.growth and needle.growth:
        return Work(MAX_ROW_GROWTH + 1, 0)  # quadratic in the row's strings: no static bound
    if needle.growth:
        haystack, needle = needle, haystack
    return _per_char(haystack, MATCH_STEP * max(1, needle.constant)) + _per_char(needle, CHAR)


def _pattern(node: exp.Expr | None) -> str:
    """The text of a constant pattern (literal, maybe in parentheses or a cast); "" otherwise."""
    while isinstance(node, (exp.Paren, exp.Cast, exp.TryCast)):
        node = node.this
    return str(node.this) if isinstance(node, exp.Literal) and node.is_string else ""


def _arguments(node: exp.Expr) -> list[exp.Expr]:
    return [child for child in node.iter_expressions() if not isinstance(child, exp.DataType)]


def own_work(node: exp.Expr, lengths: Lengths) -> Work:
    """The steps `node` itself costs on one row, its arguments' own work not included."""
    if isinstance(node, _NO_WORK) or not isinstance(node, _OPERATIONS):
        return NO_WORK
    work = Work(0, NODE)
    if isinstance(node, exp.In):
        items = node.expressions
        return work + Work(0, IN_ITEM * len(items)) + sum(
            (_per_char(_shorter(lengths(node.this), lengths(item)), CHAR) for item in items), NO_WORK)
    if isinstance(node, (*_REGEX, exp.SimilarTo)):
        text = _pattern(node.args.get("expression"))
        flags = _pattern(node.args.get("flag") or node.args.get("options"))
        fold = isinstance(node, exp.RegexpILike) or "i" in flags
        size = regex_program_size(similar_to_regex(text) if isinstance(node, exp.SimilarTo) else text, case_insensitive=fold)
        return work + _per_char(lengths(node.this), REGEX_STEP * size)
    if isinstance(node, (exp.Like, exp.ILike, exp.Glob)):
        pattern = lengths(node.args["expression"])  # a constant (DP125)
        return work + _per_char(lengths(node.this), MATCH_STEP * max(1, pattern.constant) + CHAR)
    if type(node) in _SEARCHES:
        needle = lengths(node.args[_SEARCHES[type(node)]]) if node.args.get(_SEARCHES[type(node)]) is not None else None
        if needle is not None:
            return work + _search(lengths(node.this), needle) + _per_char(lengths(node), CHAR)
    if isinstance(node, _FIXED_WIDTH) or (isinstance(node, exp.Binary) and not isinstance(node, (exp.Predicate, exp.DPipe))):
        return work  # connectives, CASE, ESCAPE and arithmetic move fixed-width values (strings by reference)
    arguments = _arguments(node)
    if isinstance(node, exp.Predicate) and len(arguments) == 2:
        return work + _per_char(_shorter(lengths(arguments[0]), lengths(arguments[1])), CHAR)
    # A string function (or a cast, or an aggregate's update): it reads its arguments and writes its result.
    read = sum((_per_char(lengths(child), CHAR) for child in arguments), NO_WORK)
    return work + read + _per_char(lengths(node), CHAR)


def _name(node: exp.Expr) -> str:
    if isinstance(node, exp.Pad):
        return "lpad" if node.args.get("is_left") else "rpad"
    if isinstance(node, exp.RegexpLike):
        return "regexp_matches"
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return node.sql_name().lower() if isinstance(node, exp.Func) else node.key.upper().replace("_", " ")


def _describe(work: Work) -> str:
    if work.growth > MAX_ROW_GROWTH:
        return f"{work.growth:,} steps of engine work per character of the row's strings (the cap is {MAX_ROW_GROWTH:,})"
    return f"{work.constant:,} steps of engine work (the cap is {MAX_ROW_WORK:,})"


def _refuse(node: exp.Expr, work: Work, sql: str) -> UnsupportedQueryError:
    return UnsupportedQueryError(
        f"{_name(node)} could cost one row up to {_describe(work)}: one person's row could then "
        "slow the query down only when their value matches, and the statement timeout would tell",
        code="DP125", span=span_of(node, sql, _name(node) if isinstance(node, exp.Func) else None), sql=sql,
        hint="match short inputs (the column itself, not a padded or repeated string) with short patterns (counted "
             "repetitions such as {999} multiply a pattern), search with a literal needle, use fewer calls or IN items")


def work_of(node: exp.Expr, lengths: Lengths) -> Work:
    """The steps `node` and everything under it can cost one row, caps not applied (bench, tests)."""
    return sum((own_work(part, lengths) for part in node.walk()), NO_WORK)


def work_bound(tree: exp.Expr, sql: str, lengths: Lengths) -> Work:
    """The steps `tree` can cost one row; DP125 at the smallest subtree over the caps (an
    operation, or the part that tips a clause over them). Iterative: a chain of a thousand ORs is
    a thousand levels deep."""
    totals: dict[int, Work] = {}
    stack: list[tuple[exp.Expr, bool]] = [(tree, False)]
    while stack:
        node, children_done = stack.pop()
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in node.iter_expressions())
            continue
        own = own_work(node, lengths)
        total = own
        for child in node.iter_expressions():
            total = total + totals.pop(id(child))
            if not total.fits():  # a clause's parts add up over the caps: point at the part that tipped it
                raise _refuse(node if own != NO_WORK else child, total, sql)
        if not total.fits():
            raise _refuse(node, total, sql)
        totals[id(node)] = total
    return totals[id(tree)]


def check_row_work(tree: exp.Expr, sql: str, lengths: Lengths) -> Work:
    """DP125: everything the engine may evaluate on one row of `tree` (its select list, WHERE,
    GROUP BY, joins and filters, summed) fits the caps. Returns the bound."""
    return work_bound(tree, sql, lengths)
