"""The route a page's lessons are filed under: the page less what names one record."""

import pytest

from toolsel.contracts import SelectRequest
from toolsel.pages import page_route


@pytest.mark.parametrize(
    ("page", "route"),
    [
        ("/inbox", "/inbox"),
        ("/settings/billing", "/settings/billing"),
        ("/v2/users/me", "/v2/users/me"),  # short tokens with a digit are words of the route
        ("/tickets/4812", "/tickets/*"),
        ("/docs/3f9a2c1e/edit?tab=2#top", "/docs/*/edit"),
        ("/users/123e4567-e89b-12d3-a456-426614174000/orders/ORD-2024-0001", "/users/*/orders/*"),
        ("", ""),
    ],
)
def test_a_page_is_learnt_under_its_route(page: str, route: str) -> None:
    assert page_route(page) == route


def test_two_records_of_one_page_read_and_file_one_context() -> None:
    """A page carrying a ticket's id filed each ticket's lessons under a context no other request read, and grew
    the posteriors by a context a record."""
    from tests.unit.selector.test_selector import selector

    sel = selector(context_key_template="{tier}:{page}:{intent}")
    keys = {sel.select(SelectRequest(query="weather in Oslo", page=f"/tickets/{n}"))[0].context_key for n in (1, 2)}
    assert keys == {"free:/tickets/*:p/get_weather"}
