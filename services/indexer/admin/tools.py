"""Admin ``tools.*``: tool records, history, approval, rollback and operators' writes. A write that changes what
selectors see re-embeds what it changed and tells them."""

import logging

from faststream.nats import NatsRouter

from toolsel.contracts import (
    PluginList,
    PluginQuery,
    RollbackReport,
    RollbackRequest,
    ToolDetail,
    ToolKey,
    ToolList,
    ToolQuery,
    ToolRegister,
    ToolUpdate,
    ToolVersions,
    ToolWriteReport,
    subjects,
)
from toolsel.services.indexer import records
from toolsel.services.indexer.admin.area import AdminArea
from toolsel.services.indexer.state import State
from toolsel.store import registry

log = logging.getLogger("toolsel.indexer")


async def _written(state: State, report: ToolWriteReport, reason: str) -> ToolWriteReport:
    """After an operator's tool write, as after a sync: embed what changed and tell the selectors."""
    embedded = await state.embed(report.tool.plugin_id)
    await state.changed(report.tool.plugin_id, reason, [report.tool.name])
    key = ToolKey(plugin_id=report.tool.plugin_id, name=report.tool.name)
    tool = (await records.show_tool(state.pool, key)).tool
    return report.model_copy(update={"embedded": embedded, "tool": tool})


def router() -> NatsRouter:
    area = AdminArea(subjects.ADMIN_TOOLS_PREFIX)

    @area.handler(
        subjects.ADMIN_TOOLS_LIST,
        "List a page of tools, filtered by plugin, status, review flag and name, and count them.",
    )
    async def tools_list(request: ToolQuery, state: State) -> ToolList:
        tools, total = await registry.list_tools(state.pool, request)
        return ToolList(tools=tools, total=total)

    @area.handler(
        subjects.ADMIN_TOOLS_PLUGINS, "Every plugin with tools: its version, live, flagged and deleted tools."
    )
    async def tools_plugins(request: PluginQuery, state: State) -> PluginList:
        return PluginList(plugins=await registry.plugins(state.pool))

    @area.handler(subjects.ADMIN_TOOLS_SHOW, "One tool's record and declared spec (not_found for an unknown tool).")
    async def tools_show(request: ToolKey, state: State) -> ToolDetail:
        return await records.show_tool(state.pool, request)

    @area.handler(
        subjects.ADMIN_TOOLS_VERSIONS, "A tool's version history, each entry with its diff from the one before."
    )
    async def tools_versions(request: ToolKey, state: State) -> ToolVersions:
        return await records.tool_versions(state.pool, request)

    @area.handler(
        subjects.ADMIN_TOOLS_APPROVE, "Approve a tool: clears its review flag and brings a held-back tool back."
    )
    async def tools_approve(request: ToolKey, state: State) -> ToolDetail:
        detail = await records.approve(state.pool, request)
        await state.changed(request.plugin_id, "approved", [request.name])
        return detail

    @area.handler(
        subjects.ADMIN_TOOLS_ROLLBACK, "Restore a tool to a version (a new version entry), re-embed, notify selectors."
    )
    async def tools_rollback(request: RollbackRequest, state: State) -> RollbackReport:
        report = await records.rollback(state.pool, request)
        if not report.changed_fields:
            return report
        embedded = await state.embed(request.plugin_id)
        await state.changed(request.plugin_id, f"rollback to v{request.version}", [request.name])
        tool = (await records.show_tool(state.pool, ToolKey(plugin_id=request.plugin_id, name=request.name))).tool
        log.info("rollback %s/%s to v%d as v%d", request.plugin_id, request.name, request.version, report.new_version)
        return report.model_copy(update={"embedded": embedded, "tool": tool})

    @area.handler(
        subjects.ADMIN_TOOLS_REGISTER, "Register a tool as a sync would (hash, version, embedding); conflict if live."
    )
    async def tools_register(request: ToolRegister, state: State) -> ToolWriteReport:
        report = await records.register_tool(state.pool, request, state.settings.flagged_tools_selectable)
        return await _written(state, report, "admin register")

    @area.handler(
        subjects.ADMIN_TOOLS_UPDATE, "Change fields of a tool's spec: a new version, re-embedded when needed."
    )
    async def tools_update(request: ToolUpdate, state: State) -> ToolWriteReport:
        report = await records.update_tool(state.pool, request, state.settings.flagged_tools_selectable)
        return await _written(state, report, "admin update") if report.changed_fields else report

    @area.handler(subjects.ADMIN_TOOLS_DELETE, "Soft-delete a tool (a plugin's next sync that declares it revives it).")
    async def tools_delete(request: ToolKey, state: State) -> ToolWriteReport:
        report = await records.delete_tool(state.pool, request)
        await state.changed(request.plugin_id, "admin delete", [request.name])
        return report

    return area.router
