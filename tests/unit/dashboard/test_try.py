"""The dashboard's "try it" page on the real app (its NATS connection not started, the admin client a fake that
keeps what it was asked): a k left empty is none, so the selector's ``TOOLSEL_DEFAULT_K`` applies."""

from uuid import uuid4

from fastapi.testclient import TestClient

from toolsel.contracts import SelectReply, SelectRequest, TokenEstimate
from toolsel.dashboard.app import create_app
from toolsel.settings import Settings

TOKEN = "right-token-0123456789"


class Selector:
    """A fake admin client: each select request it was sent."""

    def __init__(self) -> None:
        self.asked: list[SelectRequest] = []

    async def select(self, request: SelectRequest) -> SelectReply:
        self.asked.append(request)
        tokens = TokenEstimate(selected=0, catalog=0, saved=0)
        return SelectReply(selection_id=uuid4(), tools=[], context_key="k", method="m", tokens=tokens, latency_ms=1.0)


def test_an_empty_k_leaves_the_answer_size_to_the_selector() -> None:
    app = create_app(Settings(), "nats://127.0.0.1:1", TOKEN)
    app.state.client = selector = Selector()
    client = TestClient(app)
    signed = {"authorization": f"Bearer {TOKEN}"}
    for asked in ("/try?query=weather", "/try?query=weather&k=", "/try?query=weather&k=3"):
        assert client.get(asked, headers=signed).status_code == 200, asked
    assert [r.k for r in selector.asked] == [None, None, 3]
    assert all(r.dry_run for r in selector.asked)
