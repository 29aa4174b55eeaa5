"""The interactive Median Mechanism layer for repeated counting queries (docs/mechanisms.md).

docs/mechanisms.md, in its sparse-vector form: a set of candidate databases (fractional
histograms over the declared domain X of the enabled columns) answers a counting query with its
median for free when a private sparse-vector test says the median is accurate ("easy"); otherwise
the query is "hard": it is answered from the data with fresh noise, and candidates inconsistent
with the answer are pruned and projected. The layer reserves its whole budget once per session
and halts after c hard answers.

Modules here (the maths):
  domain.py      X as numpy arrays: codes, groups, query shapes
  candidates.py  the public candidate machinery (post-processing only; public random seed)
  core.py        the algorithm: repeat cache, median, sparse-vector test, hard answers, transcript
Elsewhere: dpsql.planner.measurable (which counting queries are measurable over X),
dpsql.execution.median_layer (calibration, reservation through the Charger, SQL, results,
EXPLAIN), dpsql.backend.sql.median_layer_sql (the domain, mask and histogram SQL).

Privacy lives in dpsql.mechanisms.sparse_vector (noise, scales, calibration) and in core.py's
`SecretHistogram`, the only object holding the data; everything else sees public state only.
"""
