"""The REPL's toolbar and \\budget say how many more queries like the last one fit (counted up to 1000)."""

from __future__ import annotations

from fractions import Fraction

from dpsql.accounting.cost import PrivacyCost
from dpsql.repl.backslash import budget_text
from dpsql.repl.toolbar import toolbar_text


def test_the_toolbar_says_how_many_more_fit() -> None:
    text = toolbar_text("ann", PrivacyCost(9), PrivacyCost(10), PrivacyCost(Fraction(1, 100)), queries_left=412)
    assert "last query epsilon 0.01, delta 0, 412 more like it fit" in text
    assert "at least 1000 more like it fit" in toolbar_text("ann", PrivacyCost(9), PrivacyCost(10), PrivacyCost(1), queries_left=1000)
    assert "more like it" not in toolbar_text("ann", PrivacyCost(9), PrivacyCost(10), None)


def test_budget_says_how_many_more_fit() -> None:
    text = budget_text("ann", PrivacyCost(1), PrivacyCost(Fraction(1, 2)), PrivacyCost(Fraction(1, 2)), [], "pld", 7)
    assert "7 more queries like the last one fit" in text
    assert "more queries like" not in budget_text("ann", PrivacyCost(1), PrivacyCost(0), PrivacyCost(1), [], "pld")
