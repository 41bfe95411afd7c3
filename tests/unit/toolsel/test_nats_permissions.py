"""What each NATS user may publish and subscribe."""

import pytest

from toolsel.contracts import subjects
from toolsel.nats_permissions import NATS_USERS, nats_permissions


@pytest.mark.parametrize("service", subjects.SERVICES)
def test_each_service_user_answers_its_own_health_subjects_alone_and_may_ask_any(service: str) -> None:
    """compose runs each health check as its service's NATS user."""
    permissions = nats_permissions()
    for user in subjects.SERVICES:
        subscribe = permissions[user]["subscribe"]["allow"]
        answers = [s for s in subscribe if s.startswith(subjects.HEALTH_PREFIX)]
        if user == service:
            assert answers == [subjects.health(service), subjects.instance_health(service, "*")]
        assert subjects.instance_health(service, "*") not in subscribe or user == service
        assert f"{subjects.HEALTH_PREFIX}.>" in permissions[user]["publish"]["allow"]


def test_the_users_are_those_given_permissions_services_first() -> None:
    assert NATS_USERS == ("selector", "learner", "indexer", "default.agent", "operator")
