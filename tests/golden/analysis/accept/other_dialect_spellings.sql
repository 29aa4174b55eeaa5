-- SQL Server / Power BI spellings: COUNT_BIG is COUNT, VAR/STDEV/VARP/STDEVP the sample and population statistics
SELECT COUNT_BIG(*) AS n, COUNT_BIG(DISTINCT person_id) AS persons, VAR(age) AS v, STDEV(age) AS s, VARP(age) AS vp, STDEVP(age) AS sp FROM people
