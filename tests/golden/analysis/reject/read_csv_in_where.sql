-- expect: DP113
SELECT COUNT(*) FROM people WHERE region IN (read_csv('regions.csv'))
