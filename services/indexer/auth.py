"""A plugin may write only its own namespace, proven by the shared secret the operator configured for it."""

import hmac

from contracts import ErrorCode, PluginSync
from toolsel.messaging import RequestError


def authorise(sync: PluginSync, secrets: dict[str, str]) -> None:
    """Raise a typed refusal unless the sync carries its plugin's secret (or the plugin has none set)."""
    expected = secrets.get(sync.plugin_id)
    if expected is None:
        return
    if sync.credential is None or not hmac.compare_digest(sync.credential.encode(), expected.encode()):
        raise RequestError(
            ErrorCode.UNAUTHORIZED, f"bad or missing credential for plugin {sync.plugin_id!r}", "credential"
        )
