"""A reason per result: the sentence from its evidence (directly), and on real selections over an in-memory
catalog: matched words, pins, related tools and success learnt in the request's context."""

from tests.unit.selector.factory import T
from tests.unit.selector.test_selector import TOOLS, selector
from toolsel.contracts import SelectRequest
from toolsel.services.selector.pipeline.reason import Evidence, sentence


def test_the_sentence_names_the_evidence_in_a_fixed_order() -> None:
    e = Evidence(words=["weather", "oslo"], similarity=0.8123, successes=4.0, calls=5.0, fitness=1.2)
    assert sentence(e) == (
        "Matches 'weather', 'oslo'; close in meaning (0.81); worked 4 of 5 recent times in this context; "
        "rated well in reviews of queries alike."
    )
    assert sentence(e) == sentence(Evidence(["weather", "oslo"], 0.8123, 4.0, 5.0, 1.2))  # deterministic


def test_pins_related_and_explored_tools_say_so_first() -> None:
    assert sentence(Evidence([], 0.0, 0.0, 0.0, 1.0, pinned=True)) == "Pinned."
    related = sentence(Evidence([], 0.1, 0.0, 0.0, 1.0, related_to="p/send_email"))
    assert related == "Often used with p/send_email; close in meaning (0.10)."
    explored = sentence(Evidence(["hotel"], 0.3, 0.0, 0.0, 0.5, explored=True))
    assert explored.startswith("Offered to be tried")
    assert explored.endswith("rated poorly for queries alike.")
    assert sentence(Evidence([], 0.0, 0.0, 0.0, 1.0)) == "Ranked among the candidates."


def test_a_selection_gives_each_tool_its_reason() -> None:
    tools = [T("send_email", "send an email message to a recipient", 0, related=["get_weather"]), *TOOLS[1:]]
    reply, _ = selector(tools).select(SelectRequest(query="send an email to Bob", k=1))
    why = {t.name: t.reason for t in reply.tools}
    assert why["search_tools"] == "Pinned."
    assert why["send_email"].startswith("Matches 'send', 'email'; close in meaning (1.00)")


def test_success_learnt_in_the_context_is_in_the_reason() -> None:
    sel = selector()
    sel.learn("p/get_weather", "default", "free:*:general", 7.0, 2.0, None)
    reply, _ = sel.select(SelectRequest(query="weather in Oslo", k=1))
    weather = next(t for t in reply.tools if t.name == "get_weather")
    assert "worked 6 of 7 recent times in this context" in weather.reason
