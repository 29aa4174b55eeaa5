SELECT COUNT(*) FROM people p JOIN visits v ON p.dept = v.site;
DP136: two private tables must be joined on their privacy unit: add p.person_id = v.person_id to the ON condition
;

SELECT COUNT(*) FROM people p JOIN badges b ON p.person_id = b.badge_id;
DP136: 'badges' and 'people' protect different units (badge_id and person_id): a join of their rows pairs different persons' data
;

SELECT COUNT(*) FROM people a JOIN people b ON a.person_id = b.person_id;
DP137: the private table 'people' is read twice: a self-join pairs each of a person's rows with all of their other rows
;

SELECT COUNT(*) FROM people p, visits v WHERE p.person_id = v.person_id;
answered
;

SELECT COUNT(*) FROM people p CROSS JOIN depts d;
DP135: 'd' is joined to no other table by an equality of columns: a cross join pairs every row with every row, so one person's rows are multiplied without bound
;

SELECT COUNT(*) FROM people p FULL JOIN visits v ON p.person_id = v.person_id;
DP135: FULL JOIN is not accepted: dpsql accepts [INNER] JOIN and LEFT JOIN with ON or USING, and comma lists joined by equalities in WHERE
;

SELECT COUNT(*) FROM people p NATURAL JOIN visits v;
DP135: NATURAL JOIN is not accepted: dpsql accepts [INNER] JOIN and LEFT JOIN with ON or USING, and comma lists joined by equalities in WHERE
;

SELECT COUNT(*) FROM people p JOIN depts d ON p.dept = d.name OR p.age > 30;
DP135: 'd' is joined to no other table by an equality of columns: a cross join pairs every row with every row, so one person's rows are multiplied without bound
;

SELECT COUNT(*) FROM people p JOIN depts d ON p.age = d.name;
DP135: the join compares columns of different types (int and text)
;

SELECT COUNT(*) FROM depts d JOIN people p ON p.dept = d.name;
answered
;

SELECT COUNT(*) FROM people p JOIN payroll x ON p.person_id = x.person_id;
DP103: table 'payroll' is not in the policy
;

SELECT COUNT(*) FROM people p JOIN read_csv('x.csv') x ON p.dept = x.name;
DP103: the table function read_csv() cannot be joined: joins read tables of the policy
;

SELECT COUNT(*) FROM people WHERE person_id IN (SELECT person_id FROM visits);
answered
;

SELECT COUNT(*) FROM people WHERE dept IN (SELECT name, floor FROM depts);
DP138: IN (SELECT ...) selects exactly one column of the subquery's table
;

SELECT COUNT(*) FROM people WHERE dept IN (SELECT name FROM depts GROUP BY name);
DP138: a subquery in WHERE is one plain SELECT from one table (no GROUP BY, HAVING, DISTINCT, LIMIT, join or set operation)
;

SELECT COUNT(*) FROM people WHERE lower(dept) IN (SELECT name FROM depts);
DP138: the left side of IN (SELECT ...) must be a column
;

SELECT person_id, COUNT(*) FROM people p JOIN visits v USING (person_id) GROUP BY person_id;
DP107: GROUP BY the privacy unit would release one group per person
;

SELECT COUNT(*) FROM people p JOIN sites s ON p.dept = s.site JOIN visits v ON s.site = v.site;
DP136: two private tables must be joined on their privacy unit: add p.person_id = v.person_id to the ON condition
;

SELECT COUNT(*) FROM people p JOIN depts d ON p.dept = d.name WHERE p.dept IN (SELECT name FROM depts WHERE name = p.dept);
answered
;

SELECT dept, COUNT(*) FROM people p JOIN depts d ON p.dept = d.name JOIN depts e ON d.name = e.name GROUP BY floor;
DP111: column 'floor' is ambiguous: more than one joined table has it
;

WITH v AS (SELECT * FROM visits WHERE site = 'north') SELECT COUNT(*) FROM people p LEFT JOIN v ON p.person_id = v.person_id;
DP110: a subquery or CTE with WHERE on the right of a LEFT JOIN is not accepted: as a filter of the whole query it would drop the rows the LEFT JOIN keeps unmatched
;

SELECT COUNT(*) FROM people p JOIN (SELECT v.person_id FROM visits v JOIN sites s ON v.site = s.site) j ON p.person_id = j.person_id;
DP110: a subquery or CTE that joins tables cannot itself be joined
;

SELECT COUNT(*) FROM people p JOIN (SELECT person_id, COUNT(*) AS n FROM visits GROUP BY person_id) c ON p.person_id = c.person_id;
DP126: a table or subquery read without aggregation beside released results: the outer query of a post-processing query reads the aggregated subqueries, CTEs and UNION ALL branches only
;

SELECT COUNT(*) FROM (SELECT p.dept, v.site FROM people p JOIN visits v ON p.dept = v.site) t;
DP136: two private tables must be joined on their privacy unit: add p.person_id = v.person_id to the ON condition
;

SELECT COUNT(*) FROM (SELECT age FROM people p JOIN visits v ON p.person_id = v.person_id) t WHERE t.site = 'x';
DP111: column 'site' is not a column of the subquery or CTE
;

SELECT COUNT(*) FROM people p JOIN depts d ON p.dept = d.name WHERE EXISTS (SELECT 1 FROM depts);
answered
;

SELECT COUNT(*), (SELECT MAX(floor) FROM depts) FROM people WHERE dept IN (SELECT name FROM depts);
DP110: a subquery in SELECT, GROUP BY, HAVING or ORDER BY is not accepted
;
