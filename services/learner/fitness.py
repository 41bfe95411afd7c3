"""Review verdicts (seed 002): what each suggested tool's review is, and the fitness multiplier it logs."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from toolsel.contracts import ToolReview, Verdict
from toolsel.settings import Settings


@dataclass(frozen=True)
class Multipliers:
    """The fitness each verdict logs; the seed's values are the settings' defaults (``TOOLSEL_FITNESS_*``)."""

    perfect: float
    related: float
    unrelated: float
    broken: float

    @classmethod
    def from_settings(cls, settings: Settings) -> "Multipliers":
        return cls(
            settings.fitness_perfect, settings.fitness_related, settings.fitness_unrelated, settings.fitness_broken
        )

    def of(self, verdict: Verdict) -> float:
        """The fitness a review with this verdict records (1.0 is neutral for the selector)."""
        return float(getattr(self, verdict.value))


def verdicts(suggested: Iterable[str], reviews: Iterable[ToolReview], none_of_these: bool) -> dict[str, Verdict]:
    """Verdict per suggested tool key. "None of these" makes every suggestion unrelated unless the same
    review names a verdict for it; reviews of tools the selection did not suggest are ignored (as outcomes)."""
    given: Mapping[str, Verdict] = {r.key: r.verdict for r in reviews}
    result: dict[str, Verdict] = {}
    for key in suggested:
        if key in given:
            result[key] = given[key]
        elif none_of_these:
            result[key] = Verdict.UNRELATED
    return result
