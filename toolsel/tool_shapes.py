"""A selection as the tool list an LLM SDK takes: OpenAI-style function tools and Anthropic-style tools.

Pure functions, no SDK dependency. Both APIs want a function name matching ``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI
function calling; Anthropic tool use) and an object JSON Schema for the arguments. A tool's identity is
``plugin/name``, so the name sent is ``plugin__name`` where that reads back as one tool alone; any other tool's
name carries a hash of its identity (``function_name``). :class:`ToolNames` maps the model's tool calls back.
"""

import copy
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolsel.contracts import ScoredTool, SelectReply, ToolRef
from toolsel.contracts.schemas import in_current_draft

NAME_PATTERN: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What both APIs accept as a function or tool name."""
MAX_NAME: Final = 64
SEPARATOR: Final = "__"
ROOT_KEYWORDS_REFUSED: Final = ("oneOf", "anyOf", "allOf", "not", "enum", "const")
"""Keywords the APIs refuse at a parameters schema's root, which must be a plain ``type: object``."""
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LEN: Final = 8
_HASH_MARK: Final = "___"
"""Goes before a hashed name's digest: no plain name holds three ``_`` in a row."""


def _unambiguous(part: str) -> bool:
    """A part that cannot blur the separator: no ``__`` in it, and no ``_`` at either end."""
    return SEPARATOR not in part and not part.startswith("_") and not part.endswith("_")


def function_name(ref: ToolRef) -> str:
    """A name both APIs accept and no other tool gets. ``plugin__name`` when both parts fit the name rules as they
    are and neither holds ``__`` or begins or ends with ``_``, so that its one ``__`` is the separator
    (``P/mail__forecast`` and ``P__mail/forecast`` would both read ``P__mail__forecast``); any other tool's is
    its cleaned text, ``___`` and 32 bits of a hash of its identity, which no plain name can equal."""
    plain = f"{ref.plugin_id}{SEPARATOR}{ref.name}"
    cleaned = _INVALID.sub("_", plain)
    if cleaned == plain and len(plain) <= MAX_NAME and _unambiguous(ref.plugin_id) and _unambiguous(ref.name):
        return plain
    digest = hashlib.sha256(ref.key.encode()).hexdigest()[:_HASH_LEN]
    return f"{cleaned[: MAX_NAME - _HASH_LEN - len(_HASH_MARK)]}{_HASH_MARK}{digest}"


def _resolved(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """A root-level ``$ref`` to the schema's own ``$defs``/``definitions`` replaced by what it names (once)."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part) if isinstance(target, Mapping) else None
    if not isinstance(target, Mapping):
        return schema
    return {**{k: v for k, v in schema.items() if k != "$ref"}, **target}


_MERGEABLE: Final = frozenset({"type", "properties", "required", "description", "title"})
"""What an ``allOf`` part may hold for the merged object to take exactly what the parts take together."""


def _all_of_parts(schema: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """A root ``allOf``'s parts, their ``$ref``s resolved, where each is an object schema; None otherwise."""
    parts = schema.get("allOf")
    if not isinstance(parts, list) or not parts:
        return None
    resolved = [_resolved(p, schema) if isinstance(p, Mapping) else None for p in parts]
    if any(p is None or not isinstance(p.get("properties", {}), Mapping) for p in resolved):
        return None
    objects = [p for p in resolved if p is not None and p.get("type", "object") == "object"]
    return objects if len(objects) == len(parts) else None


def _all_of_exact(schema: Mapping[str, Any]) -> bool:
    """Whether a root ``allOf`` (if any) merges into one object without losing a constraint (for strict mode)."""
    if "allOf" not in schema:
        return True
    parts = _all_of_parts(schema)
    return parts is not None and all(set(p) <= _MERGEABLE for p in parts)


def _merged_all_of(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A root ``allOf`` of object schemas (or ``$ref``s to them) as one object, since every part applies: the
    union of their properties (one declared by two parts takes both declarations) and of their required."""
    parts = _all_of_parts(schema)
    if parts is None:
        return schema
    merged = {k: v for k, v in schema.items() if k != "allOf"}
    properties: dict[str, Any] = dict(merged.get("properties") or {})
    required = set(merged.get("required") or [])
    for part in parts:
        for name, sub in part.get("properties", {}).items():
            known = properties.get(name)
            properties[name] = sub if known is None or known == sub else {"allOf": [known, sub]}
        required |= set(part.get("required") or [])
    merged["type"], merged["properties"], merged["required"] = "object", properties, sorted(required)
    return merged


def _merged_root(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A root ``anyOf``/``oneOf`` of object schemas (or ``$ref``s to them) as one object the APIs accept: every
    option's properties (the first declaration of a name wins), required only what every option requires, and the
    choice said in the description; nothing an option takes is lost."""
    options = next((schema[k] for k in ("anyOf", "oneOf") if isinstance(schema.get(k), list) and schema[k]), None)
    if options is None:
        return schema
    objects = [_resolved(o, schema) for o in options if isinstance(o, Mapping)]
    if len(objects) != len(options) or any(not isinstance(o.get("properties", {}), Mapping) for o in objects):
        return schema
    properties: dict[str, Any] = {}
    for option in objects:
        for name, sub in option.get("properties", {}).items():
            properties.setdefault(name, sub)
    required = [name for name in properties if all(name in (o.get("required") or []) for o in objects)]
    said = " | ".join("{" + ", ".join(o.get("required") or o.get("properties", {})) + "}" for o in objects)
    merged = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
    merged["properties"] = {**properties, **merged.get("properties", {})}
    merged["required"] = sorted(set(required) | set(merged.get("required") or []))
    merged["description"] = " ".join(filter(None, [str(schema.get("description") or ""), f"Give one of {said}."]))
    return merged


def parameters_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a tool's parameters both APIs accept: an object at the root without root combinators (a root
    ``anyOf``/``oneOf`` of objects merged into one, a root ``allOf`` of objects merged, a root ``$ref`` inlined),
    ``properties`` present and ``required`` naming only declared properties, in JSON Schema 2020-12 (an older
    draft's tuple ``items`` and ``dependencies`` rewritten)."""
    current = in_current_draft(schema)
    schema = _merged_root(_merged_all_of(_resolved(current, current)))
    cleaned = {k: copy.deepcopy(v) for k, v in schema.items() if k not in ROOT_KEYWORDS_REFUSED}
    if cleaned.get("type") != "object":
        cleaned = {"type": "object", "properties": {}} if "properties" not in cleaned else cleaned
        cleaned["type"] = "object"
    properties = cleaned.get("properties")
    if not isinstance(properties, dict):
        properties = cleaned["properties"] = {}
    required = cleaned.get("required")
    if isinstance(required, list):
        cleaned["required"] = [r for r in required if r in properties]
        if not cleaned["required"]:
            del cleaned["required"]
    elif "required" in cleaned:
        del cleaned["required"]
    return cleaned


STRICT_KEYWORDS: Final = frozenset(
    {
        *("type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const"),
        *("$ref", "$defs", "definitions", "description", "title", "pattern", "format", "multipleOf"),
        *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems"),
    }
)
"""The keywords OpenAI's strict mode (Structured Outputs) supports; a schema with any other stays non-strict."""
STRICT_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
STRICT_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""The string formats strict mode supports."""
_NESTING: Final = ("items", "anyOf", "properties", "$defs", "definitions")


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts null: how strict mode says an argument may be left out."""
    kind = schema.get("type")
    if isinstance(kind, str | list):
        kinds = [kind] if isinstance(kind, str) else list(kind)
        widened = {**schema, "type": kinds if "null" in kinds else [*kinds, "null"]}
        if "enum" in schema and None not in schema["enum"]:
            widened["enum"] = [*schema["enum"], None]
        return widened
    if isinstance(schema.get("anyOf"), list):
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def _strict(schema: Any) -> dict[str, Any] | None:
    """A (sub)schema in strict mode's form, or None where that would change what it accepts beyond making an
    optional property a nullable required one: another keyword, format or type, an object that takes properties
    it does not declare, a schema without a type (it accepts anything)."""
    if not isinstance(schema, Mapping) or set(schema) - STRICT_KEYWORDS:
        return None
    if "format" in schema and schema["format"] not in STRICT_FORMATS:
        return None
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else kind
    if kinds is None and not {"anyOf", "$ref", "enum", "const"} & set(schema):
        return None
    if kinds is not None and (not isinstance(kinds, list) or not set(kinds) <= STRICT_TYPES):
        return None
    strict: dict[str, Any] = {k: copy.deepcopy(v) for k, v in schema.items() if k not in _NESTING}
    if "items" in schema and (items := _strict(schema["items"])) is None:
        return None
    if "items" in schema:
        strict["items"] = items
    if "anyOf" in schema:
        options = [_strict(o) for o in schema["anyOf"]] if isinstance(schema["anyOf"], list) else [None]
        if any(o is None for o in options):
            return None
        strict["anyOf"] = options
    for defs in ("$defs", "definitions"):
        if defs in schema:
            named = {n: _strict(d) for n, d in schema[defs].items()} if isinstance(schema[defs], Mapping) else {}
            if not isinstance(schema[defs], Mapping) or any(d is None for d in named.values()):
                return None
            strict[defs] = named
    if "object" in (kinds or []) or "properties" in schema:
        return _strict_object(schema, strict)
    return strict


def _strict_object(schema: Mapping[str, Any], strict: dict[str, Any]) -> dict[str, Any] | None:
    """An object in strict mode: no undeclared properties, every declared one required (an optional one
    nullable). An object that declares properties and says nothing of others is read as taking those alone; a
    free-form one (no properties, and no ``additionalProperties: false``) takes any, which strict mode cannot
    say, so it is not strict."""
    properties = schema.get("properties", {})
    if schema.get("additionalProperties", False) is not False or not isinstance(properties, Mapping):
        return None
    if not properties and schema.get("additionalProperties") is not False:
        return None
    required = schema.get("required") or []
    if not isinstance(required, list) or set(required) - set(properties):
        return None
    converted: dict[str, Any] = {}
    for name, sub in properties.items():
        made = _strict(sub)
        if made is None:
            return None
        converted[name] = made if name in required else _nullable(made)
    return {**strict, "properties": converted, "required": list(converted), "additionalProperties": False}


def strict_parameters(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """``parameters_schema(schema)`` in OpenAI strict mode's form, where that loses nothing: every property
    required (an optional one made nullable: the model sends null for an argument it leaves out, which
    ``unstrict_arguments`` drops again),
    ``additionalProperties: false`` on every object, only the keywords strict mode supports. None otherwise (the
    tool then goes non-strict): a free-form object, a root ``allOf`` whose parts say more than properties, ..."""
    current = in_current_draft(schema)
    if not _all_of_exact(_resolved(current, current)):
        return None
    return _strict(parameters_schema(schema))


def _takes_null(schema: Any) -> bool:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    return kind == "null" or (isinstance(kind, list) and "null" in kind)


MAX_REFS: Final = 32
"""How many ``$ref``s in a row ``unstrict_arguments`` follows (a schema may refer to itself)."""


def _followed(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with its ``$ref``s to the root's own definitions resolved."""
    for _ in range(MAX_REFS):
        if not isinstance(schema, Mapping) or "$ref" not in schema:
            break
        resolved = _resolved(schema, root)
        if resolved is schema:
            break
        schema = resolved
    return schema if isinstance(schema, Mapping) else {}


def _shape_of(arguments: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The part of ``schema`` that ``arguments`` answer: an ``anyOf``'s object option declaring every key given
    (an array option for a list), else ``schema`` itself."""
    schema = _followed(schema, root)
    options = [_followed(o, root) for o in schema.get("anyOf") or [] if isinstance(o, Mapping)]
    if isinstance(arguments, dict):
        fits = [
            o for o in options if isinstance(o.get("properties"), Mapping) and set(arguments) <= set(o["properties"])
        ]
    else:
        fits = [o for o in options if "items" in o] if isinstance(arguments, list) else []
    return fits[0] if fits else schema


def _unstrict(arguments: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    schema = _shape_of(arguments, schema, root)
    if isinstance(arguments, list):
        return [_unstrict(a, schema.get("items") or {}, root) for a in arguments]
    properties = schema.get("properties")
    if not isinstance(arguments, dict) or not isinstance(properties, Mapping):
        return arguments
    required = schema.get("required") or []
    return {
        name: _unstrict(value, properties.get(name) or {}, root)
        for name, value in arguments.items()
        if value is not None or name in required or _takes_null(_followed(properties.get(name), root))
    }


def unstrict_arguments(arguments: Any, schema: Mapping[str, Any]) -> Any:
    """A strict-mode call's ``arguments`` as the tool's own schema takes them: the nulls strict mode made the
    model send for the optional arguments it left out are dropped (at every level the schema declares, through
    its ``$ref``s to its own definitions and the options of an ``anyOf``)."""
    return _unstrict(arguments, schema, schema)


def description(tool: ScoredTool) -> str:
    """The tool's description with its usage hint, which seed 003 sends along with the tool."""
    return f"{tool.description}\n\nUsage: {tool.usage_hint}" if tool.usage_hint else tool.description


def _tools(selection: SelectReply | Iterable[ScoredTool]) -> list[ScoredTool]:
    return list(selection.tools if isinstance(selection, SelectReply) else selection)


def openai_function(tool: ScoredTool, strict: bool = False) -> dict[str, Any]:
    """One Chat Completions tool. ``strict``: with ``"strict": true`` and ``strict_parameters`` where the schema
    allows it, else the non-strict shape (never a strict one that drops a constraint)."""
    function = {"name": function_name(tool), "description": description(tool)}
    made = strict_parameters(tool.parameters) if strict else None
    if made is None:
        return {"type": "function", "function": {**function, "parameters": parameters_schema(tool.parameters)}}
    return {"type": "function", "function": {**function, "parameters": made, "strict": True}}


def openai_tools(selection: SelectReply | Iterable[ScoredTool], strict: bool = False) -> list[dict[str, Any]]:
    """Chat Completions ``tools``: ``{"type": "function", "function": {name, description, parameters}}``;
    ``strict``: each tool in strict mode where its schema allows it (``openai_function``)."""
    return [openai_function(t, strict) for t in _tools(selection)]


def anthropic_tools(selection: SelectReply | Iterable[ScoredTool]) -> list[dict[str, Any]]:
    """Messages API ``tools``: ``{name, description, input_schema}``."""
    return [
        {"name": function_name(t), "description": description(t), "input_schema": parameters_schema(t.parameters)}
        for t in _tools(selection)
    ]


@dataclass(frozen=True)
class ToolNames:
    """Function name -> tool, for the tools of one selection (or several): turns a model's call back into the
    ``plugin_id``/``name`` that outcomes and reviews report."""

    tools: Mapping[str, ToolRef]

    @classmethod
    def of(cls, selection: SelectReply | Iterable[ToolRef]) -> "ToolNames":
        refs = selection.tools if isinstance(selection, SelectReply) else selection
        return cls({function_name(r): ToolRef(plugin_id=r.plugin_id, name=r.name) for r in refs})

    def resolve(self, name: str) -> ToolRef:
        """The tool a function name stands for; ``KeyError`` for a name this selection never offered."""
        return self.tools[name]

    def get(self, name: str) -> ToolRef | None:
        return self.tools.get(name)
