-- expect: DP126
WITH base AS (SELECT dept, age FROM people), a AS (SELECT dept, COUNT(*) AS n FROM base GROUP BY dept) SELECT a.dept, base.age FROM a JOIN base ON a.dept = base.dept
