"""The indexer app: plugin syncs by request/reply or as durable JetStream events, tenants' own pins, and the
registry admin API."""

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from faststream import ContextRepo, FastStream
from faststream.exceptions import NackMessage
from faststream.middlewares import AckPolicy
from faststream.nats import NatsMessage, PullSub
from faststream.nats.annotations import NatsMessage as RequestMessage
from pydantic import ValidationError

from toolsel.contracts import PluginSync, RegistryChanged, SyncPart, SyncPartReceived, SyncReport, SyncUpload, subjects
from toolsel.heap import freeze_start_up_heap
from toolsel.messaging import (
    RequestError,
    add_health,
    dead_letter,
    events_stream,
    failure,
    gives_up,
    in_progress_while,
    rpc_router,
    undecoded,
    validation_reply,
)
from toolsel.runtime import every, load_model, open_store, service_app, service_broker
from toolsel.services.indexer import pins, retention
from toolsel.services.indexer.admin import admin_routers
from toolsel.services.indexer.state import STATE, IndexerState, State
from toolsel.services.indexer.sync import run_sync
from toolsel.services.indexer.uploads import stage_part, uploaded_payload
from toolsel.settings import Settings
from toolsel.tenancy import sender

DESCRIPTION = "Keeps the tool registry true to what plugins declare; embeds what changed."
SYNC_IN_PROGRESS_EVERY_S = 10.0
"""How often an indexer applying a sync event tells the server it is still at it, within the consumer's ack wait
(the server's default, 30 s): a sync whose embedding took longer was delivered again to another indexer, which
embedded it twice and published a second, contradicting report."""

log = logging.getLogger("toolsel.indexer")


def create_app(settings: Settings) -> FastStream:
    """The indexer for ``settings``: its lifespan opens the store and loads the model into an ``IndexerState``."""
    broker = service_broker(settings, "indexer")
    events = events_stream()
    registry_changed = broker.publisher(subjects.REGISTRY_CHANGED, title="registry-changed", schema=RegistryChanged)
    sync_reports = broker.publisher(subjects.SYNC_REPORTS, stream=events, title="sync-report", schema=SyncReport)
    rpc = rpc_router()

    @rpc.subscriber(
        subjects.any_scope(subjects.SYNC_ROOT),
        queue=subjects.INDEXER_QUEUE,
        max_workers=settings.sync_concurrency,
        title="sync",
        description="Sync a plugin's declaration and reply with the report (or a typed error).",
    )
    async def sync_request(sync: PluginSync, msg: RequestMessage, state: State) -> SyncReport:
        return await run_sync(state, sync, json.loads(msg.body), sender(msg.raw_message.subject, subjects.SYNC_ROOT))

    @rpc.subscriber(
        subjects.any_scope(subjects.SYNC_PART_ROOT),
        queue=subjects.INDEXER_QUEUE,
        title="sync-part",
        description="Stage one part of a sync too large for one message (refused past TOOLSEL_SYNC_MAX_BYTES).",
    )
    async def sync_part(part: SyncPart, msg: RequestMessage, state: State) -> SyncPartReceived:
        return await stage_part(state, part, sender(msg.raw_message.subject, subjects.SYNC_PART_ROOT))

    @rpc.subscriber(
        subjects.any_scope(subjects.SYNC_UPLOAD_ROOT),
        queue=subjects.INDEXER_QUEUE,
        max_workers=settings.sync_concurrency,
        title="sync-upload",
        description=(
            "Join the parts of a sync that the same sender staged, check their size and digest, and apply it like"
            " a sync."
        ),
    )
    async def sync_upload(upload: SyncUpload, msg: RequestMessage, state: State) -> SyncReport:
        scope = sender(msg.raw_message.subject, subjects.SYNC_UPLOAD_ROOT)
        payload = await uploaded_payload(state, upload, scope)
        return await run_sync(state, PluginSync.model_validate(payload), payload, scope)

    @broker.subscriber(
        subjects.any_scope(subjects.SYNC_EVENTS_ROOT),
        stream=events,
        durable=subjects.INDEXER_DURABLE,
        pull_sub=PullSub(batch_size=1, timeout=1.0),
        decoder=undecoded,
        ack_policy=AckPolicy.NACK_ON_ERROR,
        title="sync-events",
        description="Syncs published as durable events; the report goes to the sync-report subject.",
    )
    async def sync_event(msg: NatsMessage, state: State) -> None:
        """Refused (malformed, unauthorised): dead-lettered at once. Failed: redelivered, and dead-lettered once
        it keeps failing with the server there; never dropped without a dead letter: a dead letter or a report that
        cannot be published leaves the event to be delivered again (not terminated, FastStream's default), and a
        sync applied already is not applied twice (``apply_sync``)."""
        try:
            scope = sender(msg.raw_message.subject, subjects.SYNC_EVENTS_ROOT)
            sync = PluginSync.model_validate_json(msg.body)
            running = asyncio.ensure_future(run_sync(state, sync, json.loads(msg.body), scope))
            report = await in_progress_while(msg.raw_message, running, SYNC_IN_PROGRESS_EVERY_S)
        except ValidationError as invalid:
            await dead_letter(broker, "sync", msg.body, validation_reply(invalid).error.message)
            return
        except RequestError as refused:
            await dead_letter(broker, "sync", msg.body, refused.detail.message)
            return
        except Exception as error:
            if not gives_up(error, msg.raw_message.metadata.num_delivered, state.settings.poison_attempts):
                raise NackMessage(delay=state.settings.failed_event_delay_s) from error
            await dead_letter(broker, "sync", msg.body, failure(error))
            return
        await sync_reports.publish(report)

    def health() -> dict[str, Any]:
        state: IndexerState = broker.context.get(STATE)
        return {"syncs": state.syncs, "embedded": state.embedded, "embedding_s": round(state.embedding_s, 3)}

    rpc.include_router(pins.router())
    for router in admin_routers():
        rpc.include_router(router)
    add_health(rpc, "indexer", health)
    broker.include_router(rpc)

    @asynccontextmanager
    async def lifespan(context: ContextRepo) -> AsyncIterator[None]:
        pool = await open_store(settings)
        try:
            embedder = await load_model(settings, cache=False)
            state = IndexerState(settings, pool, embedder, registry_changed)
            context.set_global(STATE, state)
            freeze_start_up_heap()
            background = [asyncio.create_task(_embed_left_pending(state))]
            if retention.prunes(settings):
                prune = every(
                    settings.retention_interval_s,
                    lambda: retention.prune_logged(pool, settings),
                    log,
                    "dropping what is past keeping",
                )
                background.append(asyncio.create_task(prune))
            try:
                yield
            finally:
                for task in background:
                    task.cancel()
                await asyncio.gather(*background, return_exceptions=True)  # their connections back before the close
        finally:
            await pool.close()

    return service_app(broker, "indexer", DESCRIPTION, lifespan)


async def _embed_left_pending(state: IndexerState) -> None:
    """Embed what an earlier indexer left pending (a sync's embedding pass cut short by a model error or the
    process's end: its tools were committed, and otherwise wait for the next sync of any plugin), then tell the
    selectors. In the background: a start-up with thousands left answers requests meanwhile."""
    try:
        if await state.embed():
            await state.changed("*", "embedded at start")
    except Exception:  # the next sync or recompute embeds them; the selectors' periodic check reads them
        log.exception("could not embed the tools left pending at start")
