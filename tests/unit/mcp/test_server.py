"""The discovery tools take the contracts' query, page and identifier types: their limits are the select request's,
and an agent that fills the optional session in with "" still starts a new session."""

from typing import Any

from mcp import Client
from pydantic import TypeAdapter

from tests.unit.mcp.stack import Stack
from tests.unit.mcp.test_http import callable_forecast
from toolsel.contracts.common import Identifier
from toolsel.contracts.selection import QUERY_MAX, Page
from toolsel.mcp.server import create_server
from toolsel.mcp.sessions import Sessions
from toolsel.mcp.toolshed import Toolshed


def _arguments(tools: list[Any], name: str) -> dict[str, Any]:
    properties: dict[str, Any] = next(t for t in tools if t.name == name).input_schema["properties"]
    return properties


async def test_the_tools_arguments_carry_the_contracts_limits() -> None:
    identifier = TypeAdapter(Identifier).json_schema()["pattern"]
    async with Client(create_server(Toolshed(Stack(callable_forecast), Sessions(10, 600)))) as agent:  # type: ignore[arg-type]
        tools = (await agent.list_tools()).tools
    search = _arguments(tools, "search_tools")
    assert (search["query"]["minLength"], search["query"]["maxLength"]) == (1, QUERY_MAX)
    assert search["app_page"]["maxLength"] == TypeAdapter(Page).json_schema()["maxLength"]
    assert search["session"]["anyOf"][0]["pattern"] == identifier
    for name in ("review_tools", "report_outcome"):
        assert _arguments(tools, name)["session"]["pattern"] == identifier


async def test_an_empty_session_starts_a_new_one_and_a_malformed_one_is_refused() -> None:
    async with Client(create_server(Toolshed(Stack(callable_forecast), Sessions(10, 600)))) as agent:  # type: ignore[arg-type]
        found = await agent.call_tool("search_tools", {"query": "weather in Rome", "session": ""})
        refused = await agent.call_tool("review_tools", {"session": "not a session", "none_of_these": True})
    assert not found.is_error
    assert isinstance(found.structured_content, dict)
    assert found.structured_content["session"]
    assert refused.is_error
