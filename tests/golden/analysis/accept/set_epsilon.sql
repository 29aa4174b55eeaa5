-- A session setting: the epsilon of queries that name none.
SET dpsql.epsilon = 0.2
