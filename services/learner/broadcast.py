"""What the learner tells the selectors once a batch has committed: the new posteriors, the usage version to fetch
up to and the tool-state changes, in that order.

The posteriors are cut into as many messages as the NATS server's ``max_payload`` needs (NATS refuses a larger
message whole); a usage version or a tool-state change is one small message.

Nothing here raises. The batch is committed: an error raised into the batcher would have it split the batch and
apply the halves again, which finds only duplicates, so nothing would be broadcast and the events would be
acknowledged as applied, the loss unlogged. A broadcast that fails is logged instead, and the selectors' periodic
recheck (``Settings.tool_list_cache_ttl_s``) takes in what it carried.
"""

import contextlib
import logging
from collections.abc import Iterator, Sequence

from pydantic_core import to_json

from toolsel.contracts import PosteriorsUpdated, PosteriorUpdate, ToolStateChanged, UsageUpdated
from toolsel.contracts.events import POSTERIOR_UPDATES_MAX
from toolsel.messaging import room
from toolsel.services.learner.state import LearnerState

log = logging.getLogger("toolsel.learner")


def posterior_messages(updates: Sequence[PosteriorUpdate], limit: int) -> list[PosteriorsUpdated]:
    """``updates`` in order, in as few messages as fit: each takes at most ``limit`` bytes as JSON and carries at most
    ``POSTERIOR_UPDATES_MAX``, but for an update too large alone (it goes alone, for NATS to refuse)."""
    start = len(to_json(PosteriorsUpdated(updates=[]))) - 1  # each update brings its comma, but the first
    messages: list[PosteriorsUpdated] = []
    chunk: list[PosteriorUpdate] = []
    size = start
    for update in updates:
        cost = len(to_json(update)) + 1
        if chunk and (size + cost > limit or len(chunk) == POSTERIOR_UPDATES_MAX):
            messages.append(PosteriorsUpdated(updates=chunk))
            chunk, size = [], start
        chunk.append(update)
        size += cost
    if chunk:
        messages.append(PosteriorsUpdated(updates=chunk))
    return messages


@contextlib.contextmanager
def _logged(what: str) -> Iterator[None]:
    """Log a broadcast that failed rather than raise it into the batcher (see the module's docstring)."""
    try:
        yield
    except Exception:
        log.exception("could not broadcast %s after its batch committed; selectors catch up at their recheck", what)


async def publish_posteriors(state: LearnerState, updates: Sequence[PosteriorUpdate]) -> None:
    """Tell the selectors the new posteriors (they take them in at once); a message that fails stops the rest,
    which would most likely fail as well."""
    if updates:
        with _logged(f"{len(updates)} posterior updates"):
            for message in posterior_messages(updates, room(getattr(state.broker.connection, "max_payload", None))):
                await state.posteriors.publish(message)


async def publish_usage(state: LearnerState, usage: UsageUpdated | None) -> None:
    """Tell the selectors which usage version to fetch up to."""
    if usage is not None:
        with _logged(f"usage version {usage.version}"):
            await state.usage.publish(usage)


async def announce(state: LearnerState, changes: Sequence[ToolStateChanged]) -> None:
    """Tell the selectors (they reload and drop a quarantined tool at once) and the logs."""
    for change in changes:
        log.warning("tool %s is %s: %s", change.key, change.state.value, change.reason)
        with _logged(f"tool {change.key} {change.state.value}"):
            await state.tool_states.publish(change)
    state.counters.transitions += len(changes)
