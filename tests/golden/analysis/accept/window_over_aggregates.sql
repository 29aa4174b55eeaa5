-- Metabase's cumulative sum and a rank over the query's own aggregates: windows over the released groups (an outer query), one release.
SELECT dept, SUM(income) AS total, SUM(SUM(income)) OVER (ORDER BY dept ROWS UNBOUNDED PRECEDING) AS running FROM people GROUP BY dept ORDER BY dept
