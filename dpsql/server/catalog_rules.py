"""What a catalog probe may compute: the static bounds checked before it runs in the metadata database.

Catalog probes are answered for free (no budget) in one DuckDB shared by every connection, so a
probe must not be a way to make the server compute or allocate without limit. Before it runs:
no recursive CTE; only functions on an allowlist of what BI clients' catalog probes use (so
`repeat`, `lpad`, `rpad`, `replace`, `format`, `range` ... are refused, and a function nobody
thought about is refused rather than trusted); series generators only over constant bounds of at
most MAX_SERIES values or over an array's size. What a static check cannot bound (joins of
catalog tables) the metadata database bounds at run time: time, memory and rows (catalog_db.py).
"""

from __future__ import annotations

from sqlglot import exp

from dpsql.errors import NotSupportedError

MAX_SERIES = 10_000  # values of one generate_series with constant bounds

# sqlglot's typed nodes for the functions (and function-like operators) probes use.
_CLASS_NAMES = (
    # logic, comparison and conversion
    "And", "Or", "Not", "Xor", "Case", "If", "Cast", "TryCast", "Collate", "Coalesce", "Nullif", "Greatest", "Least",
    "Exists", "RegexpLike", "RegexpILike", "RegexpFullMatch", "ArrayContains", "ArrayContainsAll", "ArrayContainedBy",
    "ArrayOverlaps",
    # the session's identity and the server's version
    "CurrentDatabase", "CurrentCatalog", "CurrentSchema", "CurrentSchemas", "CurrentUser", "SessionUser",
    "CurrentRole", "CurrentVersion", "CurrentTimestamp", "CurrentDate", "CurrentTime",
    # text no longer than its inputs (or a fixed multiple of them)
    "Lower", "Upper", "Initcap", "Length", "Substring", "Trim", "Left", "Right", "StrPosition", "SplitPart",
    "RegexpSplit", "Concat", "ConcatWs", "StringToArray", "StartsWith", "Reverse", "Ascii", "Chr", "MD5", "Encode",
    "TimeToStr",
    # arrays and sets no larger than their inputs
    "Array", "ArrayAgg", "ArraySize", "ArrayToString", "ArrayJoin", "ArrayPosition", "ArrayRemove", "ArrayAppend",
    "ArrayConcat", "Unnest", "Explode",
    # aggregates and windows over catalog rows
    "Count", "Min", "Max", "Sum", "Avg", "LogicalAnd", "LogicalOr", "GroupConcat", "RowNumber", "Rank", "DenseRank",
    "FirstValue", "LastValue", "Lag", "Lead", "JSONObject", "JSONArrayAgg",
    # numbers and times
    "Abs", "Sign", "Round", "Floor", "Ceil", "Extract", "Localtimestamp", "Localtime",
)  # fmt: skip
ALLOWED_CLASSES: frozenset[type] = frozenset(c for c in (getattr(exp, n, None) for n in _CLASS_NAMES) if c is not None)

# Functions sqlglot leaves anonymous: the emulation's macros (catalog_emulation._macros), DuckDB's
# own pg_catalog compatibility functions that probes call, and a few array helpers.
ALLOWED_NAMES = frozenset({
    "format_type", "version", "current_setting", "obj_description", "col_description", "shobj_description",
    "array_upper", "array_lower", "array_length", "cardinality", "array_to_string", "generate_subscripts",
    "quote_ident", "to_regtype", "to_regclass", "to_regnamespace", "to_regproc", "to_regprocedure", "set_config",
    "pg_get_userbyid", "pg_table_is_visible", "pg_type_is_visible", "pg_function_is_visible",
    "pg_collation_is_visible", "pg_is_in_recovery", "txid_current", "pg_backend_pid", "inet_server_addr",
    "inet_server_port", "inet_client_addr", "inet_client_port", "pg_get_partkeydef", "pg_get_statisticsobjdef_columns",
    "pg_relation_is_publishable", "pg_get_function_result", "pg_get_function_arguments",
    "pg_get_function_identity_arguments", "pg_total_relation_size", "pg_table_size", "pg_indexes_size",
    "pg_relation_size", "pg_stat_get_numscans", "pg_my_temp_schema", "pg_is_other_temp_schema", "pg_tablespace_location", "pg_get_keywords",
    "pg_get_expr", "pg_get_indexdef", "pg_get_constraintdef", "pg_get_viewdef", "pg_get_triggerdef", "pg_get_ruledef",
    "pg_get_serial_sequence", "pg_postmaster_start_time", "pg_encoding_to_char", "pg_size_pretty", "has_table_privilege",
    "has_schema_privilege", "has_database_privilege", "has_column_privilege", "has_any_column_privilege",
    "has_function_privilege", "has_sequence_privilege", "pg_has_role", "has_type_privilege", "has_language_privilege",
    "json_build_object", "jsonb_build_object", "json_agg", "current_schemas", "current_database", "current_catalog",
    "current_user", "session_user", "current_role", "regexp_split_to_table", "array_agg", "string_agg",
    "bool_and", "bool_or", "every", "row_number", "lower", "upper", "length", "char_length", "octet_length", "coalesce",
    "nullif", "jsonb_agg", "row_to_json", "quote_literal", "regexp_match", "regexp_matches",
    "_pg_expandarray", "parse_ident", "now", "transaction_timestamp", "statement_timestamp", "clock_timestamp", "timeofday",
    "any", "all",  # `x <> ALL ('{...}'::text[])` read as a call: a comparison with an array's elements
    "generate_series",  # checked below: constant bounds or an array's size
})  # fmt: skip
_SERIES = frozenset({"generate_series"})
_ARRAY_SIZES = frozenset({"array_upper", "array_lower", "array_length", "cardinality"})


def refuse(message: str, hint: str) -> NotSupportedError:
    """The catalog route's refusal (DP402); its text names the construct, never data (there is none)."""
    return NotSupportedError(message, code="DP402", hint=hint)


def check_probe(tree: exp.Expr) -> None:
    """Raise DP402 unless the probe's work is statically bounded (see the module doc)."""
    for with_ in tree.find_all(exp.With):
        if with_.args.get("recursive"):
            raise refuse("recursive WITH is not available in catalog queries",
                         "catalog queries answer what the policy declares; no client probe needs recursion")
    for node in tree.find_all(exp.Func):
        name = _name(node)
        if isinstance(node, (exp.GenerateSeries, exp.ExplodingGenerateSeries)) or name in _SERIES:
            _check_series(node)
        elif isinstance(node, exp.Replace):
            _check_replace(node)
        elif isinstance(node, exp.Format):
            if format_parts(node) is None:
                raise refuse("format() in a catalog query takes a constant format of %s, %I, %L and %%",
                             "catalog queries are bounded statically; use a constant format string")
        elif isinstance(node, exp.Anonymous):
            if name not in ALLOWED_NAMES:
                raise _unavailable(name)
        elif type(node) not in ALLOWED_CLASSES:
            raise _unavailable(name)


def _check_replace(node: exp.Replace) -> None:
    """replace(text, 'from', 'to') with constant, non-empty `from` and a `to` at most twice as long
    (JDBC's getSchemas: replace(..., 'pg_temp_', 'pg_toast_temp_')): at most twice its input."""
    old, new = node.args.get("expression"), node.args.get("replacement")
    constant = all(isinstance(a, exp.Literal) and a.is_string for a in (old, new))
    if not constant or not old.this or len(new.this) > 2 * len(old.this):  # type: ignore[union-attr]
        raise refuse("replace() in a catalog query takes a constant, non-empty text to replace and a constant "
                     "replacement at most twice as long", "catalog queries are bounded statically; use constant arguments")


def format_parts(node: exp.Format) -> list[str | tuple[str, exp.Expr]] | None:
    """format('%I.%I', a, b) as text pieces and (specifier, argument) pairs; None unless the format
    is a constant with only %s, %I, %L and %% (no widths, no positions), one argument each."""
    pattern = node.this
    if not isinstance(pattern, exp.Literal) or not pattern.is_string:
        return None
    arguments = list(node.expressions)
    parts: list[str | tuple[str, exp.Expr]] = []
    text, index = pattern.this, 0
    while index < len(text):
        char = text[index]
        if char != "%":
            parts.append(char)
            index += 1
            continue
        spec = text[index + 1 : index + 2]
        if spec == "%":
            parts.append("%")
        elif spec in ("s", "I", "L") and arguments:
            parts.append((spec, arguments.pop(0)))
        else:
            return None
        index += 2
    return parts if not arguments else None


def _name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    return node.sql_name().lower()


def _unavailable(name: str) -> NotSupportedError:
    return refuse(f"function {name}() is not available in catalog queries",
                  "catalog queries may call the functions BI clients' catalog probes use (the list is in docs/deployment.md, 'Catalog probes')")


def _check_series(node: exp.Func) -> None:
    """generate_series(a, b[, step]): constant bounds at most MAX_SERIES apart, or an array's size."""
    if isinstance(node, exp.Anonymous):
        bounds = list(node.expressions)
    else:
        bounds = [node.args.get("start"), node.args.get("end")]
        if node.args.get("step") is not None:
            bounds.append(node.args["step"])
    constants = [_integer(b) for b in bounds[:2]]
    if len(bounds) >= 2 and all(c is not None for c in constants):
        start, end = constants
        assert start is not None and end is not None
        if abs(end - start) <= MAX_SERIES and (len(bounds) < 3 or _integer(bounds[2]) not in (None, 0)):
            return
    elif len(bounds) == 2 and (constants[0] is not None or _array_size(bounds[0])) and _array_size(bounds[1]):
        return  # an array's bounds (Grafana: array_lower(a, 1) .. array_upper(a, 1)): no larger than the array
    raise refuse(f"generate_series in a catalog query needs constant bounds at most {MAX_SERIES} apart, or an array's size",
                 "catalog queries are bounded statically; generate fewer values")


def _unwrap(node: exp.Expr | None) -> exp.Expr | None:
    """Without casts, parentheses and a `pg_catalog.` qualifier."""
    while True:
        if isinstance(node, (exp.Cast, exp.Paren)):
            node = node.this
        elif isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) and node.this.name.lower() == "pg_catalog":
            node = node.expression
        else:
            return node


def _integer(node: exp.Expr | None) -> int | None:
    node = _unwrap(node)
    negative = isinstance(node, exp.Neg)
    if negative:
        node = _unwrap(node.this)  # type: ignore[union-attr]
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit() and len(node.this) <= 12:
        return -int(node.this) if negative else int(node.this)
    return None


def _array_size(node: exp.Expr | None) -> bool:
    node = _unwrap(node)
    if isinstance(node, exp.ArraySize):
        return True
    return isinstance(node, exp.Anonymous) and node.name.lower() in _ARRAY_SIZES


_CATALOG_CLASSES = tuple(
    c for c in (getattr(exp, n, None) for n in ("CurrentDatabase", "CurrentCatalog", "CurrentSchema", "CurrentSchemas",
                                                "CurrentUser", "SessionUser", "CurrentRole", "CurrentVersion",
                                                "CurrentTimestamp", "CurrentDate", "CurrentTime", "Localtimestamp", "Localtime"))
    if c is not None
)  # fmt: skip
_CATALOG_PREFIXES = ("pg_", "has_", "to_reg", "current_")
_CATALOG_NAMES = frozenset({"version", "format_type", "obj_description", "col_description", "_pg_expandarray", "now",
                            "transaction_timestamp", "statement_timestamp", "clock_timestamp", "timeofday"})


def calls_catalog_function(tree: exp.Expr) -> bool:
    """Whether a probe asks the emulated catalog through a function (version(), current_schemas(), pg_*...)."""
    for node in tree.find_all(exp.Func):
        if isinstance(node, _CATALOG_CLASSES):
            return True
        if isinstance(node, exp.Anonymous):
            name = node.name.lower()
            if name in _CATALOG_NAMES or name.startswith(_CATALOG_PREFIXES):
                return True
    return False
