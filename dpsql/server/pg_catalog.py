"""The emulated PostgreSQL 15 catalog: table shapes and their rows, built from the policy alone.

Column lists follow PostgreSQL 15's so client probes bind; only the rows that describe the
policy's tables, columns and types are filled in (no indexes, constraints, functions or roles
besides the owner). Every value here is policy metadata: no data, no budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpsql.catalog.policy import Column, Policy, Table
from dpsql.server import pgtypes as t

PG_CATALOG_OID, PUBLIC_OID, INFO_SCHEMA_OID, OWNER_OID = 11, 2200, 13000, 10
FIRST_TABLE_OID = 16384
OWNER = "dpsql"
DATABASE_OID = 16383
TEXT_COLLATION = 100
_TYPES = {"B": "BIGINT", "I": "INTEGER", "S": "SMALLINT", "V": "VARCHAR", "O": "BOOLEAN", "D": "DOUBLE",
          "VA": "VARCHAR[]", "BA": "BIGINT[]", "SA": "SMALLINT[]", "T": "TIMESTAMP"}  # fmt: skip

# name -> "column:type ..." (types by the letters above), PostgreSQL 15 column order.
PG_TABLES: dict[str, str] = {
    "pg_namespace": "oid:B nspname:V nspowner:B nspacl:VA",
    "pg_class": "oid:B relname:V relnamespace:B reltype:B reloftype:B relowner:B relam:B relfilenode:B reltablespace:B "
    "relpages:I reltuples:D relallvisible:I reltoastrelid:B relhasindex:O relisshared:O relpersistence:V relkind:V "
    "relnatts:S relchecks:S relhasrules:O relhastriggers:O relhassubclass:O relrowsecurity:O relforcerowsecurity:O "
    "relispopulated:O relreplident:V relispartition:O relrewrite:B relfrozenxid:B relminmxid:B relacl:VA "
    "reloptions:VA relpartbound:V",
    "pg_attribute": "attrelid:B attname:V atttypid:B attstattarget:I attlen:S attnum:S attndims:I attcacheoff:I "
    "atttypmod:I attbyval:O attalign:V attstorage:V attcompression:V attnotnull:O atthasdef:O atthasmissing:O "
    "attidentity:V attgenerated:V attisdropped:O attislocal:O attinhcount:I attcollation:B attacl:VA "
    "attoptions:VA attfdwoptions:VA attmissingval:VA",
    "pg_type": "oid:B typname:V typnamespace:B typowner:B typlen:S typbyval:O typtype:V typcategory:V "
    "typispreferred:O typisdefined:O typdelim:V typrelid:B typsubscript:V typelem:B typarray:B typinput:V "
    "typoutput:V typreceive:V typsend:V typmodin:V typmodout:V typanalyze:V typalign:V typstorage:V typnotnull:O "
    "typbasetype:B typtypmod:I typndims:I typcollation:B typdefaultbin:V typdefault:V typacl:VA format_name:V",
    "pg_index": "indexrelid:B indrelid:B indnatts:S indnkeyatts:S indisunique:O indnullsnotdistinct:O "
    "indisprimary:O indisexclusion:O indimmediate:O indisclustered:O indisvalid:O indcheckxmin:O indisready:O "
    "indislive:O indisreplident:O indkey:SA indcollation:BA indclass:BA indoption:SA indexprs:V indpred:V",
    "pg_constraint": "oid:B conname:V connamespace:B contype:V condeferrable:O condeferred:O convalidated:O "
    "conrelid:B contypid:B conindid:B conparentid:B confrelid:B confupdtype:V confdeltype:V confmatchtype:V "
    "conislocal:O coninhcount:I connoinherit:O conkey:SA confkey:SA conpfeqop:BA conppeqop:BA conffeqop:BA "
    "confdelsetcols:SA conexclop:BA conbin:V",
    "pg_description": "objoid:B classoid:B objsubid:I description:V",
    "pg_shdescription": "objoid:B classoid:B description:V",
    "pg_attrdef": "oid:B adrelid:B adnum:S adbin:V",
    "pg_am": "oid:B amname:V amhandler:V amtype:V",
    "pg_roles": "rolname:V rolsuper:O rolinherit:O rolcreaterole:O rolcreatedb:O rolcanlogin:O rolreplication:O "
    "rolconnlimit:I rolpassword:V rolvaliduntil:T rolbypassrls:O rolconfig:VA oid:B",
    "pg_authid": "oid:B rolname:V rolsuper:O rolinherit:O rolcreaterole:O rolcreatedb:O rolcanlogin:O "
    "rolreplication:O rolbypassrls:O rolconnlimit:I rolpassword:V rolvaliduntil:T",
    "pg_user": "usename:V usesysid:B usecreatedb:O usesuper:O userepl:O usebypassrls:O passwd:V valuntil:T useconfig:VA",
    "pg_auth_members": "roleid:B member:B grantor:B admin_option:O",
    "pg_database": "oid:B datname:V datdba:B encoding:I datlocprovider:V datistemplate:O datallowconn:O "
    "datconnlimit:I datfrozenxid:B datminmxid:B dattablespace:B datcollate:V datctype:V daticulocale:V "
    "datcollversion:V datacl:VA",
    "pg_settings": "name:V setting:V unit:V category:V short_desc:V extra_desc:V context:V vartype:V source:V "
    "min_val:V max_val:V enumvals:VA boot_val:V reset_val:V sourcefile:V sourceline:I pending_restart:O",
    "pg_proc": "oid:B proname:V pronamespace:B proowner:B prolang:B procost:D prorows:D provariadic:B "
    "prosupport:V prokind:V prosecdef:O proleakproof:O proisstrict:O proretset:O provolatile:V proparallel:V "
    "pronargs:S pronargdefaults:S prorettype:B proargtypes:BA proallargtypes:BA proargmodes:VA proargnames:VA "
    "proargdefaults:V protrftypes:BA prosrc:V probin:V prosqlbody:V proconfig:VA proacl:VA",
    "pg_inherits": "inhrelid:B inhparent:B inhseqno:I inhdetachpending:O",
    "pg_collation": "oid:B collname:V collnamespace:B collowner:B collprovider:V collisdeterministic:O "
    "collencoding:I collcollate:V collctype:V colliculocale:V collversion:V",
    "pg_tablespace": "oid:B spcname:V spcowner:B spcacl:VA spcoptions:VA",
    "pg_policy": "oid:B polname:V polrelid:B polcmd:V polpermissive:O polroles:BA polqual:V polwithcheck:V",
    "pg_statistic_ext": "oid:B stxrelid:B stxname:V stxnamespace:B stxowner:B stxstattarget:I stxkeys:SA "
    "stxkind:VA stxexprs:V",
    "pg_publication": "oid:B pubname:V pubowner:B puballtables:O pubinsert:O pubupdate:O pubdelete:O "
    "pubtruncate:O pubviaroot:O",
    "pg_publication_rel": "oid:B prpubid:B prrelid:B prqual:V prattrs:SA",
    "pg_publication_namespace": "oid:B pnpubid:B pnnspid:B",
    "pg_trigger": "oid:B tgrelid:B tgparentid:B tgname:V tgfoid:B tgtype:S tgenabled:V tgisinternal:O "
    "tgconstrrelid:B tgconstrindid:B tgconstraint:B tgdeferrable:O tginitdeferred:O tgnargs:S tgattr:SA "
    "tgargs:V tgqual:V tgoldtable:V tgnewtable:V",
    "pg_rewrite": "oid:B rulename:V ev_class:B ev_type:V ev_enabled:V is_instead:O ev_qual:V ev_action:V",
    "pg_sequence": "seqrelid:B seqtypid:B seqstart:B seqincrement:B seqmax:B seqmin:B seqcache:B seqcycle:O",
    "pg_enum": "oid:B enumtypid:B enumsortorder:D enumlabel:V",
    "pg_range": "rngtypid:B rngsubtype:B rngmultitypid:B rngcollation:B rngsubopc:B rngcanonical:V rngsubdiff:V",
    "pg_extension": "oid:B extname:V extowner:B extnamespace:B extrelocatable:O extversion:V extconfig:BA "
    "extcondition:VA",
    "pg_foreign_table": "ftrelid:B ftserver:B ftoptions:VA",
    "pg_foreign_server": "oid:B srvname:V srvowner:B srvfdw:B srvtype:V srvversion:V srvacl:VA srvoptions:VA",
    "pg_foreign_data_wrapper": "oid:B fdwname:V fdwowner:B fdwhandler:B fdwvalidator:B fdwacl:VA fdwoptions:VA",
    "pg_partitioned_table": "partrelid:B partstrat:V partnatts:S partdefid:B partattrs:SA partclass:BA "
    "partcollation:BA partexprs:V",
    "pg_depend": "classid:B objid:B objsubid:I refclassid:B refobjid:B refobjsubid:I deptype:V",
    "pg_language": "oid:B lanname:V lanowner:B lanispl:O lanpltrusted:O lanplcallfoid:B laninline:B "
    "lanvalidator:B lanacl:VA",
    "pg_operator": "oid:B oprname:V oprnamespace:B oprowner:B oprkind:V oprcanmerge:O oprcanhash:O oprleft:B "
    "oprright:B oprresult:B oprcom:B oprnegate:B oprcode:V oprrest:V oprjoin:V",
    "pg_opclass": "oid:B opcmethod:B opcname:V opcnamespace:B opcowner:B opcfamily:B opcintype:B opcdefault:O "
    "opckeytype:B",
    "pg_cast": "oid:B castsource:B casttarget:B castfunc:B castcontext:V castmethod:V",
    "pg_conversion": "oid:B conname:V connamespace:B conowner:B conforencoding:I contoencoding:I conproc:V condefault:O",
    "pg_event_trigger": "oid:B evtname:V evtevent:V evtowner:B evtfoid:B evtenabled:V evttags:VA",
    "pg_matviews": "schemaname:V matviewname:V matviewowner:V tablespace:V hasindexes:O ispopulated:O definition:V",
    "pg_views": "schemaname:V viewname:V viewowner:V definition:V",
    "pg_tables": "schemaname:V tablename:V tableowner:V tablespace:V hasindexes:O hasrules:O hastriggers:O rowsecurity:O",
    "pg_indexes": "schemaname:V tablename:V indexname:V tablespace:V indexdef:V",
    "pg_stat_activity": "datid:B datname:V pid:I usesysid:B usename:V application_name:V client_addr:V "
    "backend_start:T xact_start:T query_start:T state_change:T wait_event_type:V wait_event:V state:V "
    "backend_xid:B backend_xmin:B query:V backend_type:V",
    "pg_locks": "locktype:V database:B relation:B pid:I mode:V granted:O",
    "pg_get_keywords": "word:V catcode:V barelabel:O catdesc:V baredesc:V",
    "pg_prepared_statements": "name:V statement:V prepare_time:T parameter_types:VA from_sql:O",
    "pg_timezone_names": "name:V abbrev:V utc_offset:V is_dst:O",
    # Statistics views: the tables are listed, their counts are NULL (a row count is data).
    "pg_stat_user_tables": "relid:B schemaname:V relname:V seq_scan:B n_live_tup:B n_dead_tup:B last_analyze:T",
    "pg_stat_all_tables": "relid:B schemaname:V relname:V seq_scan:B n_live_tup:B n_dead_tup:B last_analyze:T",
}

INFORMATION_SCHEMA: dict[str, str] = {
    "tables": "table_catalog:V table_schema:V table_name:V table_type:V self_referencing_column_name:V "
    "reference_generation:V user_defined_type_catalog:V user_defined_type_schema:V user_defined_type_name:V "
    "is_insertable_into:V is_typed:V commit_action:V",
    "columns": "table_catalog:V table_schema:V table_name:V column_name:V ordinal_position:I column_default:V "
    "is_nullable:V data_type:V character_maximum_length:I character_octet_length:I numeric_precision:I "
    "numeric_precision_radix:I numeric_scale:I datetime_precision:I interval_type:V interval_precision:I "
    "character_set_catalog:V character_set_schema:V character_set_name:V collation_catalog:V "
    "collation_schema:V collation_name:V domain_catalog:V domain_schema:V domain_name:V udt_catalog:V "
    "udt_schema:V udt_name:V scope_catalog:V scope_schema:V scope_name:V maximum_cardinality:I dtd_identifier:V "
    "is_self_referencing:V is_identity:V identity_generation:V identity_start:V identity_increment:V "
    "identity_maximum:V identity_minimum:V identity_cycle:V is_generated:V generation_expression:V is_updatable:V",
    "schemata": "catalog_name:V schema_name:V schema_owner:V default_character_set_catalog:V "
    "default_character_set_schema:V default_character_set_name:V sql_path:V",
    "views": "table_catalog:V table_schema:V table_name:V view_definition:V check_option:V is_updatable:V "
    "is_insertable_into:V is_trigger_updatable:V is_trigger_deletable:V is_trigger_insertable_into:V",
    "table_constraints": "constraint_catalog:V constraint_schema:V constraint_name:V table_catalog:V "
    "table_schema:V table_name:V constraint_type:V is_deferrable:V initially_deferred:V enforced:V nulls_distinct:V",
    "key_column_usage": "constraint_catalog:V constraint_schema:V constraint_name:V table_catalog:V "
    "table_schema:V table_name:V column_name:V ordinal_position:I position_in_unique_constraint:I",
    "referential_constraints": "constraint_catalog:V constraint_schema:V constraint_name:V "
    "unique_constraint_catalog:V unique_constraint_schema:V unique_constraint_name:V match_option:V "
    "update_rule:V delete_rule:V",
    "constraint_column_usage": "table_catalog:V table_schema:V table_name:V column_name:V constraint_catalog:V "
    "constraint_schema:V constraint_name:V",
    "check_constraints": "constraint_catalog:V constraint_schema:V constraint_name:V check_clause:V",
    "routines": "specific_catalog:V specific_schema:V specific_name:V routine_catalog:V routine_schema:V "
    "routine_name:V routine_type:V data_type:V",
    "parameters": "specific_catalog:V specific_schema:V specific_name:V ordinal_position:I parameter_mode:V "
    "parameter_name:V data_type:V",
    "sequences": "sequence_catalog:V sequence_schema:V sequence_name:V data_type:V",
    "role_table_grants": "grantor:V grantee:V table_catalog:V table_schema:V table_name:V privilege_type:V "
    "is_grantable:V with_hierarchy:V",
    "table_privileges": "grantor:V grantee:V table_catalog:V table_schema:V table_name:V privilege_type:V "
    "is_grantable:V with_hierarchy:V",
    "character_sets": "character_set_catalog:V character_set_schema:V character_set_name:V "
    "character_repertoire:V form_of_use:V default_collate_catalog:V default_collate_schema:V default_collate_name:V",
}


def columns_of(spec: str) -> list[tuple[str, str]]:
    """(name, DuckDB type) pairs of a table spec."""
    return [(name, _TYPES[kind]) for name, kind in (item.split(":") for item in spec.split())]


_FORMAT = {"bool": "boolean", "int8": "bigint", "int4": "integer", "int2": "smallint", "float4": "real",
           "float8": "double precision", "varchar": "character varying", "bpchar": "character",
           "timestamp": "timestamp without time zone", "timestamptz": "timestamp with time zone",
           "time": "time without time zone", "char": '"char"'}  # fmt: skip
_CATEGORY = {t.BOOL: "B", t.INT2: "N", t.INT4: "N", t.INT8: "N", t.FLOAT4: "N", t.FLOAT8: "N", t.NUMERIC: "N",
             t.OID: "N", t.REGPROC: "N", t.REGCLASS: "N", t.REGTYPE: "N", t.TEXT: "S", t.VARCHAR: "S",
             t.BPCHAR: "S", t.NAME: "S", t.CHAR: "Z", t.DATE: "D", t.TIME: "D", t.TIMESTAMP: "D",
             t.TIMESTAMPTZ: "D", t.INTERVAL: "T", t.UNKNOWN: "X"}  # fmt: skip
_TEXTUAL = frozenset({t.TEXT, t.VARCHAR, t.BPCHAR, t.NAME})


def format_type(oid: int) -> str:
    """PostgreSQL's format_type(oid, NULL) for the types listed here."""
    if oid in t.ELEMENT_OF:
        return format_type(t.ELEMENT_OF[oid]) + "[]"
    name = t.type_name(oid)
    return _FORMAT.get(name, name)


def _type_row(oid: int) -> tuple[Any, ...]:
    element = t.ELEMENT_OF.get(oid, 0)
    name = t.type_name(oid)
    size = -1 if element else t.type_size(oid)
    byval = size in (1, 2, 4, 8)
    io = "array" if element else name
    collation = TEXT_COLLATION if oid in _TEXTUAL else 0
    return (
        oid, name, PG_CATALOG_OID, OWNER_OID, size, byval, "p" if oid == t.UNKNOWN else "b",
        "A" if element else _CATEGORY.get(oid, "U"), oid in (t.TEXT, t.FLOAT8, t.BOOL), True, ",", 0,
        "array_subscript_handler" if element else "-", element, t.ARRAY_OF.get(oid, 0), f"{io}_in", f"{io}_out",
        f"{io}_recv", f"{io}_send", "-", "-", "-", "d" if size in (-1, 8) else "i", "x" if size == -1 else "p",
        False, 0, -1, 0, collation, None, None, None, format_type(oid),
    )  # fmt: skip


def type_rows() -> list[tuple[Any, ...]]:
    """pg_type rows of the base types and their arrays."""
    return [_type_row(oid) for oid in [*t.TYPES, *t.ARRAY_OF.values()]]


@dataclass(frozen=True, slots=True)
class TableEntry:
    """One policy table as the catalog shows it."""

    oid: int
    table: Table
    view: str | None = None  # a view of the policy (listed as a table): its description, or ""


def table_entries(policy: Policy, views: Mapping[str, Table] | None = None) -> list[TableEntry]:
    """The policy's tables with their OIDs, in name order (stable across restarts), then its views
    (as `views` describes them: dpsql.execution.probe.view_tables), listed as tables too."""
    entries = [TableEntry(FIRST_TABLE_OID + i, policy.tables[name]) for i, name in enumerate(sorted(policy.tables))]
    for name in sorted(views or {}):
        declared = policy.view(name)
        entries.append(TableEntry(FIRST_TABLE_OID + len(entries), (views or {})[name],
                                  (declared.description or "") if declared is not None else ""))
    return entries


def _class_row(entry: TableEntry) -> tuple[Any, ...]:
    table = entry.table
    return (
        entry.oid, table.name, PUBLIC_OID, 0, 0, OWNER_OID, 2, entry.oid, 0, 0, -1.0, 0, 0, False, False, "p", "r",
        len(table.columns), 0, False, False, False, False, False, True, "d", False, 0, 0, 0, None, None, None,
    )  # fmt: skip


SYSTEM_CLASSES = {"pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_class": 1259, "pg_database": 1262,
                  "pg_namespace": 2615, "pg_constraint": 2606, "pg_index": 2610, "pg_description": 2609,
                  "pg_trigger": 2620, "pg_rewrite": 2618, "pg_am": 2601, "pg_collation": 3456}  # fmt: skip


def _system_class_row(name: str, oid: int) -> tuple[Any, ...]:
    return (
        oid, name, PG_CATALOG_OID, 0, 0, OWNER_OID, 2, 0, 0, 0, -1.0, 0, 0, False, False, "p", "r",
        len(columns_of(PG_TABLES[name])), 0, False, False, False, False, False, True, "n", False, 0, 0, 0, None, None, None,
    )  # fmt: skip


def column_oid(column: Column) -> int:
    """The OID a policy column has in the catalog and in results."""
    return t.POLICY_TYPES[column.type]


def _attribute_rows(entry: TableEntry) -> list[tuple[Any, ...]]:
    rows = []
    for number, column in enumerate(entry.table.columns.values(), start=1):
        oid = column_oid(column)
        size = t.type_size(oid)
        rows.append((
            entry.oid, column.name, oid, -1, size, number, 0, -1, -1, size in (1, 2, 4, 8), "d" if size == 8 else "i",
            "x" if size == -1 else "p", "", False, False, False, "", "", False, True, 0,
            TEXT_COLLATION if oid == t.TEXT else 0, None, None, None, None,
        ))  # fmt: skip
    return rows


def table_comment(table: Table) -> str:
    """What the policy says about a table (pg_description, information_schema)."""
    if table.public:
        return "dpsql public table: exact answers, no privacy cost"
    return (
        f"dpsql private table: aggregate queries only, answered with noise; privacy unit {table.privacy_unit}, "
        f"at most {table.max_rows} row(s) and {table.max_groups} group(s) per unit"
    )


def column_comment(table: Table, column: Column) -> str:
    """What the policy says about a column."""
    parts: list[str] = [column.type]
    if column.name == table.privacy_unit:
        parts.append("privacy unit: never summed or grouped by")
    if column.bounded:
        parts.append(f"bounds {column.bounds_text(lambda v: f'{float(v):g}')}")
    if column.values is not None:
        parts.append(f"public domain of {len(column.values)} value(s)")
    elif column.type == "text" and not table.public:
        parts.append("group keys chosen by partition selection")
    return "; ".join(parts)


def _entry_comment(entry: TableEntry) -> str:
    if entry.view is None:
        return table_comment(entry.table)
    about = f"{entry.view}; " if entry.view else ""
    return (f"dpsql view defined in the policy: {about}a row-level selection of private data, aggregate queries only, "
            "answered with noise and charged like its table")


def _description_rows(entries: list[TableEntry]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for entry in entries:
        rows.append((entry.oid, 1259, 0, _entry_comment(entry)))
        for number, column in enumerate(entry.table.columns.values(), start=1):
            rows.append((entry.oid, 1259, number, column_comment(entry.table, column)))
    return rows


def _info_columns_row(database: str, table: Table, number: int, column: Column) -> tuple[Any, ...]:
    oid = column_oid(column)
    numeric = {t.INT8: (64, 2, 0), t.FLOAT8: (53, 2, None)}.get(oid, (None, None, None))
    row: list[Any] = [database, "public", table.name, column.name, number, None, "YES", format_type(oid), None,
                      1073741824 if oid == t.TEXT else None, *numeric, 0 if oid == t.DATE else None]  # fmt: skip
    row += [None] * 11 + [database, "pg_catalog", t.type_name(oid)] + [None] * 4 + [str(number), "NO", "NO"]
    row += [None] * 6 + ["NEVER", None, "NO"]
    return tuple(row)


def catalog_rows(policy: Policy, database: str = "dpsql", views: Mapping[str, Table] | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """Rows of every emulated pg_catalog table (keys of PG_TABLES), from the policy alone."""
    entries = table_entries(policy, views)
    settings = [(name, value, None, "dpsql", "", None, "user", "string", "default", None, None, None, value, value,
                 None, None, False) for name, value in DEFAULT_SETTINGS.items()]  # fmt: skip
    rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in PG_TABLES}
    rows.update({
        "pg_namespace": [(PG_CATALOG_OID, "pg_catalog", OWNER_OID, None), (PUBLIC_OID, "public", OWNER_OID, None),
                         (INFO_SCHEMA_OID, "information_schema", OWNER_OID, None)],
        "pg_class": [_class_row(e) for e in entries] + [_system_class_row(n, o) for n, o in SYSTEM_CLASSES.items()],
        "pg_attribute": [row for e in entries for row in _attribute_rows(e)],
        "pg_type": type_rows(),
        "pg_description": _description_rows(entries),
        "pg_am": [(2, "heap", "heap_tableam_handler", "t"), (403, "btree", "bthandler", "i")],
        "pg_roles": [(OWNER, False, True, False, False, True, False, -1, "********", None, False, None, OWNER_OID)],
        "pg_authid": [(OWNER_OID, OWNER, False, True, False, False, True, False, False, -1, None, None)],
        "pg_user": [(OWNER, OWNER_OID, False, False, False, False, "********", None, None)],
        "pg_database": [(DATABASE_OID, database, OWNER_OID, 6, "c", False, True, -1, 0, 0, 1663, "C", "C", None, None, None)],
        "pg_settings": settings,
        "pg_tablespace": [(1663, "pg_default", OWNER_OID, None, None)],
        "pg_collation": [(TEXT_COLLATION, "default", PG_CATALOG_OID, OWNER_OID, "d", True, -1, None, None, None, None)],
        "pg_tables": [("public", e.table.name, OWNER, None, False, False, False, False) for e in entries],
        "pg_stat_user_tables": [(e.oid, "public", e.table.name, None, None, None, None) for e in entries],
        "pg_stat_all_tables": [(e.oid, "public", e.table.name, None, None, None, None) for e in entries],
        "pg_get_keywords": [(word, code, True, desc, "can be bare label") for word, code, desc in KEYWORDS],
        "pg_language": [(12, "internal", OWNER_OID, False, False, 0, 0, 0, None), (14, "sql", OWNER_OID, False, True, 0, 0, 0, None)],
    })  # fmt: skip
    return rows


def information_schema_rows(policy: Policy, database: str = "dpsql", views: Mapping[str, Table] | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """Rows of the emulated information_schema views (keys of INFORMATION_SCHEMA)."""
    entries = table_entries(policy, views)
    rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in INFORMATION_SCHEMA}
    rows["tables"] = [(database, "public", e.table.name, "BASE TABLE", None, None, None, None, None, "NO", "NO", None)
                      for e in entries]  # fmt: skip
    rows["columns"] = [_info_columns_row(database, e.table, n, c) for e in entries
                       for n, c in enumerate(e.table.columns.values(), start=1)]  # fmt: skip
    rows["schemata"] = [(database, s, OWNER, None, None, None, None) for s in ("information_schema", "pg_catalog", "public")]
    grants = [(OWNER, "PUBLIC", database, "public", e.table.name, "SELECT", "NO", "YES") for e in entries]
    rows["role_table_grants"] = grants
    rows["table_privileges"] = list(grants)
    rows["character_sets"] = [(None, None, "UTF8", "UCS", "UTF8", database, "pg_catalog", "C")]
    return rows


# A few of PostgreSQL's keywords (pg_get_keywords()): what SQL editors add to their highlighting.
KEYWORDS = tuple((w, "R", "reserved") for w in ("analyse", "analyze", "limit", "offset", "returning", "verbose")) + tuple(
    (w, "T", "reserved (can be function or type name)") for w in ("ilike", "similar")) + tuple(
    (w, "U", "unreserved") for w in ("explain", "differential_privacy", "options"))

SERVER_VERSION = "15.0"
DEFAULT_SETTINGS: dict[str, str] = {
    "server_version": SERVER_VERSION,
    "server_version_num": "150000",
    "server_encoding": "UTF8",
    "client_encoding": "UTF8",
    "DateStyle": "ISO, MDY",
    "IntervalStyle": "postgres",
    "TimeZone": "UTC",
    "integer_datetimes": "on",
    "standard_conforming_strings": "on",
    "is_superuser": "off",
    "application_name": "",
    "search_path": '"$user", public',
    "default_transaction_isolation": "read committed",
    "transaction_isolation": "read committed",
    "default_transaction_read_only": "on",
    "transaction_read_only": "on",
    "max_identifier_length": "63",
    "extra_float_digits": "1",
    "lc_collate": "C",
    "lc_ctype": "C",
    "lc_messages": "C",
    "lc_monetary": "C",
    "lc_numeric": "C",
    "lc_time": "C",
    "statement_timeout": "0",
    "bytea_output": "hex",
    "in_hot_standby": "off",
    "default_table_access_method": "heap",
    "max_index_keys": "32",
    "block_size": "8192",
    "ssl": "off",
}
# Sent as ParameterStatus after authentication (the ones libpq and drivers track).
REPORTED_SETTINGS = (
    "server_version", "server_encoding", "client_encoding", "DateStyle", "IntervalStyle", "TimeZone",
    "integer_datetimes", "standard_conforming_strings", "is_superuser", "application_name", "default_transaction_read_only",
    "in_hot_standby", "session_authorization",
)  # fmt: skip
