"""The indexer's handlers in FastStream's in-memory broker: what is refused or dead-lettered before any write."""

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from faststream.nats import JStream, NatsBroker, NatsMessage, TestNatsBroker

from toolsel.contracts import ErrorCode, ErrorReply, PluginSync, ToolSpec, subjects
from toolsel.services.indexer.app import create_app
from toolsel.services.indexer.state import STATE, IndexerState
from toolsel.settings import Settings

SETTINGS = Settings(plugin_secrets={"guarded": "s3cret"}, admin_token="admin-token")


class Untouched:
    """Stands for the pool and the model: a refused request must not reach them."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a refused request used the store or the model ({name})")


@pytest.fixture
async def broker() -> AsyncIterator[tuple[NatsBroker, list[tuple[bytes, str]]]]:
    app = create_app(SETTINGS)
    broker = app.broker
    assert isinstance(broker, NatsBroker)
    dead: list[tuple[bytes, str]] = []

    @broker.subscriber(subjects.dead_letter("sync"), stream=JStream(subjects.DLQ_STREAM, declare=False))
    async def dead_letters(msg: NatsMessage) -> None:
        dead.append((msg.body, msg.headers["toolsel-reason"]))

    broker.context.set_global(STATE, IndexerState(SETTINGS, Untouched(), Untouched(), Untouched()))  # type: ignore[arg-type]
    async with TestNatsBroker(broker, connect_only=False) as test_broker:
        yield test_broker, dead


def _sync(plugin: str, credential: str | None = None) -> PluginSync:
    return PluginSync(
        plugin_id=plugin, plugin_version="1.0.0", credential=credential, tools=[ToolSpec(name="t", description="d")]
    )


async def test_a_malformed_sync_event_is_dead_lettered_with_its_reason(broker: Any) -> None:
    test_broker, dead = broker
    await test_broker.publish(b'{"plugin_id": "x"}', subjects.SYNC_EVENTS)
    assert len(dead) == 1
    assert dead[0][0] == b'{"plugin_id": "x"}'
    assert dead[0][1] == "Field required"


async def test_a_sync_event_with_a_wrong_credential_is_dead_lettered(broker: Any) -> None:
    test_broker, dead = broker
    await test_broker.publish(_sync("guarded", "wrong").model_dump_json().encode(), subjects.SYNC_EVENTS)
    assert [reason for _, reason in dead] == ["bad or missing credential for plugin 'guarded'"]


async def test_a_sync_request_with_a_wrong_credential_gets_a_typed_refusal(broker: Any) -> None:
    test_broker, _ = broker
    reply = await test_broker.request(_sync("guarded", "wrong").model_dump_json().encode(), subjects.SYNC, timeout=30)
    error = ErrorReply.model_validate_json(reply.body).error
    assert (error.code, error.field) == (ErrorCode.UNAUTHORIZED, "credential")


ONE_PER_AREA = {
    subjects.ADMIN_TOOLS_DELETE: {"plugin_id": "p", "name": "t"},
    subjects.ADMIN_EMBEDDINGS_RECOMPUTE: {"force": True},
    subjects.ADMIN_CATEGORIES_LIST: {},
    subjects.ADMIN_PAGE_MAPPINGS_CREATE: {"plugin_id": "p", "page_pattern": "/x*", "category": "c"},
    subjects.ADMIN_RULES_DELETE: {"id": 1},
}


@pytest.mark.parametrize("token", [None, "wrong-token"])
@pytest.mark.parametrize(("subject", "body"), ONE_PER_AREA.items())
async def test_admin_requests_without_the_token_are_refused(
    broker: Any, subject: str, body: dict[str, Any], token: str | None
) -> None:
    test_broker, _ = broker
    reply = await test_broker.request(json.dumps({**body, "admin_token": token}).encode(), subject, timeout=30)
    error = ErrorReply.model_validate_json(reply.body).error
    assert (error.code, error.field) == (ErrorCode.UNAUTHORIZED, "admin_token")
