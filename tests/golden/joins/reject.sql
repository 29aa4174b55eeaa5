SELECT COUNT(*) FROM people p JOIN visits v ON p.dept = v.site;
DP136: two private tables must be joined on their privacy unit: add p.person_id = v.person_id to the ON condition
;

SELECT COUNT(*) FROM people p JOIN badges b ON p.person_id = b.badge_id;
DP136: 'badges' and 'people' protect different units (badge_id and person_id): a join of their rows pairs different persons' data
;

SELECT COUNT(*) FROM people a JOIN people b ON a.person_id = b.person_id;
DP137: the private table 'people' is read twice: a self-join pairs each of a person's rows with all of their other rows
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

SELECT COUNT(*) FROM people p JOIN payroll x ON p.person_id = x.person_id;
DP103: table 'payroll' is not in the policy
;

SELECT COUNT(*) FROM people p JOIN read_csv('x.csv') x ON p.dept = x.name;
DP103: the table function read_csv() cannot be joined: joins read tables of the policy
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
DP126: private rows joined with released results: the aggregate does not GROUP BY 'person_id', the column joined with the released keys: the join would change what its groups hold
;

SELECT COUNT(*) FROM (SELECT p.dept, v.site FROM people p JOIN visits v ON p.dept = v.site) t;
DP136: two private tables must be joined on their privacy unit: add p.person_id = v.person_id to the ON condition
;

SELECT COUNT(*) FROM (SELECT age FROM people p JOIN visits v ON p.person_id = v.person_id) t WHERE t.site = 'x';
DP111: column 'site' is not a column of the subquery or CTE
;

SELECT dept, COUNT(*), (SELECT MAX(floor) FROM depts d WHERE d.name = p.dept) FROM people p GROUP BY dept;
DP110: a correlated subquery (it reads 'p.dept' of the outer query) would be computed for each outer row over private rows without noise
;

SELECT COUNT(*) FROM people p JOIN students s ON p.person_id = s.person_id;
DP136: 'students' and 'people' protect different units (student (person_id) and person_id): a join of their rows pairs different persons' data
;

SELECT COUNT(*) FROM orders o JOIN lines l ON l.qty = o.total;
DP136: two private tables must be joined on their privacy unit: add o.owner = l.buyer to the ON condition
;

SELECT order_id, COUNT(*) FROM orders GROUP BY order_id;
DP140: GROUP BY order_id would release one group per order: order_id identifies rows held by one person
;

SELECT o.order_id, COUNT(*) FROM orders o JOIN lines l ON l.order_id = o.order_id GROUP BY 1;
DP140: GROUP BY order_id would release one group per order: order_id identifies rows held by one person
;

SELECT o.owner, COUNT(*) FROM people p LEFT JOIN orders o ON p.person_id = o.owner GROUP BY o.owner;
DP140: GROUP BY owner would release one group per person_id: owner identifies rows held by one person
;

SELECT o.owner, COUNT(*) FROM people p JOIN orders o ON o.owner = p.person_id GROUP BY o.owner;
DP107: GROUP BY the privacy unit would release one group per person
;

SELECT COUNT(*) FROM people p WHERE EXISTS (SELECT 1 FROM visits v WHERE v.site = p.dept);
DP138: a subquery over the private table 'visits' must be correlated with the same person's rows: whether one person's value is in another person's rows is not bounded by either person's contribution
;

SELECT COUNT(*) FROM people p WHERE EXISTS (SELECT 1 FROM badges b WHERE b.badge_id = p.person_id);
DP138: the subquery reads the private table 'badges', which protects another unit (badge_id, not person_id): one person's rows would decide whether another person's rows count
;

SELECT COUNT(*) FROM people p WHERE EXISTS (SELECT site FROM visits v WHERE v.person_id = p.person_id GROUP BY site);
DP138: a subquery in WHERE is one plain SELECT from one table (no GROUP BY, HAVING, DISTINCT, LIMIT, join or set operation)
;

SELECT COUNT(*) FROM people p WHERE EXISTS (SELECT 1 FROM visits v WHERE v.person_id = p.person_id AND v.site IN (SELECT site FROM sites));
DP138: a subquery in WHERE may not hold another subquery
;

SELECT COUNT(*) FROM depts WHERE EXISTS (SELECT 1 FROM people p WHERE p.dept = depts.name);
DP138: a query over public tables may not read a private table in a subquery: whether a person's rows match would be released with no noise
;

SELECT COUNT(*) FROM people p, depts d;
DP135: 'd' is joined to no other table by an equality of columns: a cross join pairs every row with every row, so one person's rows are multiplied without bound
;

SELECT COUNT(*) FROM depts d LEFT JOIN people p ON p.dept = d.name;
DP135: a join must start from a private table: the LEFT JOIN keeps rows of the public table 'depts' that no person holds
;

SELECT COUNT(*) FROM people p WHERE p.age > (SELECT AVG(q.age) FROM people q WHERE q.dept = p.dept);
DP110: a correlated subquery (it reads 'p.dept' of the outer query) would be computed for each outer row over private rows without noise
;

SELECT COUNT(*), EXISTS (SELECT 1 FROM depts) FROM people;
DP110: this subquery is not accepted here: dpsql takes subqueries in FROM, [NOT] EXISTS (SELECT ...) and col [NOT] IN (SELECT ...) in WHERE, and uncorrelated scalar subqueries over private rows
;

SELECT COUNT(*) FROM people WHERE age > (SELECT AVG(age) FROM people GROUP BY dept);
DP110: a scalar subquery with GROUP BY returns one row per group, not one value
;

SELECT COUNT(*) FROM people WHERE age > (SELECT AVG(age), COUNT(*) FROM people);
DP110: a scalar subquery returns 2 columns: it must return one value
;

SELECT COUNT(*) FROM people WHERE age > (SELECT age FROM people LIMIT 1);
DP110: a row-level scalar subquery returns a row's value, which is not released: compare with an aggregate over the rows
;

SELECT COUNT(*) FROM people WHERE age > (SELECT AVG(minutes) FROM visits v WHERE v.person_id = people.person_id);
DP110: a correlated subquery (it reads 'people.person_id' of the outer query) would be computed for each outer row over private rows without noise
;

SELECT COUNT(*) FROM people p LEFT JOIN visits v ON p.person_id = v.person_id AND p.age > 3;
DP135: the ON condition of a LEFT JOIN reads 'p.age' of a table before the joined table 'v' outside an equality of columns: the rows it keeps would depend on the other table's row
;

SELECT COUNT(*) FROM people p LEFT JOIN visits v ON p.person_id = v.person_id AND v.minutes > p.age;
DP135: the ON condition of a LEFT JOIN reads 'p.age' of a table before the joined table 'v' outside an equality of columns: the rows it keeps would depend on the other table's row
;

SELECT COUNT(*) FROM people p WHERE p.person_id IN (SELECT person_id FROM students);
DP138: the subquery reads the private table 'students', which protects another unit (student (person_id), not person_id): one person's rows would decide whether another person's rows count
;

SELECT v.minutes, t.n FROM visits v JOIN (SELECT site, COUNT(*) AS n FROM visits GROUP BY site) t ON v.site = t.site;
DP126: a table or subquery read without aggregation beside released results: the outer query of a post-processing query reads the aggregated subqueries, CTEs and UNION ALL branches, and public tables, only
;

WITH sites AS (SELECT site, minutes FROM visits) SELECT s.minutes, t.n FROM sites s JOIN (SELECT site, COUNT(*) AS n FROM visits GROUP BY site) t ON s.site = t.site;
DP126: a private row-level relation beside released results: the outer query of a post-processing query reads the aggregated subqueries, CTEs and UNION ALL branches, and public tables, only
;
