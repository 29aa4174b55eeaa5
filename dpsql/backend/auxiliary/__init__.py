"""Auxiliary databases: released values, the wire catalog, files and schemas (no private rows)."""
