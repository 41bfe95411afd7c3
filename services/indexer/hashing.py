"""Content hashes over a canonical JSON of a tool: equal content, equal hash, whatever the key order."""

import hashlib
import json
from typing import Any

from contracts import ToolSpec


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, unicode kept as is: one text per value."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(spec: ToolSpec) -> str:
    """Hash of everything the plugin declared about the tool."""
    return sha256_hex(canonical_json(spec.model_dump(mode="json")))


def embedding_text(spec: ToolSpec) -> str:
    """What a tool without example queries is embedded from (seed 000, 6.2)."""
    parts = [
        spec.name,
        spec.display_name,
        spec.function_summary,
        spec.description,
        spec.when_to_use,
        " ".join(spec.tags),
    ]
    return "\n".join(part for part in parts if part)


def embedding_hash(spec: ToolSpec) -> str:
    """Hash of what the tool's vector is computed from: a change here, and only here, re-embeds."""
    return sha256_hex(canonical_json({"examples": spec.example_queries, "text": embedding_text(spec)}))
