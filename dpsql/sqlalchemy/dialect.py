"""`DpsqlDialect`: SQLAlchemy over the dpsql DB-API, reflecting tables from the policy.

URLs (the path is the database file; an empty path means the policy's own sources):
    dpsql:///path/to/data.duckdb?policy=path/to/policy.toml&analyst=alice&ledger=ledger.sqlite
    dpsql:///?policy=policy.toml      data from the policy's `source =` lines
    dpsql://                          the bundled demo
    ...&ci_columns=on                 `<col>_ci95` (the 95% half-width), `<col>_ci_low`, `<col>_ci_high` after each noisy one

A thin adapter like the other front ends: no privacy logic, SQL rewriting or budget arithmetic
here. Statements compile with SQLAlchemy's default (ANSI, PostgreSQL/SQLite-like) compiler and
`?` parameters; dpsql's parser (DuckDB's dialect) accepts that output, and refuses what a
private query may not do exactly as through `dpsql.connect()`.
"""

from __future__ import annotations

import types
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from sqlalchemy import exc
from sqlalchemy import types as sqltypes
from sqlalchemy.engine import default
from sqlalchemy.engine.url import URL
from sqlalchemy.sql import compiler

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import IsolationLevel, ReflectedColumn, ReflectedPrimaryKeyConstraint, ReflectedTableComment

    from dpsql.dbapi.connection import Connection

from dpsql.catalog.policy import Column, Policy, Table
from dpsql.execution.probe import view_tables

SCHEMA = "main"
URL_KEYS = ("policy", "analyst", "ledger", "ci_columns")
_ON, _OFF = ("on", "true", "yes", "1"), ("off", "false", "no", "0")

# Policy column types -> SQLAlchemy types (nullable: NULLs are allowed in every column).
COLUMN_TYPES: dict[str, type[sqltypes.TypeEngine[Any]]] = {
    "int": sqltypes.BIGINT,
    "float": sqltypes.DOUBLE,
    "text": sqltypes.VARCHAR,
    "bool": sqltypes.BOOLEAN,
    "date": sqltypes.DATE,
    "timestamp": sqltypes.TIMESTAMP,
}


class DpsqlTypeCompiler(compiler.GenericTypeCompiler):
    """Generic DDL type names, except that `Float` means DuckDB's 8-byte DOUBLE, not 4-byte FLOAT."""

    def visit_FLOAT(self, type_: sqltypes.Float[Any], **kw: Any) -> str:  # noqa: N802 - SQLAlchemy's name
        return "DOUBLE"


class DpsqlCompiler(compiler.SQLCompiler):
    """SQLAlchemy's default compiler, with LIMIT and OFFSET as integer literals.

    dpsql takes LIMIT and OFFSET as literals only (DP119); `literal_execute` inlines the value
    when the statement runs, so the compiled form stays cacheable.
    """

    def limit_clause(self, select: Any, **kw: Any) -> str:
        kw = {**kw, "literal_execute": True}
        text = ""
        if select._limit_clause is not None:
            text += "\n LIMIT " + self.process(select._limit_clause, **kw)
        if select._offset_clause is not None:
            text += "\n OFFSET " + self.process(select._offset_clause, **kw)
        return text


class DpsqlDialect(default.DefaultDialect):
    """SQLAlchemy dialect for dpsql: read-only, no transactions, reflection from the policy."""

    name = "dpsql"
    driver = "dpsql"
    supports_statement_cache = True

    default_paramstyle = "qmark"
    statement_compiler = DpsqlCompiler
    type_compiler_cls = DpsqlTypeCompiler
    div_is_floordiv = False  # DuckDB's `/` divides integers exactly; `//` is the floor division
    supports_native_boolean = True
    supports_schemas = True
    supports_comments = True
    supports_alter = False
    supports_sequences = False
    supports_default_values = False
    supports_empty_insert = False
    supports_multivalues_insert = False
    supports_server_side_cursors = False
    supports_sane_rowcount = False
    supports_sane_multi_rowcount = False
    postfetch_lastrowid = False
    insert_returning = update_returning = delete_returning = False

    # --- the DB-API and the URL ------------------------------------------------------------
    @classmethod
    def import_dbapi(cls) -> types.ModuleType:
        """The dpsql module itself is the PEP 249 module."""
        import dpsql

        return dpsql

    def create_connect_args(self, url: URL) -> tuple[list[Any], dict[str, Any]]:
        """`dpsql:///db?policy=&analyst=&ledger=&ci_columns=` -> dpsql.connect(database=, policy=, analyst=, ledger=, ci_columns=)."""
        if url.host or url.port or url.username or url.password:
            raise exc.ArgumentError(
                "dpsql URLs name no host, port or user: use dpsql:///path/to/data.duckdb?policy=policy.toml&analyst=NAME"
            )
        unknown = sorted(set(url.query) - set(URL_KEYS))
        if unknown:
            raise exc.ArgumentError(f"unknown dpsql URL parameter(s) {', '.join(unknown)}; accepted: {', '.join(URL_KEYS)}")
        kwargs: dict[str, Any] = {}
        if url.database:
            kwargs["database"] = url.database
        for key in URL_KEYS:
            value = url.query.get(key)
            if isinstance(value, tuple):
                raise exc.ArgumentError(f"the dpsql URL parameter {key} is given more than once")
            if value and key == "ci_columns":
                if value.lower() not in _ON + _OFF:
                    raise exc.ArgumentError("the dpsql URL parameter ci_columns takes on or off")
                kwargs[key] = value.lower() in _ON
            elif value:
                kwargs[key] = value
        return [], kwargs

    # --- a read-only engine without transactions --------------------------------------------
    def do_begin(self, dbapi_connection: Any) -> None:
        """Nothing to begin: each statement is final."""

    def do_commit(self, dbapi_connection: Any) -> None:
        """Nothing to commit: dpsql writes no data; the ledger commits each charge itself."""

    def do_rollback(self, dbapi_connection: Any) -> None:
        """Nothing to roll back, and a privacy charge is never refunded.

        SQLAlchemy rolls back every connection it returns to the pool, so this must not raise
        (the DB-API's `rollback()` raises NotSupportedError to say charges are final).
        """

    def do_ping(self, dbapi_connection: Any) -> bool:
        """Alive while open: `SELECT 1` reads no table, so dpsql would refuse it (DP103)."""
        return not dbapi_connection.closed

    def get_isolation_level_values(self, dbapi_conn: Any) -> list[IsolationLevel]:
        """Only AUTOCOMMIT: every statement (and its charge) is final at once."""
        return ["AUTOCOMMIT"]

    def get_isolation_level(self, dbapi_connection: Any) -> IsolationLevel:
        """Always AUTOCOMMIT."""
        return "AUTOCOMMIT"

    def set_isolation_level(self, dbapi_connection: Any, level: str) -> None:
        """AUTOCOMMIT is the only level (SQLAlchemy checks the name against the values above)."""

    def _get_server_version_info(self, connection: Any) -> tuple[int, ...]:
        import dpsql

        return tuple(int(part) for part in dpsql.__version__.split(".") if part.isdigit())

    def _get_default_schema_name(self, connection: Any) -> str:
        return SCHEMA

    # --- reflection from the policy (no data, no budget) ------------------------------------
    @staticmethod
    def _policy(connection: Any) -> Policy:
        dbapi_connection: Connection = connection.connection.dbapi_connection  # SQLAlchemy's pool holds dpsql's PEP 249 connection
        return dbapi_connection.session.policy

    def _tables(self, connection: Any) -> dict[str, Table]:
        """The policy's tables, then its views (listed as tables: BI tools treat them as physical)."""
        policy = self._policy(connection)
        return {**policy.tables, **(view_tables(policy) if policy.views else {})}

    def _table(self, connection: Any, table_name: str, schema: str | None) -> Table:
        table = self._tables(connection).get(table_name.lower()) if schema in (None, SCHEMA) else None
        if table is None:
            raise exc.NoSuchTableError(f"{schema}.{table_name}" if schema else table_name)
        return table

    def get_schema_names(self, connection: Any, **kw: Any) -> list[str]:
        """One schema, `main`."""
        return [SCHEMA]

    def get_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        """The policy's tables, in the order it declares them, then its views."""
        if schema not in (None, SCHEMA):
            return []
        return [table.name for table in self._tables(connection).values()]

    def has_table(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> bool:
        """Whether the policy declares the table (or a view of that name)."""
        return schema in (None, SCHEMA) and table_name.lower() in self._tables(connection)

    def get_columns(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list[ReflectedColumn]:
        """The policy's columns of the table, with their types and public bounds or domain as comment."""
        table = self._table(connection, table_name, schema)
        return [
            {
                "name": column.name,
                "type": COLUMN_TYPES[column.type](),
                "nullable": True,
                "default": None,
                "autoincrement": False,
                "comment": _column_comment(column),
            }
            for column in table.columns.values()
        ]

    def get_table_comment(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> ReflectedTableComment:
        """Whether the table is public or private, and its privacy unit and contribution limits."""
        return {"text": _table_comment(self._table(connection, table_name, schema))}

    def get_pk_constraint(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> ReflectedPrimaryKeyConstraint:
        """None declared."""
        self._table(connection, table_name, schema)
        return {"constrained_columns": [], "name": None}

    def get_foreign_keys(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list[Any]:
        """None declared."""
        self._table(connection, table_name, schema)
        return []

    def get_indexes(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list[Any]:
        """None declared."""
        self._table(connection, table_name, schema)
        return []

    def get_unique_constraints(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list[Any]:
        """None declared."""
        self._table(connection, table_name, schema)
        return []

    def get_check_constraints(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list[Any]:
        """None declared (bounds are clamps applied to aggregates, not row constraints)."""
        self._table(connection, table_name, schema)
        return []

    def get_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        """No views."""
        return []

    def get_materialized_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        """No materialized views."""
        return []

    def get_temp_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        """No temporary tables."""
        return []

    def get_temp_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        """No temporary views."""
        return []

    def get_sequence_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        """No sequences."""
        return []

    def get_view_definition(self, connection: Any, view_name: str, schema: str | None = None, **kw: Any) -> str:
        """There are no views."""
        raise exc.NoSuchTableError(view_name)


def _number(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else repr(float(value))


def _column_comment(column: Column) -> str | None:
    parts = []
    bounds = column.bounds_text(_number)
    if bounds is not None:
        parts.append(f"bounds {bounds}")
    if column.values is not None:
        parts.append(f"public domain of {len(column.values)} values")
    return "; ".join(parts) or None


def _table_comment(table: Table) -> str:
    if table.public:
        return "public table: read exactly, no noise, no cost"
    return (
        f"private table: privacy unit {table.privacy_unit}, at most {table.max_rows} rows"
        f" and {table.max_groups} groups per unit; only aggregates are released"
    )
