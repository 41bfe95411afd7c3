"""Publishing an event durably gets the stream's ack, never a reply from a service listening on the subject."""

from uuid import uuid4

import pytest

from toolsel.client import ToolselClient
from toolsel.contracts import OutcomeEvent, SelectedTool, SelectionEvent, subjects


@pytest.mark.parametrize("subject", [subjects.SELECTION_EVENTS, subjects.OUTCOME_EVENTS])
async def test_every_durable_publish_is_acked_by_the_stream(client: ToolselClient, subject: str) -> None:
    js = client.nc.jetstream()
    for _ in range(30):
        selection_id = uuid4()
        event = (
            SelectionEvent(
                selection_id=selection_id,
                tenant_id="ack-test",
                query="q",
                tier="free",
                context_key="free:*:general",
                method="vector",
                tools=[SelectedTool(plugin_id="p", name="t", rank=0, score=0.1)],
                candidate_count=1,
                latency_ms=1.0,
                tokens_selected=1,
                tokens_catalog=1,
            )
            if subject == subjects.SELECTION_EVENTS
            else OutcomeEvent(selection_id=selection_id)
        )
        ack = await js.publish(subject, event.model_dump_json().encode())
        assert ack.stream == subjects.EVENTS_STREAM
