"""A stand-in for the operator's client as the toolsheds use it: each search answers the one tool ``found`` makes
of the request, and outcome reports are kept to be read."""

from collections.abc import Callable
from uuid import uuid4

from toolsel.contracts import OutcomeEvent, ScoredTool, SelectReply, SelectRequest, TokenEstimate
from toolsel.contracts.identity import Scope


class Stack:
    def __init__(self, found: Callable[[SelectRequest], ScoredTool]) -> None:
        self.found = found
        self.reported: list[OutcomeEvent] = []

    async def report_outcome(self, event: OutcomeEvent) -> None:
        self.reported.append(event)

    def acting_as(self, scope: Scope) -> "Stack":
        return self

    async def select(self, request: SelectRequest) -> SelectReply:
        tokens = TokenEstimate(selected=1, catalog=1, saved=0)
        return SelectReply(
            selection_id=uuid4(),
            tools=[self.found(request)],
            context_key="k",
            method="m",
            tokens=tokens,
            latency_ms=1.0,
        )
