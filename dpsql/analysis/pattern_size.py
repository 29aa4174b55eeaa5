"""Static upper bounds on the size of a constant pattern, as the engine's matcher will run it.

Why: a regular expression is matched by RE2 (DuckDB) in time proportional to the input's length
times the size of the compiled program in the worst case (its DFA gives up on patterns whose
state set explodes, such as `[ab]*a[ab]{999}c`, and falls back to simulating every instruction
at every input byte). `row_cost.py` charges that product to the row, so it needs a bound on the
program size from the pattern text alone, without compiling it.

The bound is deliberately coarse and never below RE2's instruction count: a literal costs its
UTF-8 bytes (tripled under case folding), any class or `.` a fixed 16 plus 2 per character of
its text, a Unicode class (`\\p{..}`) 512, a counted repetition `x{n,m}` m copies of x, and
nested repetitions multiply. The text is never rejected here: a pattern RE2 would refuse is
refused by the constant probe before the charge (DP123); anything this parser does not
recognise is priced as a class.
"""

from __future__ import annotations

from dataclasses import dataclass

CLASS = 16  # `.`, `\d`, `\w`, a bracket class: a handful of UTF-8 byte ranges
CLASS_PER_CHAR = 2  # each character of a bracket class's text may add a byte range
UNICODE_CLASS = 512  # `\pL`, `\p{Greek}`, `[[:^alpha:]]` in UTF-8: hundreds of byte ranges
MAX_REPEAT = 1000  # RE2 refuses larger counts; a bigger number here is priced as written
_PERL_CLASSES = frozenset("dDsSwW")
_EMPTY_WIDTH = frozenset("bBAzZ")
_ESCAPED_LITERALS = {"n": 1, "t": 1, "r": 1, "f": 1, "v": 1, "a": 1, "e": 1}


@dataclass
class _Parser:
    text: str
    fold: bool
    pos: int = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def literal(self, char: str) -> int:
        size = len(char.encode("utf-8", "surrogatepass"))
        return 3 * size if self.fold and char.lower() != char.upper() else size

    def alternation(self) -> int:
        """Alternatives up to a closing parenthesis or the end: their sum plus one fork each."""
        total = self.concatenation()
        while self.peek() == "|":
            self.pos += 1
            total += 1 + self.concatenation()
        return total

    def concatenation(self) -> int:
        total = 0
        while self.pos < len(self.text) and self.peek() not in "|)":
            total += self.repeated(self.atom())
        return total

    def repeated(self, size: int) -> int:
        """Apply the repetition operators after an atom (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`)."""
        while True:
            char = self.peek()
            if char in ("*", "+", "?") and char:
                self.pos += 1
                size += 2
            elif char == "{":
                count = self.count()
                if count is None:
                    return size  # a literal brace: the next atom
                size = size * count + count
            else:
                return size
            if self.peek() in ("?", "+") and self.peek():  # lazy or possessive marker
                self.pos += 1

    def count(self) -> int | None:
        """The largest count of a `{n}`, `{n,}` or `{n,m}` at pos (consumed), or None."""
        end = self.text.find("}", self.pos)
        if end < 0:
            return None
        low, comma, high = self.text[self.pos + 1 : end].partition(",")
        if not low.isdigit() or (high and not high.isdigit()):
            return None
        self.pos = end + 1
        if comma and not high:
            return int(low) + 1  # {n,}: n copies and a loop
        return max(int(low), int(high) if high else 0, 1)

    def atom(self) -> int:
        char = self.peek()
        self.pos += 1
        if char == "(":
            return self.group()
        if char == "[":
            return self.bracket()
        if char == "\\":
            return self.escape()
        if char in ("^", "$"):
            return 1
        if char == ".":
            return CLASS
        return self.literal(char)

    def group(self) -> int:
        if self.text.startswith("?", self.pos):
            close = self.text.find(")", self.pos)
            colon = self.text.find(":", self.pos)
            flags = self.text[self.pos + 1 : close if close >= 0 else len(self.text)]
            if flags and all(c in "imsU-" for c in flags):  # (?i): flags for the rest of the group
                self.fold = self.fold or "i" in flags.split("-")[0]
                self.pos = close + 1
                return 0
            if colon >= 0 and (close < 0 or colon < close) and all(c in "imsU-" for c in self.text[self.pos + 1 : colon]):
                self.fold = self.fold or "i" in self.text[self.pos + 1 : colon].split("-")[0]
                self.pos = colon + 1
            elif self.text.startswith(("?P<", "?<"), self.pos):
                self.pos = self.text.find(">", self.pos) + 1 or len(self.text)
        size = self.alternation() + 2  # capture instructions
        if self.peek() == ")":
            self.pos += 1
        return size

    def bracket(self) -> int:
        start = self.pos
        if self.peek() == "^":
            self.pos += 1
        if self.peek() == "]":
            self.pos += 1
        unicode = False
        while self.pos < len(self.text) and self.peek() != "]":
            if self.text.startswith("[:", self.pos):
                end = self.text.find(":]", self.pos + 2)
                unicode = unicode or self.text.startswith("[:^", self.pos)
                self.pos = end + 2 if end >= 0 else len(self.text)
                continue
            if self.peek() == "\\":
                unicode = unicode or self.text[self.pos + 1 : self.pos + 2] in ("p", "P")
                self.pos += 1
            self.pos += 1
        inside = self.pos - start
        self.pos += 1  # the closing bracket
        return UNICODE_CLASS + CLASS_PER_CHAR * inside if unicode else CLASS + CLASS_PER_CHAR * inside

    def escape(self) -> int:
        char = self.peek()
        self.pos += 1
        if char in ("p", "P"):
            if self.peek() == "{":
                end = self.text.find("}", self.pos)
                self.pos = end + 1 if end >= 0 else len(self.text)
            else:
                self.pos += 1
            return UNICODE_CLASS
        if char == "Q":  # \Q...\E: a literal run
            end = self.text.find("\\E", self.pos)
            run = self.text[self.pos : end if end >= 0 else len(self.text)]
            self.pos = end + 2 if end >= 0 else len(self.text)
            return sum(self.literal(c) for c in run)
        if char in _PERL_CLASSES or char == "C":
            return CLASS
        if char in _EMPTY_WIDTH:
            return 1
        if char in _ESCAPED_LITERALS or not char.isalnum():
            return self.literal(char or "\\")
        return CLASS  # \x{..}, octal and the rest: at most one character, priced as a class


def regex_program_size(pattern: str, *, case_insensitive: bool = False) -> int:
    """An upper bound on the RE2 instructions `pattern` compiles to (plus the match and the
    unanchored prefix loop).

    Example:
        >>> regex_program_size("[ab]*a[ab]{999}c") > 999 * CLASS
        True
    """
    parser = _Parser(pattern, case_insensitive)
    total = 4
    while parser.pos < len(pattern):
        total += parser.alternation()
        if parser.peek() == ")":  # an unbalanced parenthesis (DP123 refuses it): price the rest
            parser.pos += 1
    return total


def similar_to_regex(pattern: str) -> str:
    """The regular expression DuckDB matches for `SIMILAR TO pattern` (% and _ are `.*` and `.`)."""
    return pattern.replace("%", ".*").replace("_", ".")
