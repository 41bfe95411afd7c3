"""Every NATS subject and JetStream stream name, defined once.

Request/reply subjects live under ``toolsel.rpc.``, durable events under ``toolsel.events.`` (the events
stream captures only these) and broadcasts to selectors under ``toolsel.notify.``. A request published into
a stream's subject space would get the stream's publish ack back instead of the service's reply, so the
spaces never overlap (a test checks it).
"""

from typing import Final

RPC_PREFIX: Final = "toolsel.rpc"
EVENTS_PREFIX: Final = "toolsel.events"
DLQ_PREFIX: Final = "toolsel.dlq"

# request/reply (core NATS, queue groups)
SELECT: Final = f"{RPC_PREFIX}.select"
SYNC: Final = f"{RPC_PREFIX}.sync"
HEALTH_PREFIX: Final = f"{RPC_PREFIX}.health"

# admin request/reply (indexer): restrict ``toolsel.rpc.admin.>`` to operators with NATS permissions
ADMIN_PREFIX: Final = f"{RPC_PREFIX}.admin"
ADMIN_TOOLS_LIST: Final = f"{ADMIN_PREFIX}.tools.list"
ADMIN_TOOLS_SHOW: Final = f"{ADMIN_PREFIX}.tools.show"
ADMIN_TOOLS_VERSIONS: Final = f"{ADMIN_PREFIX}.tools.versions"
ADMIN_TOOLS_ROLLBACK: Final = f"{ADMIN_PREFIX}.tools.rollback"
ADMIN_TOOLS_APPROVE: Final = f"{ADMIN_PREFIX}.tools.approve"
ADMIN_EMBEDDINGS_RECOMPUTE: Final = f"{ADMIN_PREFIX}.embeddings.recompute"
ADMIN_DRIFT: Final = f"{ADMIN_PREFIX}.drift"
ADMIN_TOOLS_REGISTER: Final = f"{ADMIN_PREFIX}.tools.register"
ADMIN_TOOLS_UPDATE: Final = f"{ADMIN_PREFIX}.tools.update"
ADMIN_TOOLS_DELETE: Final = f"{ADMIN_PREFIX}.tools.delete"
ADMIN_CATEGORIES_LIST: Final = f"{ADMIN_PREFIX}.categories.list"
ADMIN_CATEGORIES_FOR_PAGE: Final = f"{ADMIN_PREFIX}.categories.for_page"
ADMIN_PAGE_MAPPINGS_LIST: Final = f"{ADMIN_PREFIX}.page_mappings.list"
ADMIN_PAGE_MAPPINGS_CREATE: Final = f"{ADMIN_PREFIX}.page_mappings.create"
ADMIN_PAGE_MAPPINGS_DELETE: Final = f"{ADMIN_PREFIX}.page_mappings.delete"
ADMIN_RULES_LIST: Final = f"{ADMIN_PREFIX}.rules.list"
ADMIN_RULES_CREATE: Final = f"{ADMIN_PREFIX}.rules.create"
ADMIN_RULES_UPDATE: Final = f"{ADMIN_PREFIX}.rules.update"
ADMIN_RULES_DELETE: Final = f"{ADMIN_PREFIX}.rules.delete"
ADMIN_QUARANTINE_LIST: Final = f"{ADMIN_PREFIX}.quarantine.list"
ADMIN_FEEDBACK_LIST: Final = f"{ADMIN_PREFIX}.feedback.list"
ADMIN_QUALITY: Final = f"{ADMIN_PREFIX}.quality"
ADMIN_ANALYTICS_METRICS: Final = f"{ADMIN_PREFIX}.analytics.metrics"
ADMIN_ANALYTICS_HEATMAP: Final = f"{ADMIN_PREFIX}.analytics.heatmap"
ADMIN_ANALYTICS_ACCURACY: Final = f"{ADMIN_PREFIX}.analytics.accuracy"
ADMIN_SUBJECTS: Final = (
    ADMIN_TOOLS_LIST,
    ADMIN_TOOLS_SHOW,
    ADMIN_TOOLS_VERSIONS,
    ADMIN_TOOLS_ROLLBACK,
    ADMIN_TOOLS_APPROVE,
    ADMIN_EMBEDDINGS_RECOMPUTE,
    ADMIN_DRIFT,
    ADMIN_TOOLS_REGISTER,
    ADMIN_TOOLS_UPDATE,
    ADMIN_TOOLS_DELETE,
    ADMIN_CATEGORIES_LIST,
    ADMIN_CATEGORIES_FOR_PAGE,
    ADMIN_PAGE_MAPPINGS_LIST,
    ADMIN_PAGE_MAPPINGS_CREATE,
    ADMIN_PAGE_MAPPINGS_DELETE,
    ADMIN_RULES_LIST,
    ADMIN_RULES_CREATE,
    ADMIN_RULES_UPDATE,
    ADMIN_RULES_DELETE,
    ADMIN_QUARANTINE_LIST,
    ADMIN_FEEDBACK_LIST,
    ADMIN_QUALITY,
    ADMIN_ANALYTICS_METRICS,
    ADMIN_ANALYTICS_HEATMAP,
    ADMIN_ANALYTICS_ACCURACY,
)

# admin request/reply (learner)
ADMIN_QUARANTINE_RELEASE: Final = f"{ADMIN_PREFIX}.quarantine.release"

# events (JetStream, stream EVENTS_STREAM)
SELECTION_EVENTS: Final = f"{EVENTS_PREFIX}.selection"
OUTCOME_EVENTS: Final = f"{EVENTS_PREFIX}.outcome"
REVIEW_EVENTS: Final = f"{EVENTS_PREFIX}.review"
FEEDBACK_EVENTS: Final = f"{EVENTS_PREFIX}.feedback"
SYNC_EVENTS: Final = f"{EVENTS_PREFIX}.sync"
SYNC_REPORTS: Final = f"{EVENTS_PREFIX}.sync_report"

# broadcasts to every selector (core NATS, no stream: a selector that misses one reloads on its cache TTL)
NOTIFY_PREFIX: Final = "toolsel.notify"
REGISTRY_CHANGED: Final = f"{NOTIFY_PREFIX}.registry_changed"
TOOL_STATE_CHANGED: Final = f"{NOTIFY_PREFIX}.tool_state"
POSTERIORS_UPDATED: Final = f"{NOTIFY_PREFIX}.posteriors"

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


def health(service: str) -> str:
    """The health request subject of one service."""
    return f"{HEALTH_PREFIX}.{service}"


def dead_letter(kind: str) -> str:
    """Where an event of ``kind`` goes when it cannot be applied."""
    return f"{DLQ_PREFIX}.{kind}"


def request_subjects() -> tuple[str, ...]:
    """Every request/reply subject, for the stream-overlap check."""
    return (SELECT, SYNC, *ADMIN_SUBJECTS, ADMIN_QUARANTINE_RELEASE, *(health(s) for s in SERVICES))
