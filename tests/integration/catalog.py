"""Small, real catalogs for the integration tests; each test gets its own plugin and tenant."""

import os
import shutil
import socket
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID, uuid4

import nats
import nats.errors
import pytest
from nats.js.api import ConsumerConfig, DeliverPolicy
from pydantic import ValidationError

from toolsel import waiting
from toolsel.client import ToolselClient
from toolsel.contracts import CategorySpec, PageMappingSpec, PluginSync, SelectionEvent, SyncReport, ToolSpec, subjects
from toolsel.stack import TOOLSEL_COMMAND, Endpoints

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
"""Debian's chromium, which the browser tests drive (CI installs it)."""
needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"),
    reason="needs Debian's chromium (apt-get install chromium); CI installs it, so there it never skips",
)

T = TypeVar("T")

TOOLS = {
    "send_email": (
        "Send an email message to one or more recipients.",
        ["email my boss the quarterly report", "send a message to alice@example.com", "write an email to the team"],
    ),
    "get_weather": (
        "Current weather and forecast for a city.",
        ["what's the weather in Paris", "will it rain tomorrow in London", "temperature in Tokyo today"],
    ),
    "search_flights": (
        "Search for flights between two airports on a date.",
        ["find a flight from Berlin to Rome", "cheapest flights to New York next week", "book a plane ticket"],
    ),
    "translate_text": (
        "Translate text between languages.",
        ["translate this sentence into Spanish", "what is 'thank you' in Japanese", "translate to German"],
    ),
    "create_event": (
        "Create a calendar event with a time and attendees.",
        ["schedule a meeting tomorrow at 3pm", "add a dentist appointment to my calendar", "book a call with Bob"],
    ),
}


GUARDED_TENANT = "guarded-tenant"
"""The one tenant the tests sync the guarded plugin (tests/conftest.py) for: a sync may not take over another
tenant's live tools."""


def free_port() -> int:
    """A TCP port of this machine that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid4().hex[:8]}"


def tool(name: str, **changes: object) -> ToolSpec:
    description, examples = TOOLS[name]
    spec = ToolSpec(
        name=name,
        description=description,
        example_queries=examples,
        category="general",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )
    return spec.model_copy(update=changes)


def plugin_sync(plugin_id: str, tenant_id: str, tools: list[ToolSpec], **fields: object) -> PluginSync:
    """A plugin's declaration: one category, ``general``, mapped to ``/inbox*`` pages, unless ``fields`` say else."""
    declared = {
        "plugin_id": plugin_id,
        "plugin_version": "1.0.0",
        "tenant_id": tenant_id,
        "tools": tools,
        "categories": [CategorySpec(name="general", workflow_hint="Pick one tool, then report the outcome.")],
        "page_mappings": [PageMappingSpec(page_pattern="/inbox*", category="general")],
    }
    return PluginSync.model_validate(declared | fields)


async def eventually(probe: Callable[[], Awaitable[T]], timeout_s: float = 15.0) -> T:
    """``toolsel.waiting.eventually`` at the tests' pace: events are asynchronous."""
    return await waiting.eventually(probe, timeout_s, every_s=0.05)


async def sync_and_wait(client: ToolselClient, sync: PluginSync) -> SyncReport:
    """Sync, then wait until the selectors have reloaded (they do so on the registry-changed broadcast)."""
    report = await client.sync(sync)
    expected = {t.name for t in sync.tools}

    async def visible() -> bool:  # retrieval's ranking alone: every tool, whatever a pin's scope or the rerank says
        reply = await client.select(
            query="anything",
            tenant_id=sync.tenant_id,
            k=50,
            dry_run=True,
            rerank=False,
            filters={"plugins": [sync.plugin_id]},
        )
        return {t.name for t in reply.tools if t.plugin_id == sync.plugin_id} == expected

    assert await eventually(visible), "the selector did not pick up the sync"
    return report


def cli_env(endpoints: Endpoints, admin_token: str | None = None) -> dict[str, str]:
    """The environment of a ``toolsel`` command against the test stack."""
    return {
        **os.environ,
        "TOOLSEL_NATS_URL": endpoints.nats_url,
        "TOOLSEL_DATABASE_URL": endpoints.database_url,
        "COLUMNS": "200",
        **({"TOOLSEL_ADMIN_TOKEN": admin_token} if admin_token else {}),
    }


def run_cli(endpoints: Endpoints, *args: str, admin_token: str | None = None) -> subprocess.CompletedProcess[str]:
    """``toolsel ARGS`` against the test stack (with the environment's admin token unless one is given)."""
    env = cli_env(endpoints, admin_token)
    return subprocess.run([*TOOLSEL_COMMAND, *args], env=env, capture_output=True, text=True, timeout=120)


async def dead_letters(url: str, kind: str) -> list[tuple[bytes, str]]:
    """Every dead letter of ``kind`` so far: (body, reason)."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        sub = await js.subscribe(
            subjects.dead_letter(kind),
            config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL),
            ordered_consumer=True,
        )
        found = []
        while True:
            try:
                msg = await sub.next_msg(timeout=0.3)
            except nats.errors.TimeoutError:
                return found
            found.append((msg.data, (msg.headers or {}).get("toolsel-reason", "")))
    finally:
        await nc.close()


def many_tools(count: int, description_words: int = 8, examples: int = 1) -> list[ToolSpec]:
    """``count`` distinct tools, with descriptions of about ``description_words`` words: a large catalog."""
    return [
        ToolSpec(
            name=f"tool_{i}",
            description=f"Tool number {i}. " + "it does one particular thing well " * (description_words // 6),
            example_queries=[f"use tool {i} for case {j}" for j in range(examples)],
        )
        for i in range(count)
    ]


def selection_event(**fields: Any) -> SelectionEvent:
    """A stored selection's event as the learner reads it: tenant acme's, no tool offered, what a test does not
    name left plain."""
    plain: dict[str, Any] = {
        "tenant_id": "acme",
        "query": "send mail",
        "tier": "free",
        "context_key": "free::general",
        "method": "hybrid",
        "tools": [],
        "candidate_count": 0,
        "latency_ms": 1.0,
        "tokens_selected": 0,
        "tokens_catalog": 0,
    }
    return SelectionEvent(**plain | fields)


async def stored_selections(url: str, tenant: str) -> set[UUID]:
    """The selection ids of ``tenant`` in the events stream (what is not a selection event, left out)."""
    nc = await nats.connect(url)
    try:
        sub = await nc.jetstream().subscribe(
            subjects.SELECTION_EVENTS, config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL), ordered_consumer=True
        )
        found: set[UUID] = set()
        while True:
            try:
                msg = await sub.next_msg(timeout=1.0)
            except nats.errors.TimeoutError:
                return found
            try:
                event = SelectionEvent.model_validate_json(msg.data)
            except ValidationError:  # another test's poison pill on the shared stack's stream
                continue
            if event.tenant_id == tenant:
                found.add(event.selection_id)
    finally:
        await nc.close()
