"""A sync in parts: the indexer joins exactly the announced parts into the announced whole; the client refuses a
sync over the limit before it sends anything."""

import hashlib
from uuid import uuid4

import pytest

from tests.integration.catalog import many_tools, plugin_sync
from toolsel.client import SyncTooLarge, ToolselClient
from toolsel.contracts import ErrorCode, SyncUpload
from toolsel.messaging import RequestError
from toolsel.services.indexer.uploads import joined

WHOLE = b'{"plugin_id": "mail", "tools": []}'


def _upload(parts: int, body: bytes = WHOLE) -> SyncUpload:
    return SyncUpload(upload_id=uuid4(), parts=parts, size=len(body), sha256=hashlib.sha256(body).hexdigest())


def test_the_parts_join_in_order() -> None:
    assert joined({1: WHOLE[10:], 0: WHOLE[:10]}, _upload(2)) == WHOLE


@pytest.mark.parametrize(
    ("parts", "field"),
    [({0: WHOLE[:10]}, "parts"), ({0: WHOLE[:10], 2: WHOLE[10:]}, "parts"), ({0: WHOLE[10:], 1: WHOLE[:10]}, "sha256")],
)
def test_a_missing_extra_or_reordered_part_is_refused(parts: dict[int, bytes], field: str) -> None:
    with pytest.raises(RequestError) as refused:
        joined(parts, _upload(2))
    assert (refused.value.detail.code, refused.value.detail.field) == (ErrorCode.INVALID_REQUEST, field)


async def test_a_sync_over_the_limit_is_refused_before_sending() -> None:
    client = ToolselClient("nats://127.0.0.1:9", sync_max_bytes=4096)  # never connected: nothing may be sent
    with pytest.raises(SyncTooLarge, match=r"over the limit of 4,096 \(TOOLSEL_SYNC_MAX_BYTES\)"):
        await client.sync(plugin_sync("mail", "*", many_tools(40)))
