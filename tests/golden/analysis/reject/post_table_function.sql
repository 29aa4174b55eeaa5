-- expect: DP113
SELECT * FROM (SELECT COUNT(*) AS n FROM people) t, read_csv('/etc/passwd') f
