"""SQLAlchemy dialect `dpsql://` over the dpsql DB-API (needs the optional `sqlalchemy` package).

Importing `dpsql` never imports this package; SQLAlchemy finds the dialect through the
`sqlalchemy.dialects` entry point `dpsql` (see pyproject.toml).
"""

from dpsql.sqlalchemy.dialect import DpsqlDialect

__all__ = ["DpsqlDialect"]
