"""Categories as operators see them: the hierarchy, and which categories a page brings in."""

from collections.abc import Mapping, Sequence
from typing import Any

from toolsel.contracts.admin import CategoryNode, PageCategory
from toolsel.pages import page_matches, with_descendants

Key = tuple[str, str]


def category_tree(rows: Sequence[Mapping[str, Any]]) -> list[CategoryNode]:
    """Nest categories under their parents (within a plugin); a category whose parent is not declared is a root.
    Rows carry plugin_id, name, parent, description and workflow_hint; order is kept."""
    declared = {(r["plugin_id"], r["name"]) for r in rows}
    children: dict[Key, list[Mapping[str, Any]]] = {}
    roots = []
    for row in rows:
        parent = (row["plugin_id"], row["parent"])
        if row["parent"] is not None and parent in declared and parent != (row["plugin_id"], row["name"]):
            children.setdefault(parent, []).append(row)
        else:
            roots.append(row)

    def node(row: Mapping[str, Any], seen: frozenset[Key]) -> CategoryNode:
        key = (row["plugin_id"], row["name"])
        below = [node(c, seen | {key}) for c in children.get(key, []) if (c["plugin_id"], c["name"]) not in seen]
        fields = {name: row[name] for name in ("plugin_id", "name", "description", "workflow_hint")}
        return CategoryNode(**fields, children=below)

    return [node(r, frozenset()) for r in roots]


def categories_for_page(
    page: str, mappings: Sequence[tuple[str, str, str, int]], parents: Mapping[Key, str | None]
) -> list[PageCategory]:
    """The categories the selector's page filter keeps for ``page``: those mapped by a matching pattern (highest
    priority first), then their sub-categories. ``mappings`` are (plugin, pattern, category, priority)."""
    direct: dict[Key, str] = {}
    for plugin, pattern, category, _ in sorted(mappings, key=lambda m: -m[3]):
        if page_matches(pattern, page):
            direct.setdefault((plugin, category), pattern)
    found = [PageCategory(plugin_id=p, category=c, via=pattern) for (p, c), pattern in direct.items()]
    below = with_descendants(set(direct), dict(parents)) - set(direct)
    found += [PageCategory(plugin_id=p, category=c, via=f"parent:{parents[(p, c)]}") for p, c in sorted(below)]
    return found
