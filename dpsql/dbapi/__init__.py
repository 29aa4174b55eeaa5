"""PEP 249 (DB-API 2.0) over a dpsql Session."""
