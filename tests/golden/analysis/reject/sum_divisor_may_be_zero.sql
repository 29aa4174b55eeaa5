-- expect: DP115
SELECT AVG(income / (age - 18)) FROM people
