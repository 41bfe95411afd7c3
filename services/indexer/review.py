"""Review flags: a change that could turn a tool against its users waits for a person before it is selectable."""

from typing import Any

from toolsel.contracts import ToolSpec


def _major(version: str) -> str:
    return version.split(".", 1)[0]


REVIEWED_AFTER_APPROVAL = ("description", "execution_type", "execution_config")
"""What a person approved a tool for: what agents are told it does, and where a call to it goes (the server the
MCP gateway calls, with the plugin's secrets). A change of any of them on an approved tool is looked at again."""
UNDECLARED = {
    name: field.get_default(call_default_factory=True)
    for name, field in ToolSpec.model_fields.items()
    if name in REVIEWED_AFTER_APPROVAL and not field.is_required()
}
"""Their values in a stored spec that leaves them out."""


def needs_review(old: dict[str, Any], new: ToolSpec, approved: bool) -> bool:
    """A major schema-version change, or on an approved tool a change of ``REVIEWED_AFTER_APPROVAL``, needs a
    person's look (seed 000 §9.3 flags major versions; a minor one applies by itself)."""
    if _major(str(old.get("schema_version", "1.0.0"))) != _major(new.schema_version):
        return True
    declared = new.model_dump(mode="json", include=set(REVIEWED_AFTER_APPROVAL))
    return approved and any(old.get(f, UNDECLARED.get(f)) != declared[f] for f in REVIEWED_AFTER_APPROVAL)


def status_after_update(status: str, flagged: bool, flagged_selectable: bool) -> str:
    """A newly flagged tool becomes ``draft`` (the selector serves only ``active``) unless flagged tools stay
    selectable; any other change keeps the status it had."""
    return "draft" if flagged and not flagged_selectable else status


def status_after_approval(status: str) -> str:
    """Approval brings a tool held back as ``draft`` into service; deprecated or retired tools stay so."""
    return "active" if status == "draft" else status
