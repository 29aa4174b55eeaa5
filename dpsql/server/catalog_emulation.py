"""Answers the catalog probes clients send (pg_catalog, information_schema, version(), SET/SHOW)
from the policy alone: no data, no budget.

Probes run in a private, locked-down in-memory DuckDB (dpsql.backend.auxiliary.catalog_db) that holds only
PostgreSQL-shaped metadata tables built from the policy (pg_catalog.py). A probe is parsed as
PostgreSQL SQL and rewritten for DuckDB: catalog tables move to the emulation's schemas, reg*
casts and PostgreSQL-only operators become macros, and per-connection values (current_user,
current_database(), settings) become literals. A statement that names a policy table is never
answered here: it goes to the Session. Only statements that read the catalog come here (a catalog
table or function, or no FROM at all: `SELECT 1`); before running, a probe's work must be
statically bounded (catalog_rules.py), and it runs within the metadata database's limits.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dpsql.backend.auxiliary.catalog_db import MetadataDB
from dpsql.catalog.policy import Policy, ServerSettings
from dpsql.errors import CatalogQueryError, NotSupportedError
from dpsql.execution.probe import view_tables
from dpsql.server import pg_catalog as pgc
from dpsql.server import pgtypes
from dpsql.server.catalog_rules import calls_catalog_function, check_probe, format_parts
from dpsql.server.session_views import is_session_view

log = logging.getLogger("dpsql.server")
PG_SCHEMA, INFO_SCHEMA = "pgc", "pgi"
VERSION = f"PostgreSQL {pgc.SERVER_VERSION} (dpsql 0.1.0, differentially private SQL; catalog emulation)"
Route = Literal["catalog", "session", "views"]
ROUTE_CACHE_SIZE = 512
_SEEDS = frozenset({"random_seed", "dpsql.random_seed", "dpsql.seed", "seed"})
_TABLE_FUNCTIONS = frozenset({"generate_series", "unnest", "generate_subscripts", "explode", "string_to_array", "pg_get_keywords"})  # sqlglot may read unnest as explode
_USER_FUNCTIONS = frozenset({"current_user", "session_user", "user", "current_role"})


@dataclass
class ClientState:
    """Per-connection values a probe may read: who is connected, to what, with which settings."""

    user: str
    database: str
    pid: int = 0
    settings: dict[str, str] = field(default_factory=lambda: dict(pgc.DEFAULT_SETTINGS))

    def setting(self, name: str) -> str | None:
        """A setting by case-insensitive name."""
        lowered = name.lower()
        for key, value in self.settings.items():
            if key.lower() == lowered:
                return value
        return None

    def set(self, name: str, value: str) -> str:
        """Set a setting (keeping the canonical spelling of known names); returns the name used."""
        lowered = name.lower()
        key = next((k for k in self.settings if k.lower() == lowered), name)
        if lowered in _SEEDS:
            raise NotSupportedError(
                "the server refuses random_seed: seeded noise is for tests and marked experiments only",
                code="DP401",
            )
        self.settings[key] = "UTF8" if lowered == "client_encoding" else value
        return key


@dataclass(frozen=True, slots=True)
class Answer:
    """A catalog answer: (name, type OID) columns, rows and the command tag."""

    columns: tuple[tuple[str, int], ...]
    rows: list[tuple[Any, ...]]
    tag: str
    notice: str | None = None  # sent as a NoticeResponse after the rows (a private answer's intervals)


def _macros() -> list[str]:
    version = exp.Literal.string(VERSION).sql(dialect="duckdb")
    none = "CAST(NULL AS VARCHAR)"
    privileges = ", ".join(["(a) AS true", "(a, b) AS true", "(a, b, c) AS true", "(a, b, c, d) AS true"])
    statements = [
        "CREATE MACRO format_type(typ, typmod) AS (SELECT format_name FROM pgc.pg_type WHERE oid = typ)",
        f"CREATE MACRO version() AS {version}",
        "CREATE MACRO current_schema() AS 'public'",
        "CREATE MACRO current_schemas(implicit) AS CASE WHEN implicit THEN ['pg_catalog', 'public'] ELSE ['public'] END",
        "CREATE MACRO obj_description(o) AS (SELECT description FROM pgc.pg_description WHERE objoid = o AND objsubid = 0),"
        " (o, c) AS (SELECT description FROM pgc.pg_description WHERE objoid = o AND objsubid = 0)",
        "CREATE MACRO col_description(o, n) AS (SELECT description FROM pgc.pg_description WHERE objoid = o AND objsubid = n)",
        "CREATE MACRO current_setting(n) AS (SELECT setting FROM pgc.pg_settings WHERE lower(name) = lower(n)),"
        " (n, missing_ok) AS (SELECT setting FROM pgc.pg_settings WHERE lower(name) = lower(n))",
        "CREATE MACRO array_upper(a, d) AS CASE WHEN a IS NULL OR len(a) = 0 THEN NULL ELSE len(a) END",
        "CREATE MACRO array_lower(a, d) AS CASE WHEN a IS NULL OR len(a) = 0 THEN NULL ELSE 1 END",
        "CREATE MACRO __quote_literal(s) AS chr(39) || replace(s, chr(39), chr(39) || chr(39)) || chr(39)",
        "CREATE MACRO quote_ident(s) AS CASE WHEN regexp_full_match(s, '[a-z_][a-z0-9_$]*') THEN s"
        " ELSE '\"' || replace(s, '\"', '\"\"') || '\"' END",
        "CREATE MACRO __regclass_oid(n) AS (SELECT min(c.oid) FROM pgc.pg_class c JOIN pgc.pg_namespace s ON s.oid = c.relnamespace"
        " WHERE c.relname = n OR s.nspname || '.' || c.relname = n OR CAST(c.oid AS VARCHAR) = n)",
        "CREATE MACRO __regclass_name(o) AS coalesce((SELECT relname FROM pgc.pg_class WHERE oid = o), CAST(o AS VARCHAR))",
        "CREATE MACRO __regtype_oid(n) AS (SELECT min(oid) FROM pgc.pg_type WHERE typname = n OR format_name = n"
        " OR CAST(oid AS VARCHAR) = CAST(n AS VARCHAR))",
        "CREATE MACRO __regtype_name(o) AS coalesce((SELECT format_name FROM pgc.pg_type WHERE oid = o), CAST(o AS VARCHAR))",
        "CREATE MACRO __regnamespace_oid(n) AS (SELECT oid FROM pgc.pg_namespace WHERE nspname = n)",
        "CREATE MACRO __regnamespace_name(o) AS coalesce((SELECT nspname FROM pgc.pg_namespace WHERE oid = o), CAST(o AS VARCHAR))",
        "CREATE MACRO __regrole_name(o) AS 'dpsql'",
        "CREATE MACRO to_regtype(n) AS __regtype_oid(n)",
        "CREATE MACRO to_regclass(n) AS __regclass_oid(n)",
        "CREATE MACRO to_regnamespace(n) AS __regnamespace_oid(n)",
        "CREATE MACRO to_regproc(n) AS CAST(NULL AS BIGINT)",
        "CREATE MACRO to_regprocedure(n) AS CAST(NULL AS BIGINT)",
        "CREATE MACRO set_config(n, v, l) AS v",
        "CREATE MACRO pg_postmaster_start_time() AS TIMESTAMP '2000-01-01 00:00:00'",
        "CREATE MACRO pg_encoding_to_char(e) AS 'UTF8'",
        # PostgreSQL's units and rounding (half up at each step of 1024; 10240 of a unit before the next).
        "CREATE MACRO __size_unit(n, k) AS CAST(round(abs(n) / power(1024, k)) * sign(n) AS BIGINT)",
        "CREATE MACRO pg_size_pretty(n) AS CASE WHEN n IS NULL THEN NULL WHEN abs(n) < 10240 THEN CAST(n AS BIGINT) || ' bytes'"
        " WHEN abs(n) < 10239.5 * 1024 THEN __size_unit(n, 1) || ' kB' WHEN abs(n) < 10239.5 * 1024 * 1024 THEN __size_unit(n, 2) || ' MB'"
        " WHEN abs(n) < 10239.5 * power(1024, 3) THEN __size_unit(n, 3) || ' GB' ELSE __size_unit(n, 4) || ' TB' END",
        "CREATE MACRO pg_get_serial_sequence(t, c) AS " + none,
        # information_schema._pg_expandarray(int2vector): one (x, n) row per element (JDBC getPrimaryKeys/getIndexInfo).
        "CREATE MACRO _pg_expandarray(a) AS unnest(list_transform(generate_series(1, len(a)), lambda i: {'x': a[i], 'n': i}))",
        # Session times: the server's clock, as PostgreSQL's functions of the same names.
        "CREATE MACRO now() AS get_current_timestamp()",
        "CREATE MACRO parse_ident(s) AS list_transform(string_split(s, '.'), lambda p: trim(p, '\"'))",
        "CREATE MACRO transaction_timestamp() AS get_current_timestamp()",
        "CREATE MACRO statement_timestamp() AS get_current_timestamp()",
        "CREATE MACRO clock_timestamp() AS get_current_timestamp()",
        "CREATE MACRO timeofday() AS strftime(get_current_timestamp(), '%a %b %d %H:%M:%S.%f %Y %Z')",
    ]
    constant = {
        "pg_get_userbyid(o)": "'dpsql'", "pg_table_is_visible(o)": "true", "pg_type_is_visible(o)": "true",
        "pg_function_is_visible(o)": "true", "pg_is_in_recovery()": "false", "txid_current()": "1",
        "pg_backend_pid()": "0", "inet_server_addr()": none, "inet_server_port()": "CAST(NULL AS INTEGER)",
        "inet_client_addr()": none, "inet_client_port()": "CAST(NULL AS INTEGER)", "shobj_description(o, c)": none,
        "pg_get_partkeydef(o)": none, "pg_get_statisticsobjdef_columns(o)": none, "pg_relation_is_publishable(o)": "false",
        "pg_get_function_result(o)": none, "pg_get_function_arguments(o)": none,
        "pg_get_function_identity_arguments(o)": none, "pg_total_relation_size(o)": "0", "pg_table_size(o)": "0",
        "pg_indexes_size(o)": "0", "pg_my_temp_schema()": "0", "pg_is_other_temp_schema(o)": "false",
        "pg_tablespace_location(o)": none, "pg_get_keywords()": none, "pg_stat_get_numscans(o)": "0",
    }  # fmt: skip
    statements += [f"CREATE MACRO {signature} AS {value}" for signature, value in constant.items()]
    for name in ("pg_get_expr", "pg_get_indexdef", "pg_get_constraintdef", "pg_get_viewdef", "pg_get_triggerdef",
                 "pg_get_ruledef", "pg_relation_size"):  # fmt: skip
        value = "0" if name == "pg_relation_size" else none
        statements.append(f"CREATE MACRO {name}(a) AS {value}, (a, b) AS {value}, (a, b, c) AS {value}")
    for name in ("has_table_privilege", "has_schema_privilege", "has_database_privilege", "has_column_privilege",
                 "has_any_column_privilege", "has_function_privilege", "has_sequence_privilege", "pg_has_role",
                 "has_type_privilege", "has_language_privilege"):  # fmt: skip
        statements.append(f"CREATE MACRO {name}{privileges}")
    return statements


class CatalogEmulation:
    """The emulated catalog of one policy, shared by all connections of a server."""

    def __init__(self, policy: Policy, limits: ServerSettings | None = None) -> None:
        self.policy = policy
        limits = limits if limits is not None else policy.server
        views = view_tables(policy) if policy.views else {}  # the policy's views, listed as tables
        self._db = MetadataDB(memory_mb=limits.catalog_memory_mb, timeout=limits.catalog_timeout, max_rows=limits.catalog_max_rows)
        self._db.create_schema(PG_SCHEMA)
        self._db.create_schema(INFO_SCHEMA)
        for name, rows in pgc.catalog_rows(policy, views=views).items():
            self._db.load_table(PG_SCHEMA, name, pgc.columns_of(pgc.PG_TABLES[name]), rows)
        for name, rows in pgc.information_schema_rows(policy, views=views).items():
            self._db.load_table(INFO_SCHEMA, name, pgc.columns_of(pgc.INFORMATION_SCHEMA[name]), rows)
        self._db.define(_macros())
        self._db.lock()
        self._routes: dict[str, tuple[Route, exp.Expr | None]] = {}

    def close(self) -> None:
        """Close the metadata database."""
        self._db.close()

    # --- routing ---------------------------------------------------------------------------------
    def route(self, sql: str) -> tuple[Route, exp.Expr | None]:
        """Whether a query is a catalog probe (with its parsed tree) or goes to the Session.

        Pure in the SQL text, so decisions are cached (callers copy a catalog tree before changing it).
        """
        cached = self._routes.get(sql)
        if cached is None:
            cached = self._route(sql)
            if len(self._routes) >= ROUTE_CACHE_SIZE:
                self._routes.pop(next(iter(self._routes)), None)
            self._routes[sql] = cached
        return cached

    def _route(self, sql: str) -> tuple[Route, exp.Expr | None]:
        tree = _parse(sql)
        if tree is None or not isinstance(tree, exp.Query):
            return "session", None
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        tables = list(tree.find_all(exp.Table))
        reads_catalog = False
        if any(is_session_view(t) for t in tables) and all(is_session_view(t) or (t.name.lower() in ctes and not t.db) for t in tables):
            return "views", tree  # the session's own state (dpsql.last_query, dpsql.ledger, dpsql.budget)
        for table in tables:
            if isinstance(table.this, exp.Func):
                if _function_name(table.this) not in _TABLE_FUNCTIONS:
                    return "session", None  # read_csv(...) and friends: the Session refuses them with a rule code
                continue
            if table.name.lower() in ctes and not table.db:
                continue
            if not _is_catalog_table(table):
                return "session", None
            reads_catalog = True
        if not reads_catalog and (tables or ctes) and not calls_catalog_function(tree):
            # Only CTEs and generated rows: no catalog read, so not a probe (the Session refuses it).
            return "session", None
        return "catalog", tree

    def parameter_types(self, sql: str) -> list[int]:
        """OIDs of a probe's $n parameters: text arrays inside ANY/ALL, text otherwise."""
        _, tree = self.route(sql)
        if tree is None:
            return []
        types: dict[int, int] = {}
        for node in tree.find_all(exp.Parameter, exp.Placeholder):
            number = node.this.this if isinstance(node.this, exp.Literal) else node.this
            if not str(number).isdigit():
                continue
            parent = node.parent.parent if isinstance(node.parent, exp.Paren) else node.parent
            array = isinstance(parent, (exp.Any, exp.All))
            types[int(str(number))] = pgtypes.ARRAY_OF[pgtypes.TEXT] if array else pgtypes.TEXT
        return [types.get(n, pgtypes.TEXT) for n in range(1, max(types, default=0) + 1)]

    # --- answers ---------------------------------------------------------------------------------
    def query(self, tree: exp.Expr, client: ClientState, params: Sequence[Any] = (), *, describe_only: bool = False) -> Answer:
        """Run a catalog probe; the answer holds metadata only. `describe_only`: no rows (LIMIT 0)."""
        check_probe(tree)
        rewritten = rewrite(tree.copy(), client)
        if describe_only:
            if isinstance(rewritten, exp.Select):
                rewritten = rewritten.limit(0)
            elif isinstance(rewritten, exp.Query):
                rewritten = exp.select("*").from_(rewritten.subquery("__d")).limit(0)
        try:
            result = self._db.query(rewritten, list(params))
        except CatalogQueryError as err:
            log.warning("catalog probe not emulated (%s): %.500s", err.message, " ".join(tree.sql(dialect="postgres").split()))
            raise
        columns = tuple((name, pgtypes.oid_for_engine_type(type_)) for name, type_ in zip(result.names, result.types, strict=True))
        return Answer(columns, result.rows, f"SELECT {len(result.rows)}")

    def show(self, name: str, client: ClientState) -> Answer:
        """SHOW name | SHOW ALL."""
        if name.upper() == "ALL":
            rows = [(key, value, "") for key, value in sorted(client.settings.items())]
            return Answer((("name", pgtypes.TEXT), ("setting", pgtypes.TEXT), ("description", pgtypes.TEXT)), rows, "SHOW")
        key = " ".join(name.split()).lower()
        key = {"transaction isolation level": "transaction_isolation", "time zone": "TimeZone"}.get(key, key)
        value = client.setting(key)
        if value is None:
            raise CatalogQueryError(f'unrecognized configuration parameter "{name}"', code="DP400")
        return Answer(((key.lower() if key != "TimeZone" else "TimeZone", pgtypes.TEXT),), [(value,)], "SHOW")


def _parse(sql: str) -> exp.Expr | None:
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        trees = [t for t in sqlglot.parse(sql, read="postgres") if t is not None]
    except (ParseError, TokenError):
        # sqlglot cannot read `x::regtype[]` (pgcli's function probe): as OID arrays, which the
        # emulation has no rows for anyway. Applied only to text sqlglot could not parse.
        normalized = _REG_ARRAY.sub("::bigint[]", sql)
        if normalized == sql:
            return None
        return _parse(normalized)
    finally:
        logger.setLevel(level)
    return trees[0] if len(trees) == 1 else None


def _function_name(node: exp.Expr) -> str:
    match = re.match(r"[A-Za-z_]\w*", node.sql(dialect="postgres"))
    return match.group(0).lower() if match else ""


def _is_catalog_table(table: exp.Table) -> bool:
    schema, name = table.db.lower(), table.name.lower()
    if schema == "pg_catalog":
        return True
    if schema == "information_schema":
        return name in pgc.INFORMATION_SCHEMA
    return not schema and name in pgc.PG_TABLES


# --- rewriting a probe for the metadata database ------------------------------------------------
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In)
_REG_ARRAY = re.compile(r"::\s*(?:pg_catalog\.)?(?:regtype|regclass|regproc|regnamespace|regrole)\s*\[\]", re.IGNORECASE)
_RENAMED = {"json_build_object": "json_object", "jsonb_build_object": "json_object", "json_agg": "json_group_array"}
_OPERATORS = {"~": exp.RegexpLike, "~*": exp.RegexpILike, "=": exp.EQ, "<>": exp.NEQ, "~~": exp.Like, "~~*": exp.ILike}


def _type_name(data_type: exp.Expr) -> str:
    return data_type.sql(dialect="postgres").lower().replace("pg_catalog.", "").replace('"', "")


def _literal_name(node: exp.Expr, keep_schema: bool = False) -> exp.Expr:
    """A reg* literal 'schema."name"' -> 'name' ('schema.name' if keep_schema); a placeholder as text."""
    if isinstance(node, exp.Literal) and node.is_string:
        text = node.this.replace('"', "")
        text = text if keep_schema else text.split(".")[-1]
        return exp.Literal.number(int(text)) if text.isdigit() else exp.Literal.string(text)
    return exp.cast(node, exp.DataType.build("VARCHAR"))


def _array_elements(text: str) -> list[str | None] | None:
    """The elements of a one-dimensional PostgreSQL array literal ('{r,p,""}'), or None if it is not one."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    body, index = text[1:-1], 0
    elements: list[str | None] = []
    while index < len(body):
        if body[index] == '"':
            value: list[str] = []
            index += 1
            while index < len(body) and body[index] != '"':
                if body[index] == "\\" and index + 1 < len(body):
                    index += 1
                value.append(body[index])
                index += 1
            elements.append("".join(value))
            index += 1
        else:
            end = body.find(",", index)
            end = len(body) if end < 0 else end
            word = body[index:end].strip()
            if "{" in word or '"' in word:
                return None  # nested or malformed: left to the engine's refusal
            elements.append(None if word.upper() == "NULL" else word)
            index = end
        if index < len(body):
            if body[index] != ",":
                return None
            index += 1
    return elements


def _cast(node: exp.Cast) -> exp.Expr:
    target = _type_name(node.to)
    arg = node.this
    if isinstance(arg, exp.Literal) and arg.is_string and target.endswith("[]"):
        elements = _array_elements(arg.this)
        if elements is not None:  # '{r,p,""}'::varchar[] (pgcli's \dt): DuckDB casts only '[...]' text
            items = [exp.Null() if e is None else exp.Literal.string(e) for e in elements]
            arg = exp.Array(expressions=items)
            node = exp.Cast(this=arg, to=node.to)
    literal = isinstance(arg, (exp.Literal, exp.Placeholder, exp.Parameter))
    reg = {"regclass": "regclass", "regtype": "regtype", "regnamespace": "regnamespace"}
    if target in reg and not literal and isinstance(node.parent, _COMPARISONS):
        return exp.cast(arg, exp.DataType.build("BIGINT"))  # compared: the OID, as the other side will be
    if target in reg:
        kind = reg[target]
        if isinstance(arg, (exp.Concat, exp.DPipe)):  # text built in the query (format('%I.%I', ...)::regclass): a name
            return exp.func(f"__{kind}_oid", exp.func("replace", arg, exp.Literal.string('"'), exp.Literal.string("")))
        name = _literal_name(arg, keep_schema=kind == "regclass") if literal else arg
        return exp.func(f"__{kind}_oid" if literal else f"__{kind}_name", name)
    if target in ("regrole",):
        return exp.func("__regrole_name", arg)
    if target in ("regproc", "regprocedure"):
        return _literal_name(arg) if literal else arg
    simple = {"oid": "BIGINT", "regoper": "BIGINT", "xid": "BIGINT", "cid": "BIGINT", "name": "VARCHAR",
              "char": "VARCHAR", "bpchar": "VARCHAR", "int2vector": "SMALLINT[]", "oidvector": "BIGINT[]",
              "oid[]": "BIGINT[]", "name[]": "VARCHAR[]", "char[]": "VARCHAR[]", "regclass[]": "BIGINT[]",
              "information_schema.sql_identifier": "VARCHAR", "information_schema.character_data": "VARCHAR",
              "information_schema.cardinal_number": "INTEGER", "information_schema.yes_or_no": "VARCHAR",
              "pg_node_tree": "VARCHAR", "text[]": "VARCHAR[]", "anyarray": "VARCHAR[]"}  # fmt: skip
    if target in simple:
        return exp.cast(arg, exp.DataType.build(simple[target], dialect="duckdb"))
    return node


def _operator(node: exp.Operator) -> exp.Expr:
    op = str(node.args.get("operator", "")).replace("pg_catalog.", "").strip()
    negate = op.startswith("!")
    build = _OPERATORS.get(op.lstrip("!"))
    if build is None:
        return node
    result: exp.Expr = build(this=node.this, expression=node.expression)
    return exp.Not(this=result) if negate else result


def _any(node: exp.Expr) -> exp.Expr:
    """`x = ANY(array)` -> list_contains(array, x); `x <> ALL(array)` -> NOT list_contains(...)."""
    other = node.expression
    if isinstance(other, exp.Anonymous) and other.name.lower() in ("any", "all") and len(other.expressions) == 1:
        # `word <> ALL ('{a,b}'::text[])` (a space before the parenthesis): sqlglot reads a function call.
        other = (exp.Any if other.name.lower() == "any" else exp.All)(this=other.expressions[0])
    if not isinstance(other, (exp.Any, exp.All)) or isinstance(other.this, exp.Query):
        return node
    array = other.this.unnest() if isinstance(other.this, exp.Paren) else other.this
    if isinstance(array, exp.Literal) and array.is_string:  # ANY('{r,p,""}'): an array literal in text
        elements = _array_elements(array.this)
        if elements is not None:
            array = exp.Array(expressions=[exp.Null() if e is None else exp.Literal.string(e) for e in elements])
    if isinstance(node, exp.EQ) and isinstance(other, exp.Any):
        return exp.func("list_contains", array, node.this)
    if isinstance(node, exp.NEQ) and isinstance(other, exp.All):
        return exp.Not(this=exp.func("list_contains", array, node.this))
    return node


_CLOCKS = (exp.CurrentTimestamp, exp.CurrentDate, exp.CurrentTime, exp.Localtimestamp, exp.Localtime)


def _format(node: exp.Format) -> exp.Expr:
    """PostgreSQL's format('%I.%I', a, b) as a concatenation (DuckDB's format() is another language)."""
    parts = format_parts(node)
    if parts is None:
        return node  # refused by check_probe before any rewrite
    pieces: list[exp.Expr] = []
    for part in parts:
        if isinstance(part, str):
            pieces.append(exp.Literal.string(part))
            continue
        spec, argument = part
        text: exp.Expr = exp.cast(argument, exp.DataType.build("VARCHAR"))
        if spec == "s":
            text = exp.Coalesce(this=text, expressions=[exp.Literal.string("")])  # PostgreSQL: NULL is ''
        elif spec == "I":
            text = exp.Anonymous(this="quote_ident", expressions=[text])
        elif spec == "L":
            text = exp.Coalesce(this=exp.Anonymous(this="__quote_literal", expressions=[text]), expressions=[exp.Literal.string("NULL")])
        pieces.append(text)
    return exp.Concat(expressions=pieces or [exp.Literal.string("")])


def _clock(node: exp.Expr) -> exp.Expr:
    """now(), current_date, current_time, localtimestamp, localtime: the server's clock (DuckDB
    reads the bare keywords as column names once the output is named after them)."""
    now = exp.Anonymous(this="get_current_timestamp", expressions=[])
    types: dict[type[exp.Expr], str] = {exp.CurrentDate: "DATE", exp.CurrentTime: "TIMETZ", exp.Localtimestamp: "TIMESTAMP",
                                        exp.Localtime: "TIME"}
    target = types.get(type(node))
    return exp.cast(now, exp.DataType.build(target, dialect="duckdb")) if target else now


def _client_value(node: exp.Expr, client: ClientState) -> exp.Expr | None:
    name = node.name.lower() if isinstance(node, (exp.Anonymous, exp.Column)) else ""
    if isinstance(node, (exp.CurrentUser, exp.SessionUser)) or (isinstance(node, exp.Column) and not node.table and name in _USER_FUNCTIONS):
        return exp.Literal.string(client.user)
    if isinstance(node, (exp.CurrentCatalog, exp.CurrentDatabase)) or (isinstance(node, exp.Anonymous) and name in ("current_database", "current_catalog")):
        return exp.Literal.string(client.database)
    if isinstance(node, exp.Anonymous) and name == "pg_backend_pid":
        return exp.Literal.number(client.pid)
    if isinstance(node, exp.Anonymous) and name == "current_setting" and node.expressions:
        first = node.expressions[0]
        value = client.setting(first.this) if isinstance(first, exp.Literal) and first.is_string else None
        return exp.Literal.string(value) if value is not None else None
    return None


def _transform(node: exp.Expr, client: ClientState) -> exp.Expr:
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) and node.this.name.lower() in ("pg_catalog", "information_schema"):
        name: exp.Expr = node.expression
        return name
    if isinstance(node, _CLOCKS):
        return _clock(node)
    if isinstance(node, exp.Format):
        return _format(node)
    if isinstance(node, exp.Table):
        return _table(node, client)
    if isinstance(node, exp.Column) and node.args.get("db") is not None:
        schema = node.db.lower()
        if schema in ("pg_catalog", "information_schema"):
            node.set("db", exp.to_identifier(PG_SCHEMA if schema == "pg_catalog" else INFO_SCHEMA))
        return node
    if isinstance(node, exp.Collate):
        collated: exp.Expr = node.this
        return collated
    if isinstance(node, exp.Cast):
        return _cast(node)
    if isinstance(node, exp.Operator):
        return _operator(node)
    if isinstance(node, (exp.EQ, exp.NEQ)):
        return _any(node)
    if isinstance(node, exp.Anonymous) and node.name.lower() in _RENAMED:
        return exp.func(_RENAMED[node.name.lower()], *node.expressions)
    value = _client_value(node, client)
    return value if value is not None else node


def _table(node: exp.Table, client: ClientState) -> exp.Expr:
    if isinstance(node.this, exp.Anonymous) and node.this.name.lower() == "pg_get_keywords":
        return exp.table_("pg_get_keywords", db=PG_SCHEMA, alias=node.alias or None)  # the keyword list, as a table
    if node.name.lower() == "pg_database" and node.db.lower() in ("pg_catalog", "") and not isinstance(node.this, exp.Func):
        # One database, named as the client named it when it connected (DBeaver looks it up by that name).
        items = [exp.alias_(exp.Literal.string(client.database), name) if name == "datname" else exp.column(name)
                 for name, _ in pgc.columns_of(pgc.PG_TABLES["pg_database"])]
        return exp.select(*items).from_(exp.table_("pg_database", db=PG_SCHEMA)).subquery(node.alias or "pg_database")
    if isinstance(node.this, exp.StringToArray):
        # A scalar function in FROM is one row whose column has the alias's name (Grafana's `string_to_array(...) s`).
        alias = node.alias or "string_to_array"
        return exp.select(exp.alias_(node.this, alias, quoted=True)).subquery(alias)
    if isinstance(node.this, (exp.Func, exp.Anonymous)):
        node.set("db", None)
        table_alias = node.args.get("alias")
        if isinstance(table_alias, exp.TableAlias) and not table_alias.columns:
            table_alias.set("columns", [table_alias.this.copy()])  # PostgreSQL: `generate_series(...) s` names the column s too
        return node
    schema = node.db.lower()
    name = node.name.lower()
    if schema == "information_schema":
        return exp.table_(name, db=INFO_SCHEMA, alias=node.alias or None)
    if schema in ("pg_catalog", ""):
        if name not in pgc.PG_TABLES:
            raise CatalogQueryError(f'relation "pg_catalog.{name}" is not emulated by dpsql', code="DP400")
        return exp.table_(name, db=PG_SCHEMA, alias=node.alias or None)
    return node


def _output_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Cast):
        inner = _output_name(node.this)
        return inner if inner != "?column?" else _type_name(node.to)
    if isinstance(node, exp.Dot):
        return _output_name(node.expression)
    if isinstance(node, exp.Window):
        return _output_name(node.this)
    if isinstance(node, exp.Func):
        match = re.match(r"[A-Za-z_]\w*", node.sql(dialect="postgres"))
        return match.group(0).lower() if match else "?column?"
    return "?column?"


def rewrite(tree: exp.Expr, client: ClientState) -> exp.Expr:
    """A PostgreSQL catalog probe as a DuckDB query over the emulation's tables."""
    for select in list(tree.find_all(exp.Select)):
        # PostgreSQL's output names (`version`, `count`, not `version()`, `count(1)`), on the original tree.
        named: list[exp.Expr] = []
        for item in select.expressions:
            if isinstance(item, (exp.Alias, exp.Star)) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
                named.append(item)
            else:
                named.append(exp.alias_(item, _output_name(item), quoted=True))
        select.set("expressions", named)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    # Post-order, so a node's children are rewritten before the node itself.
    for node in reversed(list(tree.walk(bfs=False))):
        if isinstance(node, exp.Table) and not node.db and node.name.lower() in ctes:
            continue  # a WITH query's name, not a catalog table
        new = _transform(node, client)
        if new is not node:
            if node is tree:
                tree = new
            else:
                node.replace(new)
    return tree
