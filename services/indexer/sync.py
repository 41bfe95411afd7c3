"""Applying a plugin sync: authorise, write the declaration in one transaction, embed, tell the selectors.

The writer (``write_plan``) is also how operators' tool writes reach the registry, so both go through the
same hashing, versions and review flags.
"""

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from toolsel.contracts import ErrorCode, PluginSync, SyncReport
from toolsel.contracts.identity import OPERATOR, Scope
from toolsel.contracts.names import lookalike_of, skeleton
from toolsel.contracts.registry import CATEGORIES_MAX, PAGE_MAPPINGS_MAX
from toolsel.messaging import RequestError
from toolsel.services.indexer.auth import authorise
from toolsel.services.indexer.diff import StoredTool, SyncPlan, added_names, plan_sync, split_by_tenant
from toolsel.services.indexer.hashing import embedding_hash
from toolsel.services.indexer.review import needs_review, status_after_update
from toolsel.services.indexer.state import IndexerState
from toolsel.store import catalog, registry
from toolsel.tenancy import tenant_for

log = logging.getLogger("toolsel.indexer")


@dataclass(frozen=True)
class Origin:
    """Who writes tools and in whose name: a plugin's sync or an operator's request."""

    plugin_id: str
    tenant_id: str
    plugin_version: str
    reason: str


async def stored_tools(conn: asyncpg.Connection, plugin_id: str) -> dict[str, StoredTool]:
    """The plugin's tools as the diff compares them, by name (deleted ones too)."""
    rows = await registry.stored_tools(conn, plugin_id)
    return {r["name"]: StoredTool(r["id"], r["content_hash"], r["deleted"], r["spec"], r["tenant_id"]) for r in rows}


async def write_plan(
    conn: asyncpg.Connection, origin: Origin, plan: SyncPlan, stored: dict[str, StoredTool], flagged_selectable: bool
) -> int:
    """Insert, update and soft-delete per the plan, each with a version snapshot (a deletion's too: the history
    says when and why a tool went, and a rollback to a version before it is seen to revive it), a few statements
    for the whole plan whatever its size; returns how many updates were flagged for review."""
    inserted = await registry.insert_tools(
        conn,
        origin.plugin_id,
        origin.tenant_id,
        origin.plugin_version,
        [(spec, digest, embedding_hash(spec)) for spec, digest in plan.insert],
    )
    current = await registry.review_states(conn, [u[0] for u in plan.update])
    by_id = {t.id: t for t in stored.values()}
    rewrites = []
    for tool_id, spec, digest, _ in plan.update:
        approved, status = current[tool_id]
        review = needs_review(by_id[tool_id].spec, spec, approved)
        status = status_after_update(status, review, flagged_selectable)
        rewrites.append(registry.ToolRewrite(tool_id, spec, digest, embedding_hash(spec), review, status))
    await registry.update_tools(conn, origin.tenant_id, origin.plugin_version, rewrites)
    if plan.delete:
        await registry.soft_delete(conn, plan.delete)
    versions = [(inserted[spec.name], ["created"], digest) for spec, digest in plan.insert]
    versions += [(tool_id, fields, digest) for tool_id, _, digest, fields in plan.update]
    versions += [(tool_id, ["deleted_at"], by_id[tool_id].content_hash) for tool_id in plan.delete]
    await registry.snapshot_versions(conn, versions, origin.reason)
    return sum(r.flag_review for r in rewrites)


def refuse_foreign(sync: PluginSync, others: Mapping[str, str]) -> None:
    """A sync may not take over a live tool that the plugin holds for another tenant (``conflict``); the error does
    not name that tenant, which the syncing one may not know of."""
    for i, spec in enumerate(sync.tools):
        if spec.name in others:
            raise RequestError(
                ErrorCode.CONFLICT,
                f"{sync.plugin_id}/{spec.name} is live for another tenant: choose another name",
                f"tools.{i}.name",
            )


async def refuse_lookalikes(conn: asyncpg.Connection, sync: PluginSync, owned: Mapping[str, StoredTool]) -> None:
    """A sync may not add a tool whose name looks like, without being, that of a live tool its tenant sees (another
    plugin's, or the plugin's shared one): an agent could not tell them apart (``conflict``, naming both). What the
    tenant sees is its own tools and the shared ones, every tenant's for a shared sync; so another tenant's private
    tools never block a tenant's sync, nor are named to it. The same name in another plugin is no look-alike: the
    plugin tells them apart."""
    added = added_names(sync.tools, owned)
    if not added:
        return
    await registry.lock_names(conn, [skeleton(name) for name in added.values()])
    visible = await registry.visible_names(conn, sync.plugin_id, sync.tenant_id)
    clash = lookalike_of(added, ((f"{plugin}/{name!a}", name) for plugin, name in visible))
    if clash is not None:
        at, other = clash
        raise RequestError(
            ErrorCode.CONFLICT,
            f"{sync.plugin_id}/{added[at]!a} looks like {other}, live in the catalog this sync's tenant sees"
            f" (both read {skeleton(added[at])!r}): an agent could not tell them apart, so choose another name;"
            " nothing was written",
            f"tools.{at}.name",
        )


def refuse_overgrown(plugin_id: str, categories: int, page_mappings: int) -> None:
    """A plugin holds no more categories and page mappings than one declaration may carry: a sync that only adds
    (another tenant's tools of the plugin are live) would otherwise grow them with each sync, for good (nothing
    written: the transaction is rolled back)."""
    for field, held, most in (
        ("categories", categories, CATEGORIES_MAX),
        ("page_mappings", page_mappings, PAGE_MAPPINGS_MAX),
    ):
        if held > most:
            raise RequestError(
                ErrorCode.INVALID_REQUEST,
                f"{plugin_id} would hold {held} {field.replace('_', ' ')}, more than a declaration may carry ({most}):"
                " declare the plugin's existing ones rather than new names; nothing was written",
                field,
            )


def repeated(sync: PluginSync, last: registry.AppliedSync | None, now: datetime, skew: timedelta) -> bool:
    """Whether ``sync`` was applied already (the same event delivered again: it changes nothing); refused
    (``conflict``) when it was made before the last one applied for the plugin and tenant, which it would revert (a
    sync event redelivered after a newer one). Syncs are ordered by their dates, so one dated beyond ``skew`` ahead
    of ``now`` is refused (``invalid_request``), and a last sync so dated, applied before that bound was kept, orders
    nothing: it would refuse every sync after it."""
    if sync.occurred_at > now + skew:
        raise RequestError(
            ErrorCode.INVALID_REQUEST,
            f"the sync is dated {sync.occurred_at.isoformat()}, more than {skew.total_seconds():g} s ahead of the"
            f" indexer's clock ({now.isoformat()}): check the sender's clock; nothing was written",
            "occurred_at",
        )
    if last is None or sync.event_id == last.event_id:
        return last is not None
    if sync.occurred_at < last.occurred_at <= now + skew:
        raise RequestError(
            ErrorCode.CONFLICT,
            f"a newer sync of {sync.plugin_id} was applied (made {last.occurred_at.isoformat()}); this one, made"
            f" {sync.occurred_at.isoformat()}, would revert it: nothing was written",
            "occurred_at",
        )
    return False


async def apply_sync(
    pool: asyncpg.Pool, sync: PluginSync, *, flagged_selectable: bool, clock_skew: timedelta
) -> tuple[SyncReport, bool]:
    """Write the declaration (tools, categories, page mappings) in one transaction, serialised per plugin, and
    say whether its categories or page mappings changed (a selector must hear of that as of a tool's change).
    The sync manages the plugin's tools of its own tenant only; while other tenants' tools of the plugin stay
    live, the categories and page mappings it lacks are added and those it has are kept as they are: one tenant's
    sync never rewrites the workflow hints another's answers carry. Embedding is a separate pass."""
    started = time.perf_counter()
    async with pool.acquire() as conn, conn.transaction():
        await registry.lock_plugin(conn, sync.plugin_id)
        last = await registry.last_sync(conn, sync.plugin_id, sync.tenant_id)
        if repeated(sync, last, datetime.now(UTC), clock_skew):
            return SyncReport(event_id=sync.event_id, plugin_id=sync.plugin_id, unchanged=len(sync.tools)), False
        applied = registry.AppliedSync(sync.event_id, sync.occurred_at)
        await registry.record_sync(conn, sync.plugin_id, sync.tenant_id, applied)
        owned, others = split_by_tenant(await stored_tools(conn, sync.plugin_id), sync.tenant_id)
        refuse_foreign(sync, others)
        await refuse_lookalikes(conn, sync, owned)
        plan = plan_sync(owned, sync.tools)
        origin = Origin(
            sync.plugin_id, sync.tenant_id, sync.plugin_version, f"sync {sync.plugin_id} {sync.plugin_version}"
        )
        flagged = await write_plan(conn, origin, plan, owned, flagged_selectable)
        sole_owner = not others
        described = await registry.described(conn, sync.plugin_id)
        await registry.replace_categories(conn, sync.plugin_id, sync.categories, sole_owner=sole_owner)
        await registry.replace_page_mappings(conn, sync.plugin_id, sync.page_mappings, sole_owner=sole_owner)
        if not sole_owner:
            refuse_overgrown(sync.plugin_id, *await registry.held_by_plugin(conn, sync.plugin_id))
        redescribed = await registry.described(conn, sync.plugin_id) != described
    report = SyncReport(
        event_id=sync.event_id,
        plugin_id=sync.plugin_id,
        inserted=len(plan.insert),
        updated=len(plan.update),
        unchanged=len(plan.unchanged),
        deleted=len(plan.delete),
        flagged=flagged,
        write_ms=(time.perf_counter() - started) * 1000,
    )
    return report, redescribed


async def run_sync(
    state: IndexerState, sync: PluginSync, payload: Mapping[str, Any], scope: Scope = OPERATOR
) -> SyncReport:
    """Authorise (against the payload as received, which is what a plugin signs), write, embed, and tell the
    selectors when anything changed. A refusal is logged and writes nothing. A tenant's identity (``scope``)
    syncs only for its own tenant and only with its plugin's credential; the operator as configured."""
    settings = state.settings
    try:
        tenant = tenant_for(scope, sync.tenant_id, "tenant_id" in payload)
        sync = sync if tenant == sync.tenant_id else sync.model_copy(update={"tenant_id": tenant})
        authorise(
            sync,
            settings.plugin_secrets,
            payload=payload,
            signed_plugins=settings.signed_plugins,
            require_credentials=settings.require_plugin_credentials or not scope.operator,
        )
    except RequestError as refused:
        log.warning("refused sync %s of plugin %s: %s", sync.event_id, sync.plugin_id, refused.detail.message)
        raise
    started = time.perf_counter()
    report, redescribed = await apply_sync(
        state.pool,
        sync,
        flagged_selectable=settings.flagged_tools_selectable,
        clock_skew=timedelta(seconds=settings.sync_clock_skew_s),
    )
    embedded = await state.embed(sync.plugin_id)
    took_ms = (time.perf_counter() - started) * 1000
    version = await catalog.catalog_version(state.pool)
    report = report.model_copy(update={"embedded": embedded, "duration_ms": took_ms, "catalog_version": version})
    state.syncs += 1
    if report.inserted or report.updated or report.deleted or embedded or redescribed:
        await state.changed(sync.plugin_id, "sync")
    log.info("sync %s: %s", sync.plugin_id, report.model_dump(exclude={"schema_version"}))
    return report
