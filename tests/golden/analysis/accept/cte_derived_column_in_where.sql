-- A derived column (income / 12) used in the WHERE of the outer query.
WITH old AS (SELECT age, income / 12 AS monthly FROM people WHERE age >= 18) SELECT COUNT(*) AS n FROM old WHERE monthly > 500
