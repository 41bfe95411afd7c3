"""Health request/reply: ``toolsel status`` and container health checks use it."""

from pydantic import Field

from toolsel.contracts.common import Message


class HealthRequest(Message):
    pass


class HealthReply(Message):
    service: str
    status: str = "ok"
    version: str
    details: dict[str, str | int | float | bool] = Field(default_factory=dict)
