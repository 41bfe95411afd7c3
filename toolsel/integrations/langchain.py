"""A LangChain retriever over the client: ``ToolselRetriever(client=client, request={"tenant_id": "acme"})``
finds the tools for a query as ``Document``s (the optional extra ``langchain``). Each document's text is the
tool's description (with its usage hint); its metadata carry what an agent needs to call the tool and to report
how the call went: the function name, the tool's identity, its parameters schema and the selection it came from."""

import asyncio
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from toolsel.client import SyncToolselClient, ToolselClient
from toolsel.contracts import SelectReply
from toolsel.tool_shapes import description, function_name, parameters_schema


def documents(reply: SelectReply) -> list[Document]:
    """One document per tool of the reply, best first."""
    return [
        Document(
            page_content=description(tool),
            metadata={
                "name": function_name(tool),
                "tool": tool.key,
                "plugin_id": tool.plugin_id,
                "description": tool.description,
                "schema": parameters_schema(tool.parameters),
                "score": tool.score,
                "confidence": tool.confidence,
                "selection_id": str(reply.selection_id),
                "server": tool.server,
                "execution_type": tool.execution_type,
                "execution_config": tool.execution_config,
            },
        )
        for tool in reply.tools
    ]


class ToolselRetriever(BaseRetriever):
    """The tools toolsel selects for a query. ``invoke`` needs a ``SyncToolselClient``; ``ainvoke`` takes either
    client. ``request``: further ``SelectRequest`` fields (``tenant_id`` for the operator, ``tier``, ``page``,
    ``explore``, ``filters``, ...)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: ToolselClient | SyncToolselClient
    k: int = Field(default=5, ge=1, le=50)
    """How many tools at most."""
    request: dict[str, Any] = Field(default_factory=dict)

    def _fields(self, query: str) -> dict[str, Any]:
        """The select's fields: ``request``'s win over the retriever's ``k``."""
        return {"query": query, "k": self.k, "max_tools": self.k, **self.request}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if not isinstance(self.client, SyncToolselClient):
            raise TypeError("a ToolselClient answers ainvoke only: use ainvoke, or give a SyncToolselClient")
        return documents(self.client.select(**self._fields(query)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        fields = self._fields(query)
        if isinstance(self.client, SyncToolselClient):  # its loop is its own thread's
            return documents(await asyncio.to_thread(self.client.select, **fields))
        return documents(await self.client.select(**fields))
