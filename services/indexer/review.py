"""Review flags: a change that could turn a tool against its users waits for a person before it is selectable."""

from typing import Any

from toolsel.contracts import ToolSpec


def _major(version: str) -> str:
    return version.split(".", 1)[0]


def needs_review(old: dict[str, Any], new: ToolSpec, approved: bool) -> bool:
    """A major schema-version change, or a new description on an approved tool, needs a person's look."""
    if _major(str(old.get("schema_version", "1.0.0"))) != _major(new.schema_version):
        return True
    return approved and old.get("description") != new.description


def status_after_update(status: str, flagged: bool, flagged_selectable: bool) -> str:
    """A newly flagged tool becomes ``draft`` (the selector serves only ``active``) unless flagged tools stay
    selectable; any other change keeps the status it had."""
    return "draft" if flagged and not flagged_selectable else status


def status_after_approval(status: str) -> str:
    """Approval brings a tool held back as ``draft`` into service; deprecated or retired tools stay so."""
    return "active" if status == "draft" else status
