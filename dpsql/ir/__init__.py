"""Frozen, typed objects passed between stages: the bound query and the DP plan."""
