-- GROUP BY LOG of a CASE with literal results: the domain mapped value by value (Qrlew's test query).
SELECT SUM(age) AS n FROM people GROUP BY LOG(CASE WHEN age < 50 THEN 50 ELSE 1 END)
