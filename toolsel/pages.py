"""Pages and categories: which page patterns match a page, the route a page is learnt under, and the
sub-categories of categories."""

import re

_ID_SEGMENT = re.compile(
    r"\d+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|(?=[^/]*\d)[A-Za-z0-9_-]{8,}"
)
"""A path segment that names one record rather than a page: a number, a UUID, or a token of 8 or more letters and
digits with a digit among them ("/tickets/4812", "/docs/3f9a2c1e")."""


def page_route(page: str) -> str:
    """The page as posteriors are learnt under it (the bandit context): without its query and fragment, each
    segment that names a record replaced by ``*``. A page carrying ids filed each record's lessons under a context
    of its own, read by no other request, and grew the posteriors without bound."""
    path = re.split(r"[?#]", page, maxsplit=1)[0]
    return "/".join("*" if _ID_SEGMENT.fullmatch(segment) else segment for segment in path.split("/"))


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
