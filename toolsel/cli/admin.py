"""``toolsel admin``: categories, page mappings, visibility rules, test selections and quarantine (admin
requests carry the operators' token: TOOLSEL_ADMIN_TOKEN, else the one ``toolsel up`` keeps)."""

import json
from collections.abc import Callable
from typing import Annotated

import typer
from rich.markup import escape
from rich.tree import Tree

from toolsel.cli import selection
from toolsel.cli.running import (
    USAGE,
    AsJson,
    Format,
    ObjectFormat,
    ObjectOutput,
    Output,
    Rows,
    ask,
    chosen,
    fail,
    parse_json,
    validated,
)
from toolsel.client import ToolselClient
from toolsel.contracts import DEFAULT_TENANT, DEFAULT_TIER
from toolsel.contracts.admin import CategoryNode, CategoryTree, PageMapping, RuleFields, VisibilityRule
from toolsel.render import console

app = typer.Typer(help="Categories, page mappings, visibility rules, test selections, quarantine.")
mappings_app = typer.Typer(help="Page-to-category mappings.", no_args_is_help=True)
rules_app = typer.Typer(help="Visibility rules (who sees which tool or category).", no_args_is_help=True)
quarantine_app = typer.Typer(help="Quarantined tools.", no_args_is_help=True)
app.add_typer(mappings_app, name="page-mappings")
app.add_typer(rules_app, name="rules")
app.add_typer(quarantine_app, name="quarantine")


def _say(line: str) -> None:
    """Print a one-line confirmation as it is (a page pattern or a condition is not rich markup)."""
    console.print(escape(line), soft_wrap=True)


# categories and page mappings


def _branch(tree: Tree, node: CategoryNode) -> None:
    hint = f"  [dim]{escape(node.workflow_hint)}[/]" if node.workflow_hint else ""
    branch = tree.add(f"{escape(node.name)}{hint}")
    for child in node.children:
        _branch(branch, child)


@app.command("categories")
def categories(
    plugin: Annotated[str | None, typer.Option(help="only this plugin's")] = None,
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Categories as a tree, per plugin (a tree has no csv: `page-categories` and `page-mappings list` do)."""

    def show(reply: CategoryTree) -> None:
        plugins: dict[str, Tree] = {}
        for node in reply.categories:
            _branch(plugins.setdefault(node.plugin_id, Tree(f"[bold]{node.plugin_id}[/]")), node)
        for tree in plugins.values():
            console.print(tree)
        if not plugins:
            console.print("no categories")

    fields = {"plugin_id": plugin}
    ask(ToolselClient.list_categories, fields, "categories", chosen(as_json, fmt), show)


@app.command("page-categories")
def page_categories(page: str, fmt: Output = Format.table, as_json: AsJson = False) -> None:
    """The categories PAGE brings in (what the selector's page filter keeps)."""
    show = Rows(f"categories for {page}", "categories")
    ask(ToolselClient.page_categories, {"page": page}, "page-categories", chosen(as_json, fmt), show)


@mappings_app.command("list")
def mappings_list(
    plugin: Annotated[str | None, typer.Option()] = None,
    category: Annotated[str | None, typer.Option()] = None,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Page mappings, highest priority first."""
    fields = {"plugin_id": plugin, "category": category}
    ask(
        ToolselClient.list_page_mappings,
        fields,
        "page mappings",
        chosen(as_json, fmt),
        Rows("page mappings", "mappings"),
    )


@mappings_app.command("create")
def mappings_create(
    plugin: str,
    pattern: str,
    category: str,
    priority: Annotated[int | None, typer.Option(help="0 for a new mapping; an existing one keeps its own")] = None,
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Map PATTERN (/exact, /prefix*, *suffix, *contains*) to PLUGIN's CATEGORY, or re-prioritise that mapping."""

    def show(m: PageMapping) -> None:
        _say(f"mapped pages {m.page_pattern} to {m.plugin_id}'s category {m.category} (priority {m.priority})")

    fields = {"plugin_id": plugin, "page_pattern": pattern, "category": category, "priority": priority}
    ask(ToolselClient.create_page_mapping, fields, "page mapping", chosen(as_json, fmt), show)


@mappings_app.command("delete")
def mappings_delete(
    plugin: str, pattern: str, category: str, fmt: ObjectOutput = ObjectFormat.table, as_json: AsJson = False
) -> None:
    """Delete a page mapping."""

    def show(m: PageMapping) -> None:
        _say(f"deleted the mapping of pages {m.page_pattern} to {m.plugin_id}'s category {m.category}")

    fields = {"plugin_id": plugin, "page_pattern": pattern, "category": category}
    ask(ToolselClient.delete_page_mapping, fields, "page mapping", chosen(as_json, fmt), show)


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
    fields = {
        "tenant_id": tenant,
        "rule_type": rule_type,
        "effect": effect,
        "target_kind": target_kind,
        "target": target,
        "conditions": parse_json(conditions, "--conditions"),
        "priority": priority,
        "active": active,
    }
    return validated(RuleFields, fields, "rule")


def _ruled(done: str) -> Callable[[VisibilityRule], None]:
    """Confirm what became of a rule in one line: ``rule 3 created: deny tool mail/send_email ...``."""

    def show(r: VisibilityRule) -> None:
        when = f"when {json.dumps(r.conditions)}" if r.conditions else "always"
        inactive = ", inactive" if not r.active else ""
        _say(
            f"rule {r.id} {done}: {r.effect} {r.target_kind} {r.target} for tenant {r.tenant_id} {when}"
            f" ({r.rule_type} rule, priority {r.priority}{inactive})"
        )

    return show


RuleType = Annotated[str, typer.Option("--type", help="org, user, page, role, tier or composite")]
Effect = Annotated[str, typer.Option(help="allow or deny (who sees it); pin or unpin (joins answers on its own)")]
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
    fields = {"tenant_id": tenant, "include_inactive": inactive}
    ask(ToolselClient.list_rules, fields, "rules", chosen(as_json, fmt), Rows("visibility rules", "rules"))


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
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Create a visibility rule for TARGET."""
    rule = _rule(rule_type, effect, target_kind, target, conditions, priority, tenant, active)
    ask(ToolselClient.create_rule, {"rule": rule}, "rule", chosen(as_json, fmt), _ruled("created"))


@rules_app.command("update")
def rules_update(
    rule_id: int,
    target: Annotated[str | None, typer.Argument(help="plugin/name or plugin/category")] = None,
    rule_type: Annotated[str | None, typer.Option("--type", help="org, user, page, role, tier or composite")] = None,
    effect: Annotated[str | None, typer.Option(help="allow or deny")] = None,
    target_kind: Annotated[str | None, typer.Option(help="tool or category")] = None,
    conditions: Annotated[str | None, typer.Option(help="JSON, replaces the rule's conditions")] = None,
    priority: Annotated[int | None, typer.Option()] = None,
    tenant: Annotated[str | None, typer.Option(help="tenant the rule applies to, * for all")] = None,
    active: Annotated[bool | None, typer.Option("--active/--no-active")] = None,
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Change the fields of rule RULE_ID that you name; the others keep their values."""
    patch = {
        "tenant_id": tenant,
        "rule_type": rule_type,
        "effect": effect,
        "target_kind": target_kind,
        "target": target,
        "conditions": None if conditions is None else parse_json(conditions, "--conditions"),
        "priority": priority,
        "active": active,
    }
    if all(value is None for value in patch.values()):
        fail("name at least one field to change (see --help)", USAGE)
    ask(ToolselClient.update_rule, {"id": rule_id, "rule": patch}, "rule", chosen(as_json, fmt), _ruled("updated"))


@rules_app.command("delete")
def rules_delete(rule_id: int, fmt: ObjectOutput = ObjectFormat.table, as_json: AsJson = False) -> None:
    """Delete rule RULE_ID."""
    ask(ToolselClient.delete_rule, {"id": rule_id}, "rule", chosen(as_json, fmt), _ruled("deleted"))


# test selection and quarantine


@app.command("test-selection")
def dry_run_selection(
    query: str,
    page: selection.Page = "",
    tenant: selection.Tenant = DEFAULT_TENANT,
    tier: selection.Tier = DEFAULT_TIER,
    role: selection.Role = None,
    user: selection.User = None,
    k: selection.Count = None,
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """A dry run (nothing recorded) with every part of each score: ``toolsel select --dry-run --explain``."""
    selection.select(
        query,
        page=page,
        tenant=tenant,
        tier=tier,
        user=user,
        role=role,
        k=k,
        explain=True,
        dry_run=True,
        fmt=fmt,
        as_json=as_json,
    )


@quarantine_app.command("list")
def quarantine_list(
    released: Annotated[bool, typer.Option("--all", help="include released tools")] = False,
    fmt: Output = Format.table,
    as_json: AsJson = False,
) -> None:
    """Quarantined tools, most recent first."""
    fields = {"include_released": released}
    ask(ToolselClient.list_quarantine, fields, "quarantine", chosen(as_json, fmt), Rows("quarantine", "entries"))


@quarantine_app.command("release")
def quarantine_release(
    plugin: str,
    name: str,
    tenant: Annotated[str | None, typer.Option(help="only its quarantine for this tenant")] = None,
    by: str = "operator",
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Put a quarantined tool on probation (the learner's release request), for every tenant it is
    quarantined for or only ``--tenant``."""
    ask(
        ToolselClient.release_quarantine,
        {"plugin_id": plugin, "name": name, "tenant_id": tenant, "released_by": by},
        "release",
        chosen(as_json, fmt),
        lambda released: _say("\n".join(f"{plugin}/{name} for {c.tenant_id}: {c.state}" for c in released.changes)),
    )
