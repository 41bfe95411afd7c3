"""toolsel's NATS users and what each may publish and subscribe: the services, the default tenant's agents, the
operators, and any tenant's identity. ``toolsel up``'s embedded NATS (``toolsel.embedded``) and compose's
(``toolsel identity nats-config``) are configured from these."""

from typing import Any

from toolsel.contracts import DEFAULT_TENANT, subjects
from toolsel.contracts.identity import Scope, tenant_scope

DEFAULT_AGENT = tenant_scope(DEFAULT_TENANT, "agent")
"""The identity ``toolsel up`` makes for agents of the tenant ``default`` (its NATS user ``default.agent``)."""
INBOX = "_INBOX.>"
"""Where the services' and the operator's replies come back (and JetStream acks): only they subscribe to it."""


def _declare(stream: str) -> list[str]:
    """The JetStream API to create or update a stream (every service does at start-up)."""
    return [f"$JS.API.STREAM.{verb}.{stream}" for verb in ("CREATE", "UPDATE", "INFO")]


def _consume(stream: str) -> list[str]:
    """The JetStream API to bind, pull from and acknowledge consumers of a stream."""
    return [
        f"$JS.API.CONSUMER.CREATE.{stream}",
        *(f"$JS.API.CONSUMER.{verb}.{stream}.>" for verb in ("CREATE", "DURABLE.CREATE", "INFO", "MSG.NEXT")),
        f"$JS.ACK.{stream}.>",
    ]


HEALTH = f"{subjects.HEALTH_PREFIX}.>"


def health_subjects(service: str) -> list[str]:
    """What a service answers of the health subjects: its own, for any copy, and each copy's own."""
    return [subjects.health(service), subjects.instance_health(service, "*")]


def identity_permissions(scope: Scope) -> dict[str, Any]:
    """A tenant's identity: it requests selections, syncs and its own pins and publishes outcome, review, feedback
    and sync events only under its own scope (so the services know whose they are), and reads replies only under
    its own inbox prefix (no one else's replies, nor anyone else its own). Not the services' health: its counters
    (tools, selections, events applied) are every tenant's together, so a tenant reading them would watch the
    others' activity."""
    return {
        "publish": {"allow": [subjects.scoped(root, scope.token) for root in subjects.SCOPED_ROOTS]},
        "subscribe": {"allow": [f"{scope.inbox_prefix}.>"]},
    }


def nats_permissions() -> dict[str, dict[str, Any]]:
    """What each built-in NATS user may publish and subscribe: only the learner broadcasts posteriors, tool states
    and usage, only the indexer registry changes (and operators, to make selectors re-read the store), only a
    selector selection events (and operators, replaying them); the default tenant's agents as any tenant's
    identity (``identity_permissions``); admin requests, and every tenant's scope, are the operator's. Services
    answer requests (``allow_responses``), each its own health subjects alone (its copies' too: one subject per
    copy), and every service user may ask any service's health (a container's health check runs as its service);
    the JetStream API is open only for toolsel's streams, and only as each user needs."""
    streams = [*_declare(subjects.EVENTS_STREAM), *_declare(subjects.DLQ_STREAM), *_consume(subjects.EVENTS_STREAM)]
    health = HEALTH

    def service(publish: list[str], subscribe: list[str]) -> dict[str, Any]:
        return {
            "publish": {"allow": [*publish, health, *streams]},
            "subscribe": {"allow": [*subscribe, INBOX]},
            "allow_responses": True,
        }

    return {
        "selector": service(
            [subjects.SELECTION_EVENTS],
            [
                subjects.any_scope(subjects.SELECT_ROOT),
                *health_subjects("selector"),
                f"{subjects.NOTIFY_PREFIX}.>",
                subjects.SELECTION_EVENTS,
                subjects.any_scope(subjects.OUTCOME_ROOT),
            ],
        ),
        "learner": service(
            [
                subjects.POSTERIORS_UPDATED,
                subjects.TOOL_STATE_CHANGED,
                subjects.USAGE_UPDATED,
                f"{subjects.DLQ_PREFIX}.>",
            ],
            [*subjects.ADMIN_LEARNING_SUBJECTS, *subjects.ADMIN_ANALYTICS_SUBJECTS, *health_subjects("learner")],
        ),
        "indexer": service(
            [subjects.REGISTRY_CHANGED, subjects.SYNC_REPORTS, f"{subjects.DLQ_PREFIX}.>"],
            [
                *(subjects.any_scope(root) for root in (*subjects.SYNC_ROOTS, subjects.PINS_ROOT)),
                *subjects.ADMIN_REGISTRY_SUBJECTS,
                *health_subjects("indexer"),
            ],
        ),
        DEFAULT_AGENT.user: identity_permissions(DEFAULT_AGENT),
        "operator": {
            "publish": {
                "allow": [
                    *(subjects.any_scope(root) for root in subjects.SCOPED_ROOTS),
                    health,
                    f"{subjects.ADMIN_PREFIX}.>",
                    f"{subjects.EVENTS_PREFIX}.>",
                    subjects.REGISTRY_CHANGED,
                    "$JS.API.STREAM.NAMES",
                    f"$JS.API.STREAM.INFO.{subjects.EVENTS_STREAM}",
                    f"$JS.API.STREAM.INFO.{subjects.DLQ_STREAM}",
                    f"$JS.API.STREAM.MSG.GET.{subjects.EVENTS_STREAM}",
                    *_consume(subjects.EVENTS_STREAM),
                    *_consume(subjects.DLQ_STREAM),
                    "$JS.FC.>",
                ]
            },
            "subscribe": {
                "allow": [
                    INBOX,
                    f"{subjects.NOTIFY_PREFIX}.>",
                    f"{subjects.EVENTS_PREFIX}.>",
                    f"{subjects.DLQ_PREFIX}.>",
                ]
            },
        },
    }


NATS_USERS = tuple(nats_permissions())
"""A NATS user per service, the default tenant's agents and the operators (the CLI); further tenants' identities
are made by the operator (``toolsel.identities``)."""
