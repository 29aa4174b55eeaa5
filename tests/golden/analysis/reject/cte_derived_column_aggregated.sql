-- expect: DP115
WITH m AS (SELECT sqrt(income) AS root FROM people) SELECT SUM(root) FROM m
