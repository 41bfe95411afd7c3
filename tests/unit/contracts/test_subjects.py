"""Subject spaces: requests never land in a stream, broadcasts neither, and no name is used twice."""

import pytest

from toolsel.contracts import subjects

STREAM_PATTERNS = (*subjects.EVENTS_STREAM_SUBJECTS, *subjects.DLQ_STREAM_SUBJECTS)
NOTIFY_SUBJECTS = (subjects.REGISTRY_CHANGED, subjects.TOOL_STATE_CHANGED, subjects.POSTERIORS_UPDATED)
TENANT = "t.acme.bot"
EVENT_SUBJECTS = (
    subjects.SELECTION_EVENTS,
    *(subjects.scoped(root, TENANT) for root in subjects.SCOPED_ROOTS if root.startswith(subjects.EVENTS_PREFIX)),
    subjects.OUTCOME_EVENTS,
    subjects.REVIEW_EVENTS,
    subjects.FEEDBACK_EVENTS,
    subjects.SYNC_EVENTS,
    subjects.SYNC_REPORTS,
)


def matches(pattern: str, subject: str) -> bool:
    """NATS wildcard semantics: '*' is exactly one token, a final '>' one or more."""
    pat, sub = pattern.split("."), subject.split(".")
    for i, token in enumerate(pat):
        if token == ">":
            return len(sub) > i
        if i >= len(sub) or (token != "*" and token != sub[i]):
            return False
    return len(pat) == len(sub)


@pytest.mark.parametrize(
    ("pattern", "subject", "expected"),
    [
        ("a.>", "a.b", True),
        ("a.>", "a.b.c", True),
        ("a.>", "a", False),
        ("a.*", "a.b", True),
        ("a.*", "a.b.c", False),
        ("a.*.c", "a.b.c", True),
        ("a.b", "a.b", True),
        ("a.b", "a.bc", False),
        ("a.b", "a.b.c", False),
    ],
)
def test_matcher(pattern: str, subject: str, expected: bool) -> None:
    assert matches(pattern, subject) is expected


def test_request_subjects_cover_select_sync_and_every_health() -> None:
    requests = subjects.request_subjects()
    assert subjects.any_scope(subjects.SELECT_ROOT) in requests
    assert subjects.any_scope(subjects.SYNC_ROOT) in requests
    for service in ("selector", "learner", "indexer"):
        assert f"toolsel.rpc.health.{service}" in requests


@pytest.mark.parametrize("subject", subjects.request_subjects())
@pytest.mark.parametrize("pattern", STREAM_PATTERNS)
def test_no_request_subject_falls_in_a_stream(pattern: str, subject: str) -> None:
    assert not matches(pattern, subject)


@pytest.mark.parametrize("subject", NOTIFY_SUBJECTS)
@pytest.mark.parametrize("pattern", STREAM_PATTERNS)
def test_notify_subjects_are_outside_the_streams(pattern: str, subject: str) -> None:
    assert not matches(pattern, subject)


@pytest.mark.parametrize("subject", EVENT_SUBJECTS)
def test_event_subjects_are_captured_by_the_events_stream(subject: str) -> None:
    assert any(matches(p, subject) for p in subjects.EVENTS_STREAM_SUBJECTS)
    assert not any(matches(p, subject) for p in subjects.DLQ_STREAM_SUBJECTS)


@pytest.mark.parametrize("root", subjects.SCOPED_ROOTS)
def test_a_scoped_subject_names_its_sender_and_is_what_its_service_reads(root: str) -> None:
    subject = subjects.scoped(root, TENANT)
    assert subjects.scope_of(subject, root) == TENANT
    assert matches(subjects.any_scope(root), subject)
    assert matches(subjects.any_scope(root), subjects.scoped(root, subjects.OPERATOR_SCOPE))
    assert subjects.scope_of("toolsel.other", root) is None


def test_no_root_reads_another_roots_scopes() -> None:
    for root in subjects.SCOPED_ROOTS:
        for other in subjects.SCOPED_ROOTS:
            if other != root:
                assert not matches(subjects.any_scope(root), subjects.scoped(other, TENANT))


def test_dead_letters_go_to_the_dlq_stream_only() -> None:
    subject = subjects.dead_letter("outcome")
    assert subject == "toolsel.dlq.outcome"
    assert any(matches(p, subject) for p in subjects.DLQ_STREAM_SUBJECTS)
    assert not any(matches(p, subject) for p in subjects.EVENTS_STREAM_SUBJECTS)


def test_every_subject_constant_is_unique() -> None:
    constants = {n: v for n, v in vars(subjects).items() if n.isupper() and isinstance(v, str)}
    assert {"SELECT", "SYNC", "REGISTRY_CHANGED", "EVENTS_STREAM", "DLQ_STREAM"} <= constants.keys()
    values = list(constants.values())
    assert len(set(values)) == len(values)


def test_request_subjects_are_unique_and_health_subjects_clash_with_no_constant() -> None:
    requests = subjects.request_subjects()
    assert len(set(requests)) == len(requests)
    constants = {v for n, v in vars(subjects).items() if n.isupper() and isinstance(v, str)}
    health = [subjects.health(s) for s in subjects.SERVICES]
    assert not constants & set(health)


AREAS = {
    subjects.ADMIN_REGISTRY_SUBJECTS: (
        subjects.ADMIN_TOOLS_PREFIX,
        subjects.ADMIN_EMBEDDINGS_PREFIX,
        subjects.ADMIN_CATEGORIES_PREFIX,
        subjects.ADMIN_PAGE_MAPPINGS_PREFIX,
        subjects.ADMIN_RULES_PREFIX,
    ),
    subjects.ADMIN_LEARNING_SUBJECTS: (
        subjects.ADMIN_PREFIX + ".",
        subjects.ADMIN_QUARANTINE_PREFIX,
        subjects.ADMIN_FEEDBACK_PREFIX,
    ),
    subjects.ADMIN_ANALYTICS_SUBJECTS: (subjects.ADMIN_ANALYTICS_PREFIX,),
}


def test_every_admin_subject_is_in_exactly_one_area_under_one_of_its_prefixes() -> None:
    constants = [
        v for n, v in vars(subjects).items() if n.startswith("ADMIN_") and isinstance(v, str) and "PREFIX" not in n
    ]
    assert len(constants) == 28
    assert sorted(subjects.ADMIN_SUBJECTS) == sorted(constants)
    for subject in constants:
        areas = [prefixes for area, prefixes in AREAS.items() if subject in area]
        assert len(areas) == 1, subject
        assert any(subject.startswith(prefix) for prefix in areas[0]), subject


@pytest.mark.parametrize("service", subjects.SERVICES)
def test_a_copys_own_health_subject_is_its_services_and_no_other_ones(service: str) -> None:
    """What a container's health check asks: one copy's subject, which the service's NATS permissions let it answer
    (``instance_health(service, "*")``), and no other service's, nor the queue group's subject."""
    own = subjects.instance_health(service, "3f2a9c1b7e10")
    assert own == f"toolsel.rpc.health.{service}.3f2a9c1b7e10"
    assert matches(subjects.instance_health(service, "*"), own)
    assert not matches(subjects.health(service), own)
    for other in subjects.SERVICES:
        if other != service:
            assert not matches(subjects.instance_health(other, "*"), own)
    assert not any(matches(pattern, own) for pattern in STREAM_PATTERNS)


@pytest.mark.parametrize(
    ("host", "token"),
    [
        ("3f2a9c1b7e10", "3f2a9c1b7e10"),  # a container's id
        ("web-1.example.com", "web-1-example-com"),  # a domain's dots would split the subject
        ("a*b>c d", "a-b-c-d"),  # NATS wildcards and spaces
        ("..", "unnamed"),
    ],
)
def test_a_host_name_becomes_one_subject_token(host: str, token: str) -> None:
    assert subjects.instance_name(host) == token
    assert len(subjects.instance_health("selector", token).split(".")) == 5
