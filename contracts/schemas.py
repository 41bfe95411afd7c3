"""Schema hygiene at sync: every declared schema (a tool's ``parameters`` and ``return_schema``) is a JSON Schema
that an LLM API can read. Forms that say the same in today's drafts are rewritten (types in lower case; draft-04's
boolean ``exclusiveMinimum``/``exclusiveMaximum`` beside ``minimum``/``maximum``), and a schema that is still not
valid against its draft's metaschema (``jsonschema``) is refused with the path of its fault."""

import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Final

from jsonschema import FormatChecker
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
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


CURRENT_DRAFT: Final = "https://json-schema.org/draft/2020-12/schema"
"""The draft the LLM APIs read a schema in (the Messages API refuses a tool whose schema is not valid in it)."""


def _draft_2020_12(schema: dict[str, Any]) -> dict[str, Any]:
    """One (sub)schema's keywords of an older draft in 2020-12's forms: a tuple ``items`` is ``prefixItems`` (its
    ``additionalItems`` then ``items``; without one ``additionalItems`` meant nothing), ``dependencies`` are
    ``dependentRequired`` (lists of names) and ``dependentSchemas`` (schemas)."""
    if isinstance(schema.get("items"), list):
        schema["prefixItems"] = schema.pop("items")
        if "additionalItems" in schema:
            schema["items"] = schema.pop("additionalItems")
    schema.pop("additionalItems", None)
    dependencies = schema.pop("dependencies", None)
    if isinstance(dependencies, Mapping):
        for name, needs in dependencies.items():
            kind = "dependentRequired" if isinstance(needs, list) else "dependentSchemas"
            schema.setdefault(kind, {})[name] = needs
    return schema


def in_current_draft(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` in the 2020-12 draft, which the LLM APIs read: one declaring an older draft (sync accepts any
    schema valid in the draft it names) rewritten, its ``$schema`` dropped; one naming none is 2020-12 already."""
    draft = schema.get("$schema")
    if draft is None:
        return schema
    rest = {k: v for k, v in schema.items() if k != "$schema"}
    return rest if str(draft).rstrip("#") == CURRENT_DRAFT else _walk(rest, _draft_2020_12)


REGEX_FAULTS: Final = (re.error, OverflowError, RecursionError)
"""What ``re.compile`` raises on a pattern it cannot take; jsonschema's ``regex`` format expects ``re.error`` alone."""
UNCHECKABLE: Final = (TypeError, AttributeError, ValueError, *REGEX_FAULTS)
"""What else ``jsonschema`` may let escape on a hostile schema: a fault of the schema like any other, not of the
service (which would answer ``internal``, and a sync event be redelivered rather than refused)."""


def checked_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema in today's forms, valid against its draft's metaschema (2020-12 unless it names another); a
    ``ValueError`` naming the path of the fault otherwise."""
    if not isinstance(schema.get("$schema", ""), str):  # jsonschema looks it up as a key and as a string
        raise ValueError("not a valid JSON Schema at $schema: the URI of a draft is a string")
    try:
        return _checked(schema)
    except SchemaError as error:
        where = "/".join(str(part) for part in error.absolute_path)
        raise ValueError(f"not a valid JSON Schema at {where or 'its root'}: {error.message[:300]}") from None
    except UNCHECKABLE as error:
        fault = f"{type(error).__name__}: {str(error)[:200]}"
        raise ValueError(f"not a valid JSON Schema: it cannot be checked ({fault})") from None


def _checked(schema: dict[str, Any]) -> dict[str, Any]:
    """``checked_schema`` before what is wrong is turned into a ``ValueError``."""
    modern: dict[str, Any] = _walk(schema, _modern)
    if modern != schema and str(modern.get("$schema", "")).rstrip("#") in OLD_DRAFTS:
        del modern["$schema"]
    validator = validator_for(modern, default=Draft202012Validator)
    validator.check_schema(modern, format_checker=_formats(validator))
    return modern


@cache
def _formats(validator: type[Validator]) -> FormatChecker:
    """The format checks of the draft's metaschema, with a pattern ``re`` cannot take for any reason an invalid
    ``regex`` (so a pattern too large is refused at its path, as a malformed one is)."""
    draft = validator_for(validator.META_SCHEMA, default=validator).FORMAT_CHECKER
    checker = FormatChecker(())
    checker.checkers = {**draft.checkers, "regex": (_is_regex, REGEX_FAULTS)}
    return checker


def _is_regex(instance: object) -> bool:
    return not isinstance(instance, str) or bool(re.compile(instance))
