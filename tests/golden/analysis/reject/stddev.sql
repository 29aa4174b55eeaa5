-- expect: DP109
SELECT STDDEV(income) FROM people
