-- The clock, read once at plan time as a UTC literal: people born from 1990 on (age + 1990 <= this year), by dept.
SELECT dept, COUNT(*) FROM people WHERE age + 999 + 991 <= YEAR(CURRENT_DATE) AND YEAR(now()) > 999 GROUP BY dept
