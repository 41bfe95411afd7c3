"""The gateway's rules without a server: which declared servers it may reach, what it lists, and the contract of
an ``mcp`` tool's declaration."""

from typing import Any
from uuid import uuid4

import pytest
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from toolsel.contracts import ScoreBreakdown, ScoredTool, ToolSpec
from toolsel.contracts.execution import HttpServer, StdioServer
from toolsel.mcp.gateway import CallableTools, Gateway, failure_text, result_fault, url_allowed
from toolsel.settings import Settings

ALLOWED = [["python3", "/opt/servers/weather.py"]]


def gateway(**settings: Any) -> Gateway:
    return Gateway(
        Settings(**{"gateway_commands": ALLOWED, "gateway_urls": ["https://mcp.example.com/tools"]} | settings)
    )


def found(name: str, config: dict[str, Any], execution_type: str = "mcp") -> ScoredTool:
    return ScoredTool(
        plugin_id="weather",
        name=name,
        description="Weather.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        score=1.0,
        breakdown=ScoreBreakdown(),
        execution_type=execution_type,  # type: ignore[arg-type]
        execution_config=config,
    )


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://mcp.example.com/tools", True),
        ("https://mcp.example.com/tools/weather", True),
        ("https://mcp.example.com/toolsmith", False),
        ("https://mcp.example.com.evil.net/tools", False),
        ("http://mcp.example.com/tools", False),
        ("https://mcp.example.com:8443/tools", False),
        ("https://mcp.example.com/", False),
        ("https://mcp.example.com:443/tools/weather", True),  # the port httpx sends to
        ("https://MCP.example.com/%74ools/weather", True),  # the path a server reads
        ("https://mcp.example.com:port/tools", False),  # not a URL httpx can send
        ("https://mcp.example.com/tools/../admin", False),  # httpx sends /admin
        ("https://mcp.example.com/tools/%2e%2E/admin", False),
        ("https://mcp.example.com/tools/.%2e/admin", False),
        ("https://mcp.example.com/tools%2F..%2Fadmin", False),
        ("https://mcp.example.com/tools/%252e%252e/admin", False),
        ("https://mcp.example.com/tools/./weather", False),
        ("https://mcp.example.com/tools/x\\..\\..\\admin", False),
        ("https://mcp.example.com/tools/..weather", True),  # a name, not a segment
    ],
)
def test_a_url_is_allowed_only_under_an_allowed_one(url: str, allowed: bool) -> None:
    assert url_allowed(url, ["https://mcp.example.com/tools"]) is allowed


def test_a_failure_reads_as_its_cause_not_the_exception_groups_around_it() -> None:
    refused = ConnectionRefusedError("connection refused")
    wrapped = ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", [refused])])
    assert failure_text(wrapped) == "ConnectionRefusedError: connection refused"
    both = ExceptionGroup("unhandled errors in a TaskGroup", [refused, TimeoutError()])
    assert failure_text(both) == "ConnectionRefusedError: connection refused; TimeoutError"


def test_an_answer_is_a_failure_when_the_tool_says_so_or_it_is_larger_than_the_limit() -> None:
    def answer(text: str, is_error: bool = False) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)

    assert result_fault(answer("sunny"), max_bytes=1024) is None
    assert result_fault(answer("down", is_error=True), max_bytes=1024) == "down"
    assert result_fault(answer("", is_error=True), max_bytes=1024) == "the tool failed"
    fault = str(result_fault(answer("x" * 2000), max_bytes=1024))
    assert fault.startswith("the tool's answer is 20")
    assert fault.endswith("more than the gateway passes back (1024 bytes, TOOLSEL_GATEWAY_RESULT_MAX_BYTES)")


def test_a_command_is_started_only_when_it_begins_with_an_allowed_one() -> None:
    gate = gateway()
    assert gate.refusal(StdioServer(transport="stdio", command=[*ALLOWED[0], "--verbose"], tool="t")) is None
    assert "TOOLSEL_GATEWAY_COMMANDS" in str(
        gate.refusal(StdioServer(transport="stdio", command=["python3"], tool="t"))
    )
    refused = StdioServer(transport="stdio", command=["python3", "-c", "import os"], tool="t")
    assert gate.refusal(refused) is not None
    assert gateway(gateway_commands=[]).refusal(StdioServer(transport="stdio", command=ALLOWED[0], tool="t"))
    assert "TOOLSEL_GATEWAY_URLS" in str(gate.refusal(HttpServer(transport="http", url="https://x.org/mcp", tool="t")))


def test_only_tools_declaring_a_reachable_mcp_server_are_proxied_under_their_function_name() -> None:
    gate, selection = gateway(), uuid4()
    served = gate.proxied(found("forecast", {"transport": "stdio", "command": ALLOWED[0], "tool": "fc"}), selection)
    assert served is not None
    assert (served.listed.name, served.server.tool, served.selection_id) == ("weather__forecast", "fc", selection)
    assert served.listed.input_schema["properties"] == {"city": {"type": "string"}}
    assert gate.proxied(found("rest", {"url": "https://x"}, "rest"), selection) is None
    assert gate.proxied(found("old", {"command": "x"}), selection) is None  # stored before declarations were checked
    assert gate.proxied(found("far", {"transport": "http", "url": "https://x.org/mcp", "tool": "t"}), selection) is None


def test_the_callable_list_keeps_the_latest_selection_and_moves_only_on_change() -> None:
    gate, tools = gateway(), CallableTools(limit=2)
    config = {"transport": "stdio", "command": ALLOWED[0], "tool": "t"}
    first, second = uuid4(), uuid4()
    a, b, c = (gate.proxied(found(name, config), first) for name in ("a", "b", "c"))
    assert a is not None
    assert b is not None
    assert c is not None
    tools.add([a, b])
    assert tools.version == 1
    again = gate.proxied(found("a", config), second)
    assert again is not None
    tools.add([again])
    assert tools.version == 1  # the same names: no change to announce
    found_a = tools.get("weather__a")
    assert found_a is not None
    assert found_a.selection_id == second
    tools.add([c])
    assert [t.name for t in tools.listed()] == ["weather__a", "weather__c"]  # b was the least recently found
    assert tools.version == 2


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({}, "execution_config"),
        ({"transport": "stdio", "command": [], "tool": "t"}, "execution_config.command"),
        ({"transport": "stdio", "command": ["x"]}, "execution_config.tool"),
        ({"transport": "http", "url": "file:///etc/passwd", "tool": "t"}, "execution_config.url"),
        ({"transport": "http", "url": "https://x/mcp/../admin", "tool": "t"}, "execution_config.url"),
        ({"transport": "http", "url": "https://x/mcp/%2E%2e/admin?q", "tool": "t"}, "execution_config.url"),
        ({"transport": "http", "url": "https://x/./mcp", "tool": "t"}, "execution_config.url"),
        ({"transport": "ftp", "url": "x", "tool": "t"}, "execution_config"),
        ({"transport": "http", "url": "https://x", "tool": "t", "token": "s"}, "execution_config.token"),
    ],
)
def test_an_mcp_tool_declaring_no_server_it_can_be_called_on_is_refused_with_the_path(
    config: dict[str, Any], where: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        ToolSpec(name="t", description="d", execution_type="mcp", execution_config=config)
    assert f"{where}:" in str(refused.value)
    assert (
        ToolSpec(name="t", description="d", execution_type="rest", execution_config=config).execution_config == config
    )


def test_an_http_servers_url_with_dot_segments_is_refused_with_its_own_error() -> None:
    with pytest.raises(ValidationError) as refused:
        HttpServer(transport="http", url="https://mcp.example.com/tools/%2e%2e/admin", tool="t")
    (error,) = refused.value.errors()
    assert (error["type"], error["loc"]) == ("url_dot_segments", ("url",))
    assert "may not have . or .. segments" in error["msg"]
    assert HttpServer(transport="http", url="https://mcp.example.com/tools/v1.2/..x", tool="t")
