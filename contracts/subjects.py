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
ADMIN_SUBJECTS: Final = (
    ADMIN_TOOLS_LIST,
    ADMIN_TOOLS_SHOW,
    ADMIN_TOOLS_VERSIONS,
    ADMIN_TOOLS_ROLLBACK,
    ADMIN_TOOLS_APPROVE,
    ADMIN_EMBEDDINGS_RECOMPUTE,
    ADMIN_DRIFT,
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
