"""Each tool of a request of several needs is paired with its own need too; other requests add nothing."""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from toolsel.training_data.model import Pair
from toolsel.training_data.needs import need_pairs

WORDS = ("flight", "weather", "hotel", "email")


def embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """A unit vector per text along the first of ``WORDS`` it names (exact nearness for the test)."""
    rows = np.zeros((len(texts), len(WORDS)), dtype=np.float32)
    for row, text in zip(rows, texts, strict=True):
        row[next(i for i, w in enumerate(WORDS) if w in text)] = 1.0
    return rows


def split(query: str) -> list[str]:
    return [part.strip() for part in query.split(" then ")]


def pair(query_id: str, query: str, tool: str, source: str = "s", group: str = "g") -> Pair:
    return Pair(query_id, query, f"{source}/{tool}", f"{tool}: the {tool} tool", source, group)


def test_each_tool_of_a_request_of_several_needs_is_paired_with_its_own_need() -> None:
    request = "book a flight to Rome then check the weather there then email me the plan"
    pairs = [pair("1", request, "weather"), pair("1", request, "flight"), pair("1", request, "email")]
    found = need_pairs(pairs, split, embed)
    assert [(p.tool_id, p.query, p.query_id, p.group) for p in found] == [
        ("s/weather", "check the weather there", "1#need1", "g"),
        ("s/flight", "book a flight to Rome", "1#need0", "g"),
        ("s/email", "email me the plan", "1#need2", "g"),
    ]


def test_a_request_of_one_tool_or_one_need_adds_nothing_and_sources_are_apart() -> None:
    one_tool = pair("1", "book a flight then check the weather", "flight")
    one_need = [pair("2", "a hotel with a flight included", t) for t in ("hotel", "flight")]
    same_id_elsewhere = pair("1", "book a flight then check the weather", "weather", source="other")
    assert need_pairs([one_tool, *one_need, same_id_elsewhere], split, embed) == []


def test_two_tools_of_one_need_share_it() -> None:
    request = "find a hotel then book a flight"
    pairs = [pair("7", request, "hotel"), pair("7", request, "flight"), pair("7", request, "hotel", group="h")]
    assert [p.query for p in need_pairs(pairs, split, embed)] == ["find a hotel", "book a flight", "find a hotel"]
