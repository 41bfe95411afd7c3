"""An admin area's router: handlers subscribe by their full subject (from ``toolsel.contracts.subjects``) under the
area's prefix, each behind the admin-token check, in the indexer's queue group."""

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from faststream.nats import NatsRouter

from toolsel.contracts import AdminRequest, subjects
from toolsel.messaging import check_admin
from toolsel.services.indexer.state import IndexerState

Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])


class AdminArea:
    """One area of the registry admin API (tools, embeddings, categories, ...)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.router = NatsRouter(prefix=prefix)

    def handler(self, subject: str, description: str) -> Callable[[Handler], Handler]:
        """Register ``handler(request, state)`` for ``subject``; a request without the admin token is refused
        (``unauthorized``) before it runs."""
        if not subject.startswith(self.prefix):
            raise ValueError(f"{subject} is not under {self.prefix}")

        def register(handler: Handler) -> Handler:
            @functools.wraps(handler)
            async def checked(request: AdminRequest, state: IndexerState) -> Any:
                check_admin(request.admin_token, state.settings.admin_token)
                return await handler(request, state)

            self.router.subscriber(
                subject.removeprefix(self.prefix),
                queue=subjects.INDEXER_QUEUE,
                title=subject.removeprefix(f"{subjects.RPC_PREFIX}."),
                description=description,
            )(checked)
            return handler

        return register
