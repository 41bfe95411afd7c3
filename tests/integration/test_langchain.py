"""The LangChain retriever against the real stack: the tools toolsel finds, as documents an agent can call them by."""

import pytest

from tests.integration.test_mcp import EMAIL, catalog
from toolsel.client import SyncToolselClient, ToolselClient
from toolsel.errors import InvalidRequest, NoStack
from toolsel.stack import Endpoints
from toolsel.tool_shapes import parameters_schema

pytest.importorskip("langchain_core", reason="the retriever needs the langchain extra")
from toolsel.integrations.langchain import ToolselRetriever


async def test_the_retriever_finds_tools_as_documents_with_their_name_and_schema(client: ToolselClient) -> None:
    tenant, plugin = await catalog(client)
    retriever = ToolselRetriever(client=client, k=3, request={"tenant_id": tenant, "explore": False})
    found = await retriever.ainvoke(EMAIL)
    assert len(found) == 3
    top = found[0]
    assert top.metadata["name"] == f"{plugin}__send_email"
    assert top.metadata["tool"] == f"{plugin}/send_email"
    assert top.metadata["description"] == "Send an email message to one or more recipients."
    assert top.page_content.startswith(top.metadata["description"])
    assert "Usage: Put the recipients in 'query'." in top.page_content
    assert top.metadata["schema"] == parameters_schema(
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    )
    assert len({d.metadata["selection_id"] for d in found}) == 1


async def test_the_retriever_over_the_sync_client_and_its_errors(client: ToolselClient, endpoints: Endpoints) -> None:
    tenant, plugin = await catalog(client)
    with SyncToolselClient(endpoints.nats_url) as sync:
        retriever = ToolselRetriever(client=sync, k=2, request={"tenant_id": tenant})
        found = retriever.invoke("what's the weather in Paris")
        assert found[0].metadata["name"] == f"{plugin}__get_weather"
        assert [d.metadata["tool"] for d in await retriever.ainvoke("what's the weather in Paris")][:1] == [
            f"{plugin}/get_weather"
        ]
        with pytest.raises(InvalidRequest, match="tier"):
            await ToolselRetriever(client=sync, request={"tenant_id": tenant, "tier": "no tier"}).ainvoke("x")
        one = ToolselRetriever(client=sync, k=3, request={"tenant_id": tenant, "k": 1, "max_tools": 1})
        assert len(one.invoke(EMAIL)) == len(await one.ainvoke(EMAIL)) == 1  # invoke raised TypeError
    with pytest.raises(TypeError, match="ainvoke"):
        ToolselRetriever(client=client).invoke(EMAIL)
    with pytest.raises(NoStack, match="inside 'with'"):  # a client never entered: invoke blocked for ever
        ToolselRetriever(client=SyncToolselClient(endpoints.nats_url)).invoke(EMAIL)
