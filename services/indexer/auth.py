"""A plugin may write only its own namespace, proven by the secret the operator configured for it: sent as is,
or as an HMAC-SHA256 signature of the payload so the secret itself never travels."""

import hmac
from collections.abc import Collection, Mapping
from typing import Any

from toolsel.contracts import ErrorCode, PluginSync, payload_signature
from toolsel.messaging import RequestError


def credential_ok(credential: str | None, secret: str, payload: Mapping[str, Any], *, signature_only: bool) -> bool:
    """True for the payload's signature under ``secret``, or (unless ``signature_only``) the secret itself."""
    if credential is None:
        return False
    if hmac.compare_digest(credential.encode(), payload_signature(payload, secret).encode()):
        return True
    return not signature_only and hmac.compare_digest(credential.encode(), secret.encode())


def authorise(
    sync: PluginSync,
    secrets: Mapping[str, str],
    *,
    payload: Mapping[str, Any] | None = None,
    signed_plugins: Collection[str] = (),
    require_credentials: bool = False,
) -> None:
    """Raise a typed refusal unless the sync proves its plugin id.

    ``payload`` is the JSON object as received (what the plugin signed); without it, the sync as the contract
    serialises it. A plugin with no secret configured is refused only when ``require_credentials``.
    """
    secret = secrets.get(sync.plugin_id)
    if secret is None:
        if require_credentials:
            raise RequestError(ErrorCode.UNAUTHORIZED, f"no credential configured for {sync.plugin_id!r}", "plugin_id")
        return
    signed = payload if payload is not None else sync.model_dump(mode="json")
    if not credential_ok(sync.credential, secret, signed, signature_only=sync.plugin_id in signed_plugins):
        raise RequestError(
            ErrorCode.UNAUTHORIZED, f"bad or missing credential for plugin {sync.plugin_id!r}", "credential"
        )
