"""toolsel's shared runtime: settings, the PostgreSQL store, the embedder, NATS helpers, embedded servers, CLI.

``from toolsel import ToolselClient`` (async) or ``SyncToolselClient`` (scripts): the clients load on first
use, so importing a runtime module does not pull in NATS."""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["SyncToolselClient", "ToolselClient", "ToolselError"]

if TYPE_CHECKING:
    from toolsel.client import SyncToolselClient, ToolselClient, ToolselError


def __getattr__(name: str) -> Any:
    if name in __all__:
        from toolsel import client

        return getattr(client, name)
    raise AttributeError(f"module 'toolsel' has no attribute {name!r}")
