-- MIN and MAX are approximate: the fine-grid exponential mechanism's estimate of an order statistic near the end
SELECT dept, MIN(age), MAX(income) FROM people GROUP BY dept
