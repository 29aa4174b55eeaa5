-- expect: DP105
SELECT income FROM people
