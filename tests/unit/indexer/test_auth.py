"""A plugin writes its namespace only with its configured secret."""

import pytest

from toolsel.contracts import ErrorCode, PluginSync
from toolsel.messaging import RequestError
from toolsel.services.indexer.auth import authorise


def _sync(credential: str | None, plugin_id: str = "billing") -> PluginSync:
    return PluginSync(plugin_id=plugin_id, plugin_version="1.0.0", credential=credential, tools=[])


@pytest.mark.parametrize("credential", [None, "anything"])
def test_plugin_without_secret_is_allowed(credential: str | None) -> None:
    authorise(_sync(credential), {})
    authorise(_sync(credential), {"other": "s3cret"})


def test_right_secret_is_allowed() -> None:
    authorise(_sync("s3cret"), {"billing": "s3cret"})


@pytest.mark.parametrize("credential", [None, "", "wrong", "s3cret ", "S3CRET", "s3cre"])
def test_wrong_or_missing_credential_is_refused(credential: str | None) -> None:
    with pytest.raises(RequestError) as caught:
        authorise(_sync(credential), {"billing": "s3cret"})
    assert caught.value.detail.code == ErrorCode.UNAUTHORIZED
    assert caught.value.detail.field == "credential"
    assert "billing" in caught.value.detail.message


def test_another_plugins_secret_does_not_open_this_one() -> None:
    with pytest.raises(RequestError):
        authorise(_sync("crm-secret"), {"billing": "s3cret", "crm": "crm-secret"})
