"""A selection as the tool list an LLM SDK takes: OpenAI-style function tools and Anthropic-style tools.

Pure functions, no SDK dependency. Both APIs want a function name matching ``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI
function calling; Anthropic tool use) and an object JSON Schema for the arguments. A tool's identity is
``plugin/name``, so the name sent is ``plugin__name`` with anything else replaced by ``_``; when that loses
characters or length, a hash of the identity keeps it unique. :class:`ToolNames` maps the model's tool calls back.
"""

import copy
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolsel.contracts import ScoredTool, SelectReply, ToolRef

NAME_PATTERN: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What both APIs accept as a function or tool name."""
MAX_NAME: Final = 64
SEPARATOR: Final = "__"
ROOT_KEYWORDS_REFUSED: Final = ("oneOf", "anyOf", "allOf", "not", "enum", "const")
"""Keywords the APIs refuse at a parameters schema's root, which must be a plain ``type: object``."""
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LEN: Final = 8


def function_name(ref: ToolRef) -> str:
    """``plugin__name`` when both parts fit the name rules as they are, else a valid name with a hash suffix."""
    plain = f"{ref.plugin_id}{SEPARATOR}{ref.name}"
    cleaned = _INVALID.sub("_", plain)
    if cleaned == plain and len(plain) <= MAX_NAME:
        return plain
    digest = hashlib.sha256(ref.key.encode()).hexdigest()[:_HASH_LEN]
    return f"{cleaned[: MAX_NAME - _HASH_LEN - 1]}_{digest}"


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
    ``anyOf``/``oneOf`` of objects merged into one, a root ``$ref`` inlined), ``properties`` present and
    ``required`` naming only declared properties."""
    schema = _merged_root(_resolved(schema, schema))
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


def description(tool: ScoredTool) -> str:
    """The tool's description with its usage hint, which seed 003 sends along with the tool."""
    return f"{tool.description}\n\nUsage: {tool.usage_hint}" if tool.usage_hint else tool.description


def _tools(selection: SelectReply | Iterable[ScoredTool]) -> list[ScoredTool]:
    return list(selection.tools if isinstance(selection, SelectReply) else selection)


def openai_tools(selection: SelectReply | Iterable[ScoredTool]) -> list[dict[str, Any]]:
    """Chat Completions ``tools``: ``{"type": "function", "function": {name, description, parameters}}``."""
    return [
        {
            "type": "function",
            "function": {
                "name": function_name(t),
                "description": description(t),
                "parameters": parameters_schema(t.parameters),
            },
        }
        for t in _tools(selection)
    ]


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
