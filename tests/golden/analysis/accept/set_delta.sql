-- A session setting: the delta of queries that name none.
SET dpsql.delta = 1e-7
