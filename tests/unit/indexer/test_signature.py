"""Plugin credentials: the shared secret itself, or an HMAC-SHA256 signature of the canonical payload."""

import hashlib
import hmac

import pytest

from toolsel.contracts import ErrorCode, PluginSync, ToolSpec, canonical_json, payload_signature
from toolsel.messaging import RequestError
from toolsel.services.indexer.auth import authorise, credential_ok

SECRETS = {"mail": "k3y"}


def _payload(**changes: object) -> dict[str, object]:
    sync = PluginSync(plugin_id="mail", plugin_version="1.0.0", tools=[ToolSpec(name="send", description="Send mail.")])
    return {**sync.model_dump(mode="json"), **changes}


def test_canonical_json_ignores_key_order_and_keeps_unicode() -> None:
    assert canonical_json({"b": 1, "a": {"d": 2, "c": "é"}}) == canonical_json({"a": {"c": "é", "d": 2}, "b": 1})
    assert canonical_json({"name": "café ☕"}) == '{"name":"café ☕"}'


def test_signature_is_hmac_sha256_of_the_canonical_payload_without_the_credential() -> None:
    payload = {"plugin_id": "mail", "tools": [], "credential": "ignored"}
    expected = hmac.new(b"k3y", b'{"plugin_id":"mail","tools":[]}', hashlib.sha256).hexdigest()
    assert payload_signature(payload, "k3y") == expected
    assert payload_signature({"tools": [], "plugin_id": "mail"}, "k3y") == expected


def test_signature_covers_every_field() -> None:
    payload = _payload()
    tampered = _payload(tenant_id="someone-else")
    assert payload_signature(payload, "k3y") != payload_signature(tampered, "k3y")
    assert payload_signature(payload, "k3y") != payload_signature(payload, "other-key")


@pytest.mark.parametrize(
    ("credential", "signature_only", "ok"),
    [("k3y", False, True), ("k3y", True, False), ("sig", False, True), ("sig", True, True), ("nope", False, False)],
)
def test_credential_is_the_secret_or_the_signature(credential: str, signature_only: bool, ok: bool) -> None:
    payload = _payload()
    sent = payload_signature(payload, "k3y") if credential == "sig" else credential
    assert credential_ok(sent, "k3y", payload, signature_only=signature_only) is ok


def test_a_signed_sync_is_authorised_against_the_payload_as_received() -> None:
    payload = _payload()
    signature = payload_signature(payload, "k3y")
    sync = PluginSync.model_validate({**payload, "credential": signature})
    authorise(sync, SECRETS, payload={**payload, "credential": signature}, signed_plugins=["mail"])


def test_a_signature_over_another_payload_is_refused() -> None:
    signature = payload_signature(_payload(), "k3y")
    forged = _payload(plugin_version="6.6.6", credential=signature)
    with pytest.raises(RequestError) as refused:
        authorise(PluginSync.model_validate(forged), SECRETS, payload=forged)
    assert (refused.value.detail.code, refused.value.detail.field) == (ErrorCode.UNAUTHORIZED, "credential")


def test_plugins_without_a_secret_are_refused_only_when_credentials_are_required() -> None:
    sync = PluginSync.model_validate(_payload(plugin_id="open"))
    authorise(sync, SECRETS)
    with pytest.raises(RequestError) as refused:
        authorise(sync, SECRETS, require_credentials=True)
    assert refused.value.detail.field == "plugin_id"
