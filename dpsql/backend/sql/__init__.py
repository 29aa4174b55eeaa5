"""SQL generation: plans to engine SQL as sqlglot expressions (no engine, no connection)."""
