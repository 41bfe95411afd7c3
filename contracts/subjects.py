"""Every NATS subject and JetStream stream name, defined once.

Request/reply subjects live under ``toolsel.rpc.``, durable events under ``toolsel.events.`` (the events
stream captures only these) and broadcasts to selectors under ``toolsel.notify.``.

What a client sends (select, sync, pins, outcome, review, feedback) goes to its kind's root plus the sender's scope,
which NATS permissions tie to the connection: ``<root>.t.<tenant>.<name>`` for a tenant's identity (only its own
NATS user may publish there), ``<root>.op`` for the operator, who acts for any tenant. The services read who sent
a message from its subject, never from its payload. A request published into
a stream's subject space would get the stream's publish ack back instead of the service's reply, so the
spaces never overlap (a test checks it).
"""

import re
from typing import Final

RPC_PREFIX: Final = "toolsel.rpc"
EVENTS_PREFIX: Final = "toolsel.events"
DLQ_PREFIX: Final = "toolsel.dlq"

OPERATOR_SCOPE: Final = "op"
"""The scope token of the operator (and of a tool run with the operator's credentials)."""
TENANT_SCOPE: Final = "t"
"""The first token of a tenant identity's scope: ``t.<tenant>.<name>``."""

# request/reply (core NATS, queue groups): <root>.<scope>
SELECT_ROOT: Final = f"{RPC_PREFIX}.select"
SYNC_ROOT: Final = f"{RPC_PREFIX}.sync"
SELECT: Final = f"{SELECT_ROOT}.{OPERATOR_SCOPE}"
"""The operator's select subject (any tenant, named in the request)."""
SYNC: Final = f"{SYNC_ROOT}.{OPERATOR_SCOPE}"
SYNC_PART_ROOT: Final = f"{RPC_PREFIX}.sync_part"
"""One part of a sync too large for one NATS message."""
SYNC_UPLOAD_ROOT: Final = f"{RPC_PREFIX}.sync_upload"
"""Apply the sync whose parts the same sender sent to ``SYNC_PART_ROOT``."""
SYNC_ROOTS: Final = (SYNC_ROOT, SYNC_PART_ROOT, SYNC_UPLOAD_ROOT)
"""What the indexer answers: a sync in one message, or in parts."""
HEALTH_PREFIX: Final = f"{RPC_PREFIX}.health"
PINS_ROOT: Final = f"{RPC_PREFIX}.pins"
"""A tenant's own pins: list, pin, unpin or clear a tool for the sender's tenant (the operator's names one)."""
PINS: Final = f"{PINS_ROOT}.{OPERATOR_SCOPE}"
"""The operator's pins subject (the tenant named in the request)."""

# admin request/reply: restrict ``toolsel.rpc.admin.>`` to operators with NATS permissions. Grouped by area;
# the service that owns an area's tables serves it, a router per ``*_PREFIX``.
ADMIN_PREFIX: Final = f"{RPC_PREFIX}.admin"

# registry area (indexer)
ADMIN_TOOLS_PREFIX: Final = f"{ADMIN_PREFIX}.tools."
ADMIN_TOOLS_LIST: Final = f"{ADMIN_TOOLS_PREFIX}list"
ADMIN_TOOLS_SHOW: Final = f"{ADMIN_TOOLS_PREFIX}show"
ADMIN_TOOLS_VERSIONS: Final = f"{ADMIN_TOOLS_PREFIX}versions"
ADMIN_TOOLS_ROLLBACK: Final = f"{ADMIN_TOOLS_PREFIX}rollback"
ADMIN_TOOLS_APPROVE: Final = f"{ADMIN_TOOLS_PREFIX}approve"
ADMIN_TOOLS_REGISTER: Final = f"{ADMIN_TOOLS_PREFIX}register"
ADMIN_TOOLS_UPDATE: Final = f"{ADMIN_TOOLS_PREFIX}update"
ADMIN_TOOLS_DELETE: Final = f"{ADMIN_TOOLS_PREFIX}delete"
ADMIN_TOOLS_PLUGINS: Final = f"{ADMIN_TOOLS_PREFIX}plugins"
ADMIN_EMBEDDINGS_PREFIX: Final = f"{ADMIN_PREFIX}."
"""Embeddings' subjects predate the areas: ``embeddings.recompute`` and ``drift`` sit right under admin."""
ADMIN_EMBEDDINGS_RECOMPUTE: Final = f"{ADMIN_EMBEDDINGS_PREFIX}embeddings.recompute"
ADMIN_DRIFT: Final = f"{ADMIN_EMBEDDINGS_PREFIX}drift"
ADMIN_CATEGORIES_PREFIX: Final = f"{ADMIN_PREFIX}.categories."
ADMIN_CATEGORIES_LIST: Final = f"{ADMIN_CATEGORIES_PREFIX}list"
ADMIN_CATEGORIES_FOR_PAGE: Final = f"{ADMIN_CATEGORIES_PREFIX}for_page"
ADMIN_PAGE_MAPPINGS_PREFIX: Final = f"{ADMIN_PREFIX}.page_mappings."
ADMIN_PAGE_MAPPINGS_LIST: Final = f"{ADMIN_PAGE_MAPPINGS_PREFIX}list"
ADMIN_PAGE_MAPPINGS_CREATE: Final = f"{ADMIN_PAGE_MAPPINGS_PREFIX}create"
ADMIN_PAGE_MAPPINGS_DELETE: Final = f"{ADMIN_PAGE_MAPPINGS_PREFIX}delete"
ADMIN_RULES_PREFIX: Final = f"{ADMIN_PREFIX}.rules."
ADMIN_RULES_LIST: Final = f"{ADMIN_RULES_PREFIX}list"
ADMIN_RULES_CREATE: Final = f"{ADMIN_RULES_PREFIX}create"
ADMIN_RULES_UPDATE: Final = f"{ADMIN_RULES_PREFIX}update"
ADMIN_RULES_DELETE: Final = f"{ADMIN_RULES_PREFIX}delete"
ADMIN_REGISTRY_SUBJECTS: Final = (
    ADMIN_TOOLS_LIST,
    ADMIN_TOOLS_SHOW,
    ADMIN_TOOLS_VERSIONS,
    ADMIN_TOOLS_ROLLBACK,
    ADMIN_TOOLS_APPROVE,
    ADMIN_TOOLS_REGISTER,
    ADMIN_TOOLS_UPDATE,
    ADMIN_TOOLS_DELETE,
    ADMIN_TOOLS_PLUGINS,
    ADMIN_EMBEDDINGS_RECOMPUTE,
    ADMIN_DRIFT,
    ADMIN_CATEGORIES_LIST,
    ADMIN_CATEGORIES_FOR_PAGE,
    ADMIN_PAGE_MAPPINGS_LIST,
    ADMIN_PAGE_MAPPINGS_CREATE,
    ADMIN_PAGE_MAPPINGS_DELETE,
    ADMIN_RULES_LIST,
    ADMIN_RULES_CREATE,
    ADMIN_RULES_UPDATE,
    ADMIN_RULES_DELETE,
)

# learning area (learner)
ADMIN_QUALITY: Final = f"{ADMIN_PREFIX}.quality"
ADMIN_QUARANTINE_PREFIX: Final = f"{ADMIN_PREFIX}.quarantine."
ADMIN_QUARANTINE_LIST: Final = f"{ADMIN_QUARANTINE_PREFIX}list"
ADMIN_QUARANTINE_RELEASE: Final = f"{ADMIN_QUARANTINE_PREFIX}release"
ADMIN_FEEDBACK_PREFIX: Final = f"{ADMIN_PREFIX}.feedback."
ADMIN_FEEDBACK_LIST: Final = f"{ADMIN_FEEDBACK_PREFIX}list"
ADMIN_LEARNING_SUBJECTS: Final = (ADMIN_QUALITY, ADMIN_QUARANTINE_LIST, ADMIN_QUARANTINE_RELEASE, ADMIN_FEEDBACK_LIST)

# analytics area (learner)
ADMIN_ANALYTICS_PREFIX: Final = f"{ADMIN_PREFIX}.analytics."
ADMIN_ANALYTICS_METRICS: Final = f"{ADMIN_ANALYTICS_PREFIX}metrics"
ADMIN_ANALYTICS_HEATMAP: Final = f"{ADMIN_ANALYTICS_PREFIX}heatmap"
ADMIN_ANALYTICS_ACCURACY: Final = f"{ADMIN_ANALYTICS_PREFIX}accuracy"
ADMIN_ANALYTICS_REVIEWS: Final = f"{ADMIN_ANALYTICS_PREFIX}reviews"
ADMIN_ANALYTICS_SUBJECTS: Final = (
    ADMIN_ANALYTICS_METRICS,
    ADMIN_ANALYTICS_HEATMAP,
    ADMIN_ANALYTICS_ACCURACY,
    ADMIN_ANALYTICS_REVIEWS,
)

ADMIN_SUBJECTS: Final = (*ADMIN_REGISTRY_SUBJECTS, *ADMIN_LEARNING_SUBJECTS, *ADMIN_ANALYTICS_SUBJECTS)

# events (JetStream, stream EVENTS_STREAM)
SELECTION_EVENTS: Final = f"{EVENTS_PREFIX}.selection"
"""Published by the selectors alone (NATS permissions): the owner of each selection is recorded in it."""
OUTCOME_ROOT: Final = f"{EVENTS_PREFIX}.outcome"
REVIEW_ROOT: Final = f"{EVENTS_PREFIX}.review"
FEEDBACK_ROOT: Final = f"{EVENTS_PREFIX}.feedback"
SYNC_EVENTS_ROOT: Final = f"{EVENTS_PREFIX}.sync"
OUTCOME_EVENTS: Final = f"{OUTCOME_ROOT}.{OPERATOR_SCOPE}"
"""The operator's outcome subject; a tenant's identity publishes on ``scoped(OUTCOME_ROOT, scope)``."""
REVIEW_EVENTS: Final = f"{REVIEW_ROOT}.{OPERATOR_SCOPE}"
FEEDBACK_EVENTS: Final = f"{FEEDBACK_ROOT}.{OPERATOR_SCOPE}"
SYNC_EVENTS: Final = f"{SYNC_EVENTS_ROOT}.{OPERATOR_SCOPE}"
SYNC_REPORTS: Final = f"{EVENTS_PREFIX}.sync_report"
OPERATOR_EVENTS: Final = {
    "selection": SELECTION_EVENTS,
    "outcome": OUTCOME_EVENTS,
    "review": REVIEW_EVENTS,
    "feedback": FEEDBACK_EVENTS,
    "sync": SYNC_EVENTS,
}
"""Each durable event kind and the subject the operator publishes it on."""
SCOPED_ROOTS: Final = (
    SELECT_ROOT,
    SYNC_ROOT,
    SYNC_PART_ROOT,
    SYNC_UPLOAD_ROOT,
    OUTCOME_ROOT,
    REVIEW_ROOT,
    FEEDBACK_ROOT,
    SYNC_EVENTS_ROOT,
    PINS_ROOT,
)
"""Every subject a client sends on, each under its sender's scope."""

# broadcasts to every selector (core NATS, no stream: a selector that misses one reloads on its cache TTL)
NOTIFY_PREFIX: Final = "toolsel.notify"
REGISTRY_CHANGED: Final = f"{NOTIFY_PREFIX}.registry_changed"
TOOL_STATE_CHANGED: Final = f"{NOTIFY_PREFIX}.tool_state"
POSTERIORS_UPDATED: Final = f"{NOTIFY_PREFIX}.posteriors"
USAGE_UPDATED: Final = f"{NOTIFY_PREFIX}.usage"

# dead letters (JetStream, stream DLQ_STREAM): DLQ_PREFIX.<kind>
EVENTS_STREAM: Final = "TOOLSEL_EVENTS"
EVENTS_STREAM_SUBJECTS: Final = (f"{EVENTS_PREFIX}.>",)
DLQ_STREAM: Final = "TOOLSEL_DLQ"
DLQ_STREAM_SUBJECTS: Final = (f"{DLQ_PREFIX}.>",)

# queue groups and durable consumer names
SELECTOR_QUEUE: Final = "toolsel-selector"
INDEXER_QUEUE: Final = "toolsel-indexer"
LEARNER_DURABLE_PREFIX: Final = "toolsel-learner"
INDEXER_DURABLE: Final = "toolsel-indexer-sync"

SERVICES: Final = ("selector", "learner", "indexer")


def any_scope(root: str) -> str:
    """What a service subscribes to: ``root`` under every sender's scope."""
    return f"{root}.>"


def scoped(root: str, scope: str) -> str:
    """``root`` as a sender of ``scope`` (``Scope.token``) publishes it."""
    return f"{root}.{scope}"


def scope_of(subject: str, root: str) -> str | None:
    """The sender's scope token of a message received on ``root``'s scopes (None: not one of them)."""
    prefix = f"{root}."
    return subject[len(prefix) :] if subject.startswith(prefix) else None


def health(service: str) -> str:
    """The health request subject of one service: whichever of its copies the queue group hands it to answers."""
    return f"{HEALTH_PREFIX}.{service}"


INSTANCE: Final = "{instance}"
"""Where a copy's instance stands in ``instance_health`` as the AsyncAPI documents show it."""


def instance_health(service: str, instance: str) -> str:
    """The health request subject of one copy of a service (``instance``: ``instance_name`` of its host, in a
    container the container's), which that copy alone answers: a container's health check asks its own process,
    not whichever copy the queue group picks. ``*`` for every copy (the services' NATS permissions)."""
    return f"{health(service)}.{instance}"


def instance_name(host: str) -> str:
    """A host's name as one subject token: what is not a letter, a digit, ``-`` or ``_`` (a domain's dots) becomes
    ``-``."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", host).strip("-") or "unnamed"


def dead_letter(kind: str) -> str:
    """Where an event of ``kind`` goes when it cannot be applied."""
    return f"{DLQ_PREFIX}.{kind}"


def request_subjects(scope: str = ">") -> tuple[str, ...]:
    """Every request/reply subject as a sender of ``scope`` sends it: by default every sender's, as the services
    subscribe (the stream-overlap check); the operator's (``OPERATOR_SCOPE``) are those a request can be sent to."""
    return (
        *(scoped(root, scope) for root in (SELECT_ROOT, *SYNC_ROOTS, PINS_ROOT)),
        *ADMIN_SUBJECTS,
        *(health(s) for s in SERVICES),
    )


def learner_durable(kind: str) -> str:
    """The learner's durable consumer of an event kind (``selection``, ``outcome``, ...), and its queue group."""
    return f"{LEARNER_DURABLE_PREFIX}-{kind}"
