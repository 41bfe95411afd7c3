"""The degradation state machine: every transition, and release onto probation."""

from datetime import UTC, datetime, timedelta

import pytest

from toolsel.contracts import ToolState
from toolsel.services.learner.degradation import FRESH_SCORE, DegradationPolicy, Health, Transition, observe, release

POLICY = DegradationPolicy(threshold=0.3, quarantine_after=5, window=10, probation_calls=3)
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def run(health: Health, qualities: list[float], policy: DegradationPolicy = POLICY) -> tuple[Health, list[Transition]]:
    transitions = []
    for i, quality in enumerate(qualities):
        health, transition = observe(health, quality, T0 + timedelta(seconds=i), policy)
        if transition is not None:
            transitions.append(transition)
    return health, transitions


def test_rolling_score_is_an_exponential_moving_average() -> None:
    health, _ = observe(Health(), 0.0, T0, POLICY)
    assert health.score == pytest.approx(FRESH_SCORE * (1 - 2 / 11))


def test_good_calls_keep_a_tool_healthy() -> None:
    health, transitions = run(Health(), [1.0, 0.9, 0.0, 1.0] * 10)
    assert health.state == ToolState.HEALTHY
    assert transitions == []


def test_failures_warn_then_degrade_then_quarantine_after_n_consecutive_degraded_calls() -> None:
    health, transitions = run(Health(), [0.0] * 6)
    assert [t.state for t in transitions] == [ToolState.WARNING]  # the 6th failure takes the score below 0.3
    assert health.score < 0.3 <= run(Health(), [0.0] * 5)[0].score

    health, transitions = run(health, [0.0])
    assert [t.state for t in transitions] == [ToolState.DEGRADED]
    assert (health.degraded_since, health.consecutive_degraded) == (T0, 1)

    health, transitions = run(health, [0.0] * 3)
    assert transitions == []
    assert health.consecutive_degraded == 4
    health, transitions = run(health, [0.0])
    assert [t.state for t in transitions] == [ToolState.QUARANTINED]
    assert "5 consecutive degraded calls" in transitions[0].reason
    assert health.state == ToolState.QUARANTINED
    assert health.degraded_since == T0


def test_warning_recovers_to_healthy_when_the_score_climbs_back() -> None:
    warned, _ = run(Health(), [0.0] * 6)
    _health, transitions = run(warned, [1.0])
    assert warned.state == ToolState.WARNING
    assert [t.state for t in transitions] == [ToolState.HEALTHY]


def test_degraded_recovers_and_its_counters_reset() -> None:
    degraded, _ = run(Health(), [0.0] * 8)
    assert degraded.state == ToolState.DEGRADED
    health, transitions = run(degraded, [1.0])
    assert [t.state for t in transitions] == [ToolState.HEALTHY]
    assert (health.degraded_since, health.consecutive_degraded) == (None, 0)


def test_a_quarantined_tool_stays_quarantined_whatever_its_calls() -> None:
    quarantined, _ = run(Health(), [0.0] * 11)
    health, transitions = run(quarantined, [1.0] * 30)
    assert quarantined.state == health.state == ToolState.QUARANTINED
    assert transitions == []


def test_release_puts_a_tool_on_probation_at_the_threshold() -> None:
    assert release(POLICY) == Health(state=ToolState.PROBATION, score=POLICY.threshold)


def test_on_probation_one_failed_call_quarantines_again_and_a_good_one_lifts() -> None:
    health, transitions = run(release(POLICY), [0.0])
    assert [t.state for t in transitions] == [ToolState.QUARANTINED]
    health, transitions = run(release(POLICY), [1.0])
    assert (health.state, transitions) == (ToolState.PROBATION, [])
    assert health.score > POLICY.threshold


def test_probation_passes_after_enough_calls_above_the_threshold() -> None:
    health, transitions = run(release(POLICY), [1.0, 1.0])
    assert health.state == ToolState.PROBATION
    assert transitions == []
    health, transitions = run(health, [1.0])
    assert [t.state for t in transitions] == [ToolState.HEALTHY]


def test_probation_quarantines_again_at_the_first_dip_below_the_threshold() -> None:
    health, transitions = run(
        release(POLICY),
        [1.0, 0.0, 0.0],
        DegradationPolicy(threshold=0.3, quarantine_after=5, window=10, probation_calls=20),
    )
    assert [t.state for t in transitions] == [ToolState.QUARANTINED]
    assert health.state == ToolState.QUARANTINED
    assert "probation" in transitions[0].reason
