"""Review verdicts and their fitness multipliers (seed 002)."""

from toolsel.contracts import ToolReview, Verdict
from toolsel.services.learner.fitness import Multipliers, verdicts
from toolsel.settings import Settings


def review(name: str, verdict: Verdict) -> ToolReview:
    return ToolReview(plugin_id="p", name=name, verdict=verdict)


def test_default_multipliers_are_the_seeds() -> None:
    m = Multipliers.from_settings(Settings())
    assert [m.of(v) for v in (Verdict.PERFECT, Verdict.RELATED, Verdict.UNRELATED, Verdict.BROKEN)] == [
        1.4,
        1.05,
        0.75,
        0.35,
    ]


def test_multipliers_are_configurable() -> None:
    assert Multipliers(1.4, 1.05, 0.75, broken=0.1).of(Verdict.BROKEN) == 0.1


def test_none_of_these_makes_every_suggestion_unrelated() -> None:
    assert verdicts(["p/a", "p/b"], [], none_of_these=True) == {"p/a": Verdict.UNRELATED, "p/b": Verdict.UNRELATED}


def test_explicit_reviews_win_and_unsuggested_tools_are_ignored() -> None:
    given = [review("a", Verdict.BROKEN), review("elsewhere", Verdict.PERFECT)]
    assert verdicts(["p/a", "p/b"], given, none_of_these=True) == {"p/a": Verdict.BROKEN, "p/b": Verdict.UNRELATED}
    assert verdicts(["p/a", "p/b"], given, none_of_these=False) == {"p/a": Verdict.BROKEN}
