"""The learner app built from a given Settings object, in memory: its consumers, admin areas, health and query
embeddings."""

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from faststream.nats import NatsBroker, TestNatsBroker

from tests.unit.bench.test_embed_order import CountingModel, embedder_over, unit_rows
from toolsel.contracts import ErrorCode, ErrorReply, HealthReply, subjects
from toolsel.embedder import Embedder
from toolsel.services.learner import state as learner_state
from toolsel.services.learner.app import create_app
from toolsel.services.learner.handlers import EVENT_KINDS
from toolsel.services.learner.state import LearnerState
from toolsel.settings import Settings

LEARNING_AND_ANALYTICS = {
    subjects.ADMIN_QUALITY,
    subjects.ADMIN_QUARANTINE_LIST,
    subjects.ADMIN_QUARANTINE_RELEASE,
    subjects.ADMIN_FEEDBACK_LIST,
    subjects.ADMIN_ANALYTICS_METRICS,
    subjects.ADMIN_ANALYTICS_HEATMAP,
    subjects.ADMIN_ANALYTICS_ACCURACY,
    subjects.ADMIN_ANALYTICS_REVIEWS,
}
ABOUT_A_TOOL = {subjects.ADMIN_QUALITY, subjects.ADMIN_QUARANTINE_RELEASE, subjects.ADMIN_FEEDBACK_LIST}
A_TOOL = {"plugin_id": "p", "name": "t"}


def _settings() -> Settings:
    return Settings(home=Path(tempfile.mkdtemp(prefix="toolsel-unit-")), admin_token="secret", learner_batch_size=7)


def _served(settings: Settings) -> dict[str, str | None]:
    """Subject -> queue group of every subscriber of a new app."""
    app = create_app(settings)
    return {s.subject.broker_address: getattr(s, "queue", None) for s in app.broker.subscribers}  # type: ignore[attr-defined]


def test_each_event_kind_has_a_durable_consumer_named_as_before() -> None:
    served = _served(_settings())
    assert {kind.filter for kind in EVENT_KINDS} == {
        subjects.SELECTION_EVENTS,
        subjects.any_scope(subjects.OUTCOME_ROOT),
        subjects.any_scope(subjects.REVIEW_ROOT),
        subjects.any_scope(subjects.FEEDBACK_ROOT),
    }
    for kind in EVENT_KINDS:
        assert served[kind.filter] == f"{subjects.LEARNER_DURABLE_PREFIX}-{kind.name}"


def test_the_learner_serves_the_learning_and_analytics_admin_areas_and_its_health() -> None:
    served = _served(_settings())
    admin = {subject for subject in served if subject.startswith(subjects.ADMIN_PREFIX)}
    assert admin == LEARNING_AND_ANALYTICS
    assert subjects.health("learner") in served


@pytest.mark.parametrize("subject", sorted(LEARNING_AND_ANALYTICS))
async def test_admin_requests_need_the_configured_token(subject: str) -> None:
    app = create_app(_settings())
    async with TestNatsBroker(app.broker) as broker:
        body = {"admin_token": "wrong", **(A_TOOL if subject in ABOUT_A_TOOL else {})}
        asked = await broker.request(json.dumps(body).encode(), subject, timeout=30)
        reply = ErrorReply.model_validate(await asked.decode())
    assert (reply.error.code, reply.error.field) == (ErrorCode.UNAUTHORIZED, "admin_token")


async def test_health_reports_the_counters_of_this_app() -> None:
    app = create_app(_settings())
    async with TestNatsBroker(app.broker) as broker:
        asked = await broker.request(b"", subjects.health("learner"), timeout=30)
        reply = HealthReply.model_validate(await asked.decode())
    assert reply.service == "learner"
    assert reply.details == {
        "applied": 0,
        "duplicates": 0,
        "dead_letters": 0,
        "reviews": 0,
        "feedback": 0,
        "transitions": 0,
    }


async def test_queries_are_embedded_once_each_through_the_models_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Agents repeat queries: the learner keeps their vectors in the model's cache, as a selector does, and reads
    the new ones of a batch in one model call."""
    model = CountingModel()

    async def load_model(settings: Settings, *, cache: bool = True) -> Embedder:
        return embedder_over(model, settings.query_cache_size if cache else 0)

    monkeypatch.setattr(learner_state, "load_model", load_model)
    settings, broker = _settings(), NatsBroker()
    state = LearnerState.from_settings(
        settings, broker, broker.publisher(subjects.POSTERIORS_UPDATED), broker.publisher(subjects.TOOL_STATE_CHANGED)
    )
    rows = await state.embed(["a" * 20, "b" * 21, "a" * 20])
    assert model.batches == [["a" * 20, "b" * 21]]
    np.testing.assert_allclose(rows, unit_rows([20, 21, 20]), rtol=1e-6)
    np.testing.assert_allclose(await state.embed(["b" * 21]), unit_rows([21]), rtol=1e-6)
    assert model.calls == 1
    assert (await state.embed([])).shape == (0, 2)
