"""``toolsel admin``: categories, page mappings, visibility rules, test selections and quarantine (admin
requests carry ``TOOLSEL_ADMIN_TOKEN`` from the environment)."""

import json
from typing import Annotated

import typer
from rich.tree import Tree

from cli.running import USAGE, AsJson, Format, Output, chosen, fail, request, show_rows, validated
from contracts import QuarantineRelease, SelectReply, SelectRequest, ToolStateChanged, subjects
from contracts.admin import (
    CategoryNode,
    CategoryQuery,
    CategoryTree,
    PageCategories,
    PageMapping,
    PageMappingList,
    PageMappingQuery,
    PageMappingWrite,
    PageQuery,
    QuarantineList,
    QuarantineQuery,
    RuleCreate,
    RuleFields,
    RuleKey,
    RuleList,
    RuleQuery,
    RuleUpdate,
    VisibilityRule,
)
from toolsel.render import EXPLAIN, console, selection_table

app = typer.Typer(help="Categories, page mappings, visibility rules, test selections, quarantine.")
mappings_app = typer.Typer(help="Page-to-category mappings.", no_args_is_help=True)
rules_app = typer.Typer(help="Visibility rules (who sees which tool or category).", no_args_is_help=True)
quarantine_app = typer.Typer(help="Quarantined tools.", no_args_is_help=True)
app.add_typer(mappings_app, name="page-mappings")
app.add_typer(rules_app, name="rules")
app.add_typer(quarantine_app, name="quarantine")


# categories and page mappings


def _branch(tree: Tree, node: CategoryNode) -> None:
    hint = f"  [dim]{node.workflow_hint}[/]" if node.workflow_hint else ""
    branch = tree.add(f"{node.name}{hint}")
    for child in node.children:
        _branch(branch, child)


@app.command("categories")
def categories(
    plugin: Annotated[str | None, typer.Option(help="only this plugin's")] = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Categories as a tree, per plugin."""

    def show(reply: CategoryTree) -> None:
        plugins: dict[str, Tree] = {}
        for node in reply.categories:
            _branch(plugins.setdefault(node.plugin_id, Tree(f"[bold]{node.plugin_id}[/]")), node)
        for tree in plugins.values():
            console.print(tree)

    body = validated(CategoryQuery, {"plugin_id": plugin}, "categories")

    request(
        lambda c: c.admin(subjects.ADMIN_CATEGORIES_LIST, body, CategoryTree),
        chosen(as_json, fmt),
        show,
        rows="categories",
    )


@app.command("page-categories")
def page_categories(page: str, fmt: Output = Format.table, as_json: AsJson = False) -> None:
    """The categories PAGE brings in (what the selector's page filter keeps)."""
    body = validated(PageQuery, {"page": page}, "page-categories")
    request(
        lambda c: c.admin(subjects.ADMIN_CATEGORIES_FOR_PAGE, body, PageCategories),
        chosen(as_json, fmt),
        show_rows(f"categories for {page}", "categories"),
        rows="categories",
    )


@mappings_app.command("list")
def mappings_list(
    plugin: Annotated[str | None, typer.Option()] = None,
    category: Annotated[str | None, typer.Option()] = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Page mappings, highest priority first."""
    body = validated(PageMappingQuery, {"plugin_id": plugin, "category": category}, "page mappings")
    request(
        lambda c: c.admin(subjects.ADMIN_PAGE_MAPPINGS_LIST, body, PageMappingList),
        chosen(as_json, fmt),
        show_rows("page mappings", "mappings"),
        rows="mappings",
    )


@mappings_app.command("create")
def mappings_create(plugin: str, pattern: str, category: str, priority: int = 0, as_json: AsJson = False) -> None:
    """Map PATTERN (/exact, /prefix*, *suffix, *contains*) to PLUGIN's CATEGORY."""
    body = validated(
        PageMappingWrite,
        {"plugin_id": plugin, "page_pattern": pattern, "category": category, "priority": priority},
        "page mapping",
    )
    request(lambda c: c.admin(subjects.ADMIN_PAGE_MAPPINGS_CREATE, body, PageMapping), chosen(as_json), console.print)


@mappings_app.command("delete")
def mappings_delete(plugin: str, pattern: str, category: str, as_json: AsJson = False) -> None:
    """Delete a page mapping."""
    body = validated(
        PageMappingWrite, {"plugin_id": plugin, "page_pattern": pattern, "category": category}, "page mapping"
    )
    request(lambda c: c.admin(subjects.ADMIN_PAGE_MAPPINGS_DELETE, body, PageMapping), chosen(as_json), console.print)


# visibility rules


def _rule(
    rule_type: str,
    effect: str,
    target_kind: str,
    target: str,
    conditions: str,
    priority: int,
    tenant: str,
    active: bool,
) -> RuleFields:
    try:
        parsed = json.loads(conditions)
    except json.JSONDecodeError as error:
        fail(f"--conditions: not JSON ({error})", USAGE)
    fields = {
        "tenant_id": tenant,
        "rule_type": rule_type,
        "effect": effect,
        "target_kind": target_kind,
        "target": target,
        "conditions": parsed,
        "priority": priority,
        "active": active,
    }
    return validated(RuleFields, fields, "rule")


RuleType = Annotated[str, typer.Option("--type", help="org, user, page, role, tier or composite")]
Effect = Annotated[str, typer.Option(help="allow or deny")]
TargetKind = Annotated[str, typer.Option(help="tool (plugin/name) or category (plugin/category)")]
Conditions = Annotated[str, typer.Option(help='JSON, e.g. {"tier": {"gte": "teams"}}')]
Tenant = Annotated[str, typer.Option(help="tenant the rule applies to, * for all")]


@rules_app.command("list")
def rules_list(
    tenant: Annotated[str | None, typer.Option()] = None,
    inactive: Annotated[bool, typer.Option("--all", help="include inactive rules")] = False,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Visibility rules, highest priority first."""
    body = validated(RuleQuery, {"tenant_id": tenant, "include_inactive": inactive}, "rules")
    request(
        lambda c: c.admin(subjects.ADMIN_RULES_LIST, body, RuleList),
        chosen(as_json, fmt),
        show_rows("visibility rules", "rules"),
        rows="rules",
    )


@rules_app.command("create")
def rules_create(
    rule_type: RuleType,
    effect: Effect,
    target_kind: TargetKind,
    target: str,
    conditions: Conditions = "{}",
    priority: int = 0,
    tenant: Tenant = "*",
    active: bool = True,
    as_json: AsJson = False,
) -> None:
    """Create a visibility rule for TARGET."""
    body = RuleCreate(rule=_rule(rule_type, effect, target_kind, target, conditions, priority, tenant, active))
    request(lambda c: c.admin(subjects.ADMIN_RULES_CREATE, body, VisibilityRule), chosen(as_json), console.print)


@rules_app.command("update")
def rules_update(
    rule_id: int,
    rule_type: RuleType,
    effect: Effect,
    target_kind: TargetKind,
    target: str,
    conditions: Conditions = "{}",
    priority: int = 0,
    tenant: Tenant = "*",
    active: bool = True,
    as_json: AsJson = False,
) -> None:
    """Replace the fields of rule RULE_ID."""
    rule = _rule(rule_type, effect, target_kind, target, conditions, priority, tenant, active)
    body = RuleUpdate(id=rule_id, rule=rule)
    request(lambda c: c.admin(subjects.ADMIN_RULES_UPDATE, body, VisibilityRule), chosen(as_json), console.print)


@rules_app.command("delete")
def rules_delete(rule_id: int, as_json: AsJson = False) -> None:
    """Delete rule RULE_ID."""
    body = RuleKey(id=rule_id)
    request(lambda c: c.admin(subjects.ADMIN_RULES_DELETE, body, VisibilityRule), chosen(as_json), console.print)


# test selection and quarantine


@app.command("test-selection")
def dry_run_selection(
    query: str,
    page: str = "",
    tenant: str = "default",
    tier: str = "free",
    role: str | None = None,
    user: str | None = None,
    k: int | None = None,
    as_json: AsJson = False,
) -> None:
    """A dry run (nothing recorded) with every part of each score."""
    fields = {"query": query, "page": page, "tenant_id": tenant, "tier": tier, "role": role, "user_id": user, "k": k}
    body = validated(SelectRequest, fields | {"dry_run": True}, "test-selection")

    def show(reply: SelectReply) -> None:
        console.print(selection_table(reply, query, EXPLAIN, k))
        console.print(f"[dim]method {reply.method}; degraded: {', '.join(reply.degraded) or 'nothing'}[/]")

    request(lambda c: c.select(body), chosen(as_json), show)


@quarantine_app.command("list")
def quarantine_list(
    released: Annotated[bool, typer.Option("--all", help="include released tools")] = False,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Quarantined tools, most recent first."""
    body = QuarantineQuery(include_released=released)
    request(
        lambda c: c.admin(subjects.ADMIN_QUARANTINE_LIST, body, QuarantineList),
        chosen(as_json, fmt),
        show_rows("quarantine", "entries"),
        rows="entries",
    )


@quarantine_app.command("release")
def quarantine_release(plugin: str, name: str, by: str = "operator", as_json: AsJson = False) -> None:
    """Put a quarantined tool on probation (the learner's release request)."""
    body = validated(QuarantineRelease, {"plugin_id": plugin, "name": name, "released_by": by}, "release")
    request(
        lambda c: c.admin(subjects.ADMIN_QUARANTINE_RELEASE, body, ToolStateChanged),
        chosen(as_json),
        lambda change: console.print(f"{plugin}/{name}: {change.state}"),
    )
