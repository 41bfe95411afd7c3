"""The catalog copy's lookups a selection reads for every request."""

from tests.unit.selector.factory import T, catalog


def test_related_rows_are_the_live_tools_of_the_same_plugin_in_declared_order() -> None:
    cat = catalog(
        [
            T("a", "first", 0, related=["c", "retired", "b"]),
            T("b", "second", 1),
            T("c", "third", 2, related=["a"]),
            T("b", "same name, other plugin", 3, plugin="q"),
        ]
    )
    assert cat.related == [[2, 1], [], [0], []]
