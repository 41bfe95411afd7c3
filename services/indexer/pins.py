"""A tenant's own pins (``subjects.PINS_ROOT``): list, pin, unpin or clear a tool for the sender's tenant, never
another's (``tenant_for``). The choices are pin and unpin rules of origin ``tenant``, one per tool; a tenant
changes no other rule. The selectors reload them on the registry broadcast, like the operator's rules."""

import asyncpg
from faststream.nats import NatsRouter
from faststream.nats.annotations import NatsMessage as RequestMessage

from toolsel.contracts import ErrorCode, PinChoice, PinList, PinRequest, subjects
from toolsel.messaging import RequestError
from toolsel.services.indexer.state import State
from toolsel.store import registry
from toolsel.tenancy import sender, tenant_for


def router() -> NatsRouter:
    pins = NatsRouter()

    @pins.subscriber(
        subjects.any_scope(subjects.PINS_ROOT),
        queue=subjects.INDEXER_QUEUE,
        title="pins",
        description=(
            "List, pin, unpin or clear a tool for the sender's own tenant (the operator's names one); replies with"
            " the tenant's pins as they stand, or a typed error that changed nothing."
        ),
    )
    async def pins_request(request: PinRequest, msg: RequestMessage, state: State) -> PinList:
        scope = sender(msg.raw_message.subject, subjects.PINS_ROOT)
        tenant = tenant_for(scope, request.tenant_id, "tenant_id" in request.model_fields_set)
        changed = await apply(state.pool, tenant, request, state.settings.tenant_pins_max)
        if changed:
            await state.changed("*", f"pins of tenant {tenant} changed")
        return await pin_list(state.pool, tenant, changed)

    return pins


async def apply(pool: asyncpg.Pool, tenant: str, request: PinRequest, most: int) -> bool:
    """Carry out the request for ``tenant`` in one transaction; whether it changed the tenant's pins. A tool the
    tenant does not see is ``not_found``; a new choice past ``most`` is a ``conflict``."""
    if request.action == "list":
        return False
    async with pool.acquire() as conn, conn.transaction():
        await registry.lock_tenant_pins(conn, tenant)
        if request.action == "clear" and await registry.clear_tenant_choice(conn, tenant, request.key):
            return True
        if not await registry.tenant_sees(conn, tenant, str(request.plugin_id), str(request.name)):
            raise RequestError(ErrorCode.NOT_FOUND, f"tenant {tenant!r} has no tool {request.key}", "name")
        if request.action == "clear":
            return False
        chosen = {r["target"] for r in await registry.tenant_choices(conn, tenant)}
        if request.key not in chosen and len(chosen) >= most:
            raise RequestError(
                ErrorCode.CONFLICT,
                f"tenant {tenant!r} has pinned or unpinned {len(chosen)} tools, the most it may"
                " (TOOLSEL_TENANT_PINS_MAX): clear one first",
                "name",
            )
        return await registry.set_tenant_choice(conn, tenant, request.key, request.action == "pin")


async def pin_list(pool: asyncpg.Pool, tenant: str, changed: bool) -> PinList:
    """The tenant's own choices and the pins its plugins declare."""
    choices = []
    for row in await registry.tenant_choices(pool, tenant):
        plugin_id, _, name = row["target"].partition("/")
        choices.append(PinChoice(plugin_id=plugin_id, name=name, pinned=row["pinned"], made_at=row["created_at"]))
    return PinList(
        tenant_id=tenant, choices=choices, declared=await registry.declared_pins(pool, tenant), changed=changed
    )
