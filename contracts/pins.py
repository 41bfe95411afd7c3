"""A tenant's own pins (seed 000, 5.6): which tools join its answers on their own, over what their plugins declare,
without hiding any. A tenant's identity sends a ``PinRequest`` on ``subjects.PINS_ROOT`` under its scope and acts
for its own tenant only; the operator names the tenant. Each choice is kept as a pin or unpin rule of that tenant
(of origin ``tenant``) that the selectors apply beneath the operator's rules (``toolsel.services.selector.policy``).
"""

from datetime import datetime
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from toolsel.contracts.common import DEFAULT_TENANT, Frozen, Identifier, Message, ToolName

PinAction = Literal["list", "pin", "unpin", "clear"]


class PinRequest(Message):
    """``pin``: the tool joins every answer of the tenant; ``unpin``: a tool its plugin pins no longer joins them
    on its own (it stays visible and ranked like any other); ``clear``: the tenant's choice goes, what the plugin
    declares holds again; ``list``: change nothing. Every action replies with the tenant's pins as they stand."""

    action: PinAction = "list"
    tenant_id: Identifier = DEFAULT_TENANT
    """The tenant: a tenant's identity leaves it out (or names its own); the operator names the one it acts for."""
    plugin_id: Identifier | None = None
    name: ToolName | None = Field(default=None, validate_default=True)
    """The tool (with ``plugin_id``) that ``pin``, ``unpin`` and ``clear`` act on; ``list`` names none."""

    @field_validator("name")
    @classmethod
    def _names_a_tool_unless_listing(cls, name: str | None, info: ValidationInfo) -> str | None:
        action, plugin_id = info.data.get("action"), info.data.get("plugin_id")
        if action == "list" and (name is not None or plugin_id is not None):
            raise ValueError("list names no tool: leave plugin_id and name out")
        if action in ("pin", "unpin", "clear") and (name is None or plugin_id is None):
            raise ValueError(f"{action} names a tool: give its plugin_id and name")
        return name

    @property
    def key(self) -> str:
        """``plugin/name`` of the tool it names."""
        return f"{self.plugin_id}/{self.name}"


class PinChoice(Frozen):
    """One tool the tenant pinned or unpinned for itself."""

    plugin_id: str
    name: str
    pinned: bool
    """True: pinned into every answer of the tenant; False: unpinned (its plugin's pin no longer applies)."""
    made_at: datetime


class PinList(Message):
    """A tenant's pins: its own choices, and the tools its plugins pin (those an ``unpin`` can take out)."""

    tenant_id: str
    choices: list[PinChoice]
    declared: list[str]
    """The tools (``plugin/name``) that their plugins pin for every tenant that sees them, this one included."""
    changed: bool = False
    """Whether this request changed the tenant's pins (pinning a pinned tool again changes nothing)."""
