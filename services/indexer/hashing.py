"""Content hashes over a canonical JSON of a tool: equal content, equal hash, whatever the key order."""

import hashlib

from contracts import ToolSpec
from contracts.registry import canonical_json


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
    """Hash of what the tool's vector is computed from — its example queries when it has them (Tool2Vec),
    else its text: a change there, and only there, re-embeds."""
    source = {"examples": spec.example_queries} if spec.example_queries else {"text": embedding_text(spec)}
    return sha256_hex(canonical_json(source))
