"""Admin ``page_mappings.*``: which pages bring in which categories. A plugin's next sync replaces its mappings
with what it declares."""

from faststream.nats import NatsRouter

from toolsel.contracts import ErrorCode, PageMapping, PageMappingList, PageMappingQuery, PageMappingWrite, subjects
from toolsel.messaging import RequestError
from toolsel.services.indexer.admin.area import AdminArea
from toolsel.services.indexer.records import check_category
from toolsel.services.indexer.state import State
from toolsel.store import registry


def _mapping(request: PageMappingWrite, priority: int) -> PageMapping:
    return PageMapping(
        plugin_id=request.plugin_id, page_pattern=request.page_pattern, category=request.category, priority=priority
    )


def router() -> NatsRouter:
    area = AdminArea(subjects.ADMIN_PAGE_MAPPINGS_PREFIX)

    @area.handler(subjects.ADMIN_PAGE_MAPPINGS_LIST, "Page-to-category mappings, highest priority first.")
    async def page_mappings_list(request: PageMappingQuery, state: State) -> PageMappingList:
        return PageMappingList(mappings=await registry.page_mappings(state.pool, request.plugin_id, request.category))

    @area.handler(subjects.ADMIN_PAGE_MAPPINGS_CREATE, "Map a page pattern to a category of a plugin.")
    async def page_mappings_create(request: PageMappingWrite, state: State) -> PageMapping:
        async with state.pool.acquire() as conn, conn.transaction():
            await registry.lock_plugin(conn, request.plugin_id)
            await check_category(conn, request.plugin_id, request.category, "category")
            priority = await registry.upsert_page_mapping(
                conn, request.plugin_id, request.page_pattern, request.category, request.priority
            )
        await state.changed(request.plugin_id, "page mapping created")
        return _mapping(request, priority)

    @area.handler(subjects.ADMIN_PAGE_MAPPINGS_DELETE, "Delete a page mapping (not_found when there is none).")
    async def page_mappings_delete(request: PageMappingWrite, state: State) -> PageMapping:
        async with state.pool.acquire() as conn, conn.transaction():
            await registry.lock_plugin(conn, request.plugin_id)
            priority = await registry.delete_page_mapping(
                conn, request.plugin_id, request.page_pattern, request.category
            )
        if priority is None:
            raise RequestError(
                ErrorCode.NOT_FOUND, f"no mapping of {request.page_pattern} to {request.category}", "page_pattern"
            )
        await state.changed(request.plugin_id, "page mapping deleted")
        return _mapping(request, priority)

    return area.router
