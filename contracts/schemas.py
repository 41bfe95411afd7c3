"""Schema hygiene at sync: every declared schema (a tool's ``parameters`` and ``return_schema``) is a JSON Schema
that an LLM API can read. Forms that say the same in today's drafts are rewritten (types in lower case; draft-04's
boolean ``exclusiveMinimum``/``exclusiveMaximum`` beside ``minimum``/``maximum``), and a schema that is still not
valid against its draft's metaschema (``jsonschema``) is refused with the path of its fault."""

from collections.abc import Callable
from typing import Any, Final

from jsonschema.exceptions import SchemaError
from jsonschema.validators import Draft202012Validator, validator_for

OLD_DRAFTS: Final = ("http://json-schema.org/draft-04/schema", "http://json-schema.org/draft-03/schema")
"""Drafts whose bounds are booleans: a schema rewritten to numbers no longer declares them."""
SUBSCHEMA_MAPS: Final = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SUBSCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
SUBSCHEMAS: Final = (
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
)


def _walk(schema: Any, rewrite: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """``rewrite`` applied to the schema and every subschema in it (data such as ``enum`` or ``default`` is left
    as it is)."""
    if not isinstance(schema, dict):
        return schema
    out = rewrite(dict(schema))
    for key in SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _walk(sub, rewrite) for name, sub in out[key].items()}
    for key in SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_walk(sub, rewrite) for sub in out[key]]
    for key in SUBSCHEMAS:
        if key in out:
            value = out[key]
            out[key] = [_walk(sub, rewrite) for sub in value] if isinstance(value, list) else _walk(value, rewrite)
    return out


def _modern(schema: dict[str, Any]) -> dict[str, Any]:
    """One schema's own keywords in today's forms."""
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = kind.lower()
    elif isinstance(kind, list):
        schema["type"] = [k.lower() if isinstance(k, str) else k for k in kind]
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(exclusive)
        if isinstance(flag, bool):
            del schema[exclusive]
            if flag and bound in schema:
                schema[exclusive] = schema.pop(bound)
    return schema


def checked_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema in today's forms, valid against its draft's metaschema (2020-12 unless it names another); a
    ``ValueError`` naming the path of the fault otherwise."""
    modern: dict[str, Any] = _walk(schema, _modern)
    if modern != schema and str(modern.get("$schema", "")).rstrip("#") in OLD_DRAFTS:
        del modern["$schema"]
    try:
        validator_for(modern, default=Draft202012Validator).check_schema(modern)
    except SchemaError as error:
        where = "/".join(str(part) for part in error.absolute_path)
        raise ValueError(f"not a valid JSON Schema at {where or 'its root'}: {error.message[:300]}") from None
    return modern
