-- expect: DP115
WITH m AS (SELECT sqrt(age - 50) AS root FROM people) SELECT SUM(root) FROM m
