"""qmark parameters bind in text order, whatever order sqlglot keeps clauses in."""

from dpsql.frontend.parse import parse_statement


def test_qmarks_bind_in_text_order_across_clauses() -> None:
    sql = "SELECT dept, COUNT(*) FROM people WHERE age > ? AND region = ? GROUP BY dept ORDER BY dept LIMIT ? OFFSET ?"
    bound = parse_statement(sql, [40, "x", 3, 1]).tree.sql()
    assert "age > 40" in bound and "region = 'x'" in bound and "LIMIT 3" in bound and "OFFSET 1" in bound


def test_qmarks_bind_in_text_order_inside_expressions() -> None:
    bound = parse_statement("SELECT COUNT(*) FROM people WHERE age BETWEEN ? AND ? AND dept IN (?, ?)", [1, 2, "a", "b"]).tree.sql()
    assert "BETWEEN 1 AND 2" in bound and "IN ('a', 'b')" in bound
