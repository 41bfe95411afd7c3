"""Admin ``rules.*``: the visibility rules the selectors' policy applies."""

import asyncpg
from faststream.nats import NatsRouter
from pydantic import ValidationError

from toolsel.contracts import (
    ErrorCode,
    RuleCreate,
    RuleFields,
    RuleKey,
    RuleList,
    RulePatch,
    RuleQuery,
    RuleUpdate,
    VisibilityRule,
    subjects,
)
from toolsel.messaging import RequestError, validation_reply
from toolsel.services.indexer.admin.area import AdminArea
from toolsel.services.indexer.state import State
from toolsel.store import registry


def _found(rule: VisibilityRule | None, rule_id: int) -> VisibilityRule:
    if rule is None:
        raise RequestError(ErrorCode.NOT_FOUND, f"no visibility rule {rule_id}", "id")
    return rule


def patched(rule: VisibilityRule, patch: RulePatch) -> RuleFields:
    """The rule with the fields the patch names changed and the others kept, validated as a whole rule."""
    fields = {**rule.model_dump(include=set(RuleFields.model_fields)), **patch.model_dump(exclude_none=True)}
    try:
        return RuleFields.model_validate(fields)
    except ValidationError as invalid:
        error = validation_reply(invalid).error
        field = f"rule.{error.field}" if error.field else "rule"
        raise RequestError(ErrorCode.INVALID_REQUEST, error.message, field) from invalid


async def update(pool: asyncpg.Pool, request: RuleUpdate) -> VisibilityRule:
    """Read the rule, patch it and write it back in one transaction (so two patches never lose each other's)."""
    async with pool.acquire() as conn, conn.transaction():
        rule = _found(await registry.locked_rule(conn, request.id), request.id)
        fields = patched(rule, request.rule)
        try:
            return _found(await registry.update_rule(conn, request.id, fields), request.id)
        except asyncpg.UniqueViolationError as clash:  # a tenant's own choice moved onto another of its choices
            message = f"tenant {fields.tenant_id!r} has its own choice on {fields.target} already"
            raise RequestError(ErrorCode.CONFLICT, message, "rule.target") from clash


def router() -> NatsRouter:
    area = AdminArea(subjects.ADMIN_RULES_PREFIX)

    @area.handler(subjects.ADMIN_RULES_LIST, "Visibility rules, highest priority first (active ones unless asked).")
    async def rules_list(request: RuleQuery, state: State) -> RuleList:
        return RuleList(rules=await registry.rules(state.pool, request.tenant_id, request.include_inactive))

    @area.handler(subjects.ADMIN_RULES_CREATE, "Create a visibility rule.")
    async def rules_create(request: RuleCreate, state: State) -> VisibilityRule:
        rule = await registry.insert_rule(state.pool, request.rule)
        await state.changed("*", "visibility rule created")
        return rule

    @area.handler(subjects.ADMIN_RULES_UPDATE, "Change the fields of a visibility rule that the request names.")
    async def rules_update(request: RuleUpdate, state: State) -> VisibilityRule:
        rule = await update(state.pool, request)
        await state.changed("*", "visibility rule updated")
        return rule

    @area.handler(subjects.ADMIN_RULES_DELETE, "Delete a visibility rule.")
    async def rules_delete(request: RuleKey, state: State) -> VisibilityRule:
        rule = _found(await registry.delete_rule(state.pool, request.id), request.id)
        await state.changed("*", "visibility rule deleted")
        return rule

    return area.router
