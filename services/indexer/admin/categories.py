"""Admin ``categories.*``: the category tree, and the categories a page brings in."""

from faststream.nats import NatsRouter

from toolsel.contracts import CategoryQuery, CategoryTree, PageCategories, PageQuery, subjects
from toolsel.services.indexer.admin.area import AdminArea
from toolsel.services.indexer.categories import categories_for_page, category_tree
from toolsel.services.indexer.state import State
from toolsel.store import registry


def router() -> NatsRouter:
    area = AdminArea(subjects.ADMIN_CATEGORIES_PREFIX)

    @area.handler(subjects.ADMIN_CATEGORIES_LIST, "Categories as a tree (sub-categories under their parents).")
    async def categories_list(request: CategoryQuery, state: State) -> CategoryTree:
        return CategoryTree(categories=category_tree(await registry.categories(state.pool, request.plugin_id)))

    @area.handler(
        subjects.ADMIN_CATEGORIES_FOR_PAGE, "The categories a page brings in: mapped ones, then their sub-categories."
    )
    async def categories_of_page(request: PageQuery, state: State) -> PageCategories:
        mappings = await registry.page_mappings(state.pool, None, None)
        rows = [(m.plugin_id, m.page_pattern, m.category, m.priority) for m in mappings]
        parents = await registry.category_parents(state.pool)
        return PageCategories(page=request.page, categories=categories_for_page(request.page, rows, parents))

    return area.router
