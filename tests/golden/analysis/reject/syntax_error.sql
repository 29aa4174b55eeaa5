-- expect: DP100
SELECT COUNT(* FROM people
