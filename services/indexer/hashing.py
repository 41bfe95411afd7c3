"""Content hashes over a canonical JSON of a tool: equal content, equal hash, whatever the key order."""

import hashlib
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from toolsel.contracts import ToolSpec
from toolsel.contracts.registry import canonical_json

log = logging.getLogger("toolsel.indexer")


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(spec: ToolSpec) -> str:
    """Hash of everything the plugin declared about the tool (an unset pin scope left out, so that tools declared
    before it existed keep their hashes)."""
    return sha256_hex(
        canonical_json(spec.model_dump(mode="json", exclude={"pin_scope"} if spec.pin_scope is None else None))
    )


_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SEPARATORS = re.compile(r"[_\-./:]+")


def name_words(name: str) -> str:
    """``getUserProfile`` / ``get_user_profile`` as ``get User Profile`` / ``get user profile``: the model reads
    words, not identifiers."""
    return " ".join(_SEPARATORS.sub(" ", _CAMEL.sub(r"\1 \2", name)).split())


def embedding_text(spec: ToolSpec) -> str:
    """What a tool without example queries is embedded from (seed 000, 6.2): ``<name in words>: <description>``,
    then the other prose and ``Parameters: p (description); ...``. The model reads its first 256 tokens, so the
    name and description come first; parameters lifted NDCG@10 on the evaluation sets (docs/results.md, Quality)."""
    parts = [
        f"{name_words(spec.name)}: {spec.description}".strip(),
        spec.display_name,
        spec.function_summary,
        spec.when_to_use,
        " ".join(spec.tags),
        _parameters(spec.parameters),
    ]
    return "\n".join(part for part in parts if part)


def _parameters(schema: object) -> str:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return ""
    described = (
        f"{name} ({sub['description']})" if isinstance(sub, dict) and sub.get("description") else str(name)
        for name, sub in properties.items()
    )
    return "Parameters: " + "; ".join(described)


def embedding_hash(spec: ToolSpec) -> str:
    """Hash of what the tool's vector is computed from — its example queries when it has them (Tool2Vec),
    else its text: a change there, and only there, re-embeds."""
    source = {"examples": spec.example_queries} if spec.example_queries else {"text": embedding_text(spec)}
    return sha256_hex(canonical_json(source))


def stored_spec(raw: str | Mapping[str, Any]) -> ToolSpec:
    """A spec the registry holds, as it was accepted when it was stored. A later release may refuse at sync what an
    earlier one accepted (a rule added since); such a spec is read as it is, or one stored tool would fail every
    embedding pass (and the tools pending beside it), and every tune, until its plugin synced again."""
    data = json.loads(raw) if isinstance(raw, str) else dict(raw)
    try:
        return ToolSpec.model_validate(data)
    except ValidationError as refused:
        log.warning(
            "stored tool %s is refused at sync now (%s): read as stored", data.get("name"), refused.errors()[0]["msg"]
        )
        return ToolSpec.model_construct(**data)
