"""Aggregates as modules: everything one SQL aggregate means, in one module per family.

A family module (counts, sums, variance, quantiles, mode, trimmed_mean) owns the spellings it
binds and their argument checks, its planning (the releases it asks for, its share of the budget,
its engine requests), its Estimate (the one definition of its value, type, 95% interval, noise
facts and EXPLAIN line) and, for a robust aggregate, how its mechanism's release is read back.
`registry.py` lists the families; the binder, the planner and execution find an aggregate there
(or through its Estimate in the plan) and never test its name. `base.py` holds the protocol.
"""
