-- A row-level predicate with AND, OR and parentheses.
SELECT COUNT(*) FROM people WHERE (age >= 30 AND region = 'north') OR dept = 'sales'
