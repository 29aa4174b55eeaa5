"""Engines: the Engine boundary and the concrete engines that run plans (DuckDB, Spark)."""
