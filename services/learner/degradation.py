"""The degradation state machine (seed 004), a pure function of a tool's counters and its next call.

    healthy --below--> warning --below--> degraded --below x N consecutive--> quarantined
       ^                  |                  |                                   |
       +------above-------+------above-------+        release (operator / time)  v
       +---------------- probation_calls calls above ----------------------- probation
                                                  (below while on probation: quarantined again)

"below" means the rolling quality score, an exponential moving average of call qualities, is under the
threshold after the call. A new tool starts at a score of 1.0: it has to fail repeatedly to be warned about. A
released tool starts on probation at the threshold: one failed call quarantines it again.
"""

from dataclasses import dataclass, replace
from datetime import datetime

from toolsel.contracts import ToolState
from toolsel.settings import Settings

FRESH_SCORE = 1.0


@dataclass(frozen=True)
class DegradationPolicy:
    """The machine's parameters; the seed's values are the settings' defaults (``TOOLSEL_DEGRADE_THRESHOLD``...)."""

    threshold: float
    quarantine_after: int
    window: int
    probation_calls: int

    @classmethod
    def from_settings(cls, settings: Settings) -> "DegradationPolicy":
        return cls(
            settings.degrade_threshold, settings.quarantine_after, settings.quality_window, settings.probation_calls
        )

    @property
    def weight(self) -> float:
        """Weight of the newest call in the moving average."""
        return 2.0 / (self.window + 1)


@dataclass(frozen=True)
class Health:
    state: ToolState = ToolState.HEALTHY
    score: float = FRESH_SCORE
    degraded_since: datetime | None = None
    consecutive_degraded: int = 0
    probation_calls: int = 0


@dataclass(frozen=True)
class Transition:
    state: ToolState
    reason: str


def observe(
    health: Health, quality: float, at: datetime, policy: DegradationPolicy
) -> tuple[Health, Transition | None]:
    """The tool's health after one more call of the given quality, and the transition it caused, if any."""
    score = health.score + policy.weight * (quality - health.score)
    below = score < policy.threshold
    now = Health(health.state, score, health.degraded_since, health.consecutive_degraded, health.probation_calls)
    why = f"rolling quality {score:.2f} below {policy.threshold:g}"
    match health.state:
        case ToolState.QUARANTINED:
            return now, None
        case ToolState.PROBATION if below:
            return _quarantine(now, at, f"{why} while on probation")
        case ToolState.PROBATION:
            calls = health.probation_calls + 1
            if calls >= policy.probation_calls:
                return replace(now, state=ToolState.HEALTHY, probation_calls=0), Transition(
                    ToolState.HEALTHY, f"probation passed after {calls} calls"
                )
            return replace(now, probation_calls=calls), None
        case ToolState.HEALTHY if not below:
            return now, None
        case _ if not below:
            healthy = replace(now, state=ToolState.HEALTHY, degraded_since=None, consecutive_degraded=0)
            return healthy, Transition(ToolState.HEALTHY, f"recovered: rolling quality {score:.2f}")
        case ToolState.HEALTHY:
            return replace(now, state=ToolState.WARNING), Transition(ToolState.WARNING, why)
        case ToolState.WARNING:
            degraded = replace(now, state=ToolState.DEGRADED, degraded_since=at, consecutive_degraded=1)
            return degraded, Transition(ToolState.DEGRADED, f"{why} again")
        case _:
            count = health.consecutive_degraded + 1
            if count >= policy.quarantine_after:
                return _quarantine(now, at, f"{why} for {count} consecutive degraded calls")
            return replace(now, consecutive_degraded=count), None


def _quarantine(health: Health, at: datetime, reason: str) -> tuple[Health, Transition]:
    quarantined = replace(health, state=ToolState.QUARANTINED, degraded_since=health.degraded_since or at)
    return quarantined, Transition(ToolState.QUARANTINED, reason)


def release(policy: DegradationPolicy) -> Health:
    """Out of quarantine onto probation (an operator or the timer decided it may retry), at the threshold: its
    first failed call sends it back, each good one lifts it."""
    return Health(state=ToolState.PROBATION, score=policy.threshold)
