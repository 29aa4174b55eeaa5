-- an output alias that shadows a column: the column alone would be neither aggregated nor grouped, so the alias is meant
SELECT dept, SUM(income) AS income FROM people GROUP BY dept HAVING income > 0 ORDER BY income DESC
