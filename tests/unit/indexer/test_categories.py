from toolsel.services.indexer.categories import categories_for_page, category_tree

ROWS = [
    {"plugin_id": "a", "name": "money", "parent": None, "description": "", "workflow_hint": ""},
    {"plugin_id": "a", "name": "invoices", "parent": "money", "description": "", "workflow_hint": "draft first"},
    {"plugin_id": "a", "name": "drafts", "parent": "invoices", "description": "", "workflow_hint": ""},
    {"plugin_id": "b", "name": "orphan", "parent": "missing", "description": "", "workflow_hint": ""},
]


def test_tree_nests_children_and_keeps_orphans_as_roots() -> None:
    tree = category_tree(ROWS)
    assert [(n.plugin_id, n.name) for n in tree] == [("a", "money"), ("b", "orphan")]
    assert tree[0].children[0].name == "invoices"
    assert tree[0].children[0].children[0].name == "drafts"


def test_categories_for_a_page_with_their_sub_categories() -> None:
    parents = {(r["plugin_id"], r["name"]): r["parent"] for r in ROWS}
    mappings = [("a", "/billing*", "invoices", 1), ("a", "*bill*", "money", 5), ("b", "/other", "orphan", 9)]
    found = categories_for_page("/billing/new", mappings, parents)
    assert [(c.category, c.via) for c in found] == [
        ("money", "*bill*"),
        ("invoices", "/billing*"),
        ("drafts", "parent:invoices"),
    ]
