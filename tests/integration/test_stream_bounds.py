"""The events and dead-letter streams are bounded by the settings' age and size, also when they already exist."""

import nats
from nats.js.api import StreamConfig

from toolsel.contracts import subjects
from toolsel.embedded import EmbeddedNats
from toolsel.messaging import ensure_streams
from toolsel.settings import Settings

DAY_S = 24 * 3600


async def test_streams_made_before_the_bounds_are_given_them(server: EmbeddedNats) -> None:
    url = server.login("learner")
    connection = await nats.connect(url)
    js = connection.jetstream()
    try:
        await js.add_stream(StreamConfig(name=subjects.DLQ_STREAM, subjects=list(subjects.DLQ_STREAM_SUBJECTS)))
        settings = Settings(
            events_max_age_days=2, events_max_bytes=10_000_000, dead_letters_max_age_days=1, dead_letters_max_bytes=0
        )
        await ensure_streams(url, settings)
        events = (await js.stream_info(subjects.EVENTS_STREAM)).config
        dead = (await js.stream_info(subjects.DLQ_STREAM)).config
    finally:
        await connection.close()
    assert (events.max_age, events.max_bytes) == (2 * DAY_S, 10_000_000)
    assert (dead.max_age, dead.max_bytes) == (DAY_S, -1)  # 0: bounded by age only


async def test_a_flood_of_dead_letters_keeps_the_newest_within_the_size_bound(server: EmbeddedNats) -> None:
    url = server.login("learner")
    await ensure_streams(url, Settings(dead_letters_max_bytes=64 * 1024))
    connection = await nats.connect(url)
    js = connection.jetstream()
    try:
        for n in range(200):
            await js.publish(subjects.dead_letter("outcome"), f"{n:04d}".encode() * 250, stream=subjects.DLQ_STREAM)
        state = (await js.stream_info(subjects.DLQ_STREAM)).state
    finally:
        await connection.close()
    assert 0 < state.bytes <= 64 * 1024
    assert state.first_seq > 1  # the oldest went first
    assert (state.last_seq, state.messages) == (200, 200 - state.first_seq + 1)  # and the newest all stayed
