"""Pages and categories: which page patterns match a page, and the sub-categories of categories."""


def page_matches(pattern: str, page: str) -> bool:
    """Seed 000's four modes: ``*contains*``, ``prefix*``, ``*suffix`` and exact."""
    if len(pattern) >= 2 and pattern.startswith("*") and pattern.endswith("*"):
        return pattern[1:-1] in page
    if pattern.endswith("*"):
        return page.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return page.endswith(pattern[1:])
    return page == pattern


def with_descendants(wanted: set[tuple[str, str]], parents: dict[tuple[str, str], str | None]) -> set[tuple[str, str]]:
    """Close a set of categories under "is a sub-category of" (within each plugin)."""
    result = set(wanted)
    grew = True
    while grew:
        grew = False
        for (plugin, name), parent in parents.items():
            if parent is not None and (plugin, parent) in result and (plugin, name) not in result:
                result.add((plugin, name))
                grew = True
    return result
