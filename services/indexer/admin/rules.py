"""Admin ``rules.*``: the visibility rules the selectors' policy applies."""

from faststream.nats import NatsRouter

from contracts import ErrorCode, RuleCreate, RuleKey, RuleList, RuleQuery, RuleUpdate, VisibilityRule, subjects
from services.indexer.admin.area import AdminArea
from services.indexer.state import State
from toolsel.messaging import RequestError
from toolsel.store import registry


def _found(rule: VisibilityRule | None, rule_id: int) -> VisibilityRule:
    if rule is None:
        raise RequestError(ErrorCode.NOT_FOUND, f"no visibility rule {rule_id}", "id")
    return rule


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

    @area.handler(subjects.ADMIN_RULES_UPDATE, "Replace a visibility rule's fields.")
    async def rules_update(request: RuleUpdate, state: State) -> VisibilityRule:
        rule = _found(await registry.update_rule(state.pool, request.id, request.rule), request.id)
        await state.changed("*", "visibility rule updated")
        return rule

    @area.handler(subjects.ADMIN_RULES_DELETE, "Delete a visibility rule.")
    async def rules_delete(request: RuleKey, state: State) -> VisibilityRule:
        rule = _found(await registry.delete_rule(state.pool, request.id), request.id)
        await state.changed("*", "visibility rule deleted")
        return rule

    return area.router
