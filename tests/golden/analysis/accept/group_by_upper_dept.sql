-- GROUP BY an expression with a public domain derived from the policy
SELECT upper(dept), COUNT(*) FROM people GROUP BY upper(dept)
