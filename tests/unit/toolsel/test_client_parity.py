"""The async and the sync client offer the same methods, each with its real signature and a docstring."""

import inspect

from toolsel.client import SyncToolselClient, ToolselClient

ASYNC_PLUMBING = {"acting_as", "nc", "send", "subject", "bind"}
"""The async client's connection and the gateway's view of it: no call a script makes."""
SYNC_PLUMBING = {"aio", "run", "bind"}
"""The sync client's loop and the async client under it."""


def public(kind: type) -> dict[str, object]:
    return {name: getattr(kind, name) for name in dir(kind) if not name.startswith("_")}


def test_the_sync_and_async_clients_have_the_same_methods_and_signatures() -> None:
    aio = {n: m for n, m in public(ToolselClient).items() if n not in ASYNC_PLUMBING}
    sync = {n: m for n, m in public(SyncToolselClient).items() if n not in SYNC_PLUMBING}
    assert set(aio) == set(sync)
    made = ToolselClient("nats://x:1"), SyncToolselClient("nats://x:1")
    for name in sorted(aio):
        of_async, of_sync = (list(inspect.signature(getattr(client, name)).parameters) for client in made)
        assert of_async == of_sync, name


def test_every_public_method_has_a_docstring_and_a_signature_of_its_fields() -> None:
    for client in (ToolselClient("nats://x:1"), SyncToolselClient("nats://x:1")):
        for name in set(public(type(client))) - ASYNC_PLUMBING - SYNC_PLUMBING:
            assert inspect.getdoc(getattr(client, name)), f"{type(client).__name__}.{name} has no docstring"
    show = inspect.signature(ToolselClient("nats://x:1").show_tool)
    assert list(show.parameters)[:2] == ["plugin_id", "name"]
    assert show.return_annotation.__name__ == "ToolDetail"
    select = inspect.signature(SyncToolselClient("nats://x:1").select).parameters
    assert (select["query"].kind, select["k"].kind, select["explore"].default) == (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
        True,
    )
