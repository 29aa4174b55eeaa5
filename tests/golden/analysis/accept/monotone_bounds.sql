-- LOG, LN and SQRT of bounded columns: [lo, hi] maps to [f(lo), f(hi)], rounded outward (Qrlew's SUM(... + LOG(age + 2))).
SELECT dept, SUM(LOG(age + 2)) AS total, AVG(LN(income + 1)) AS mean, SUM(SQRT(income)) FROM people GROUP BY dept
