-- Tableau's top-N filter: the top 5 departments by a noisy count (a release), then the sums for them (a second release, filtered by the released keys).
SELECT dept, SUM(income) AS total FROM people JOIN (SELECT dept AS k, COUNT(*) AS n FROM people GROUP BY dept ORDER BY n DESC LIMIT 5) AS t ON people.dept = t.k GROUP BY dept ORDER BY total DESC LIMIT 3
