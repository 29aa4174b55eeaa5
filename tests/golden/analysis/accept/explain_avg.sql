-- EXPLAIN compiles and shows the plan without charging anything.
EXPLAIN SELECT AVG(income) FROM people
