"""The engine boundary: plans to engine SQL, and the only package that talks to DuckDB."""
