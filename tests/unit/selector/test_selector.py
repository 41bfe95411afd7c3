"""The whole selection over an in-memory catalog: every stage, the quarantine on every path, tenants, pins."""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from tests.unit.selector.factory import DIM, AxisEmbedder, T, axis, catalog, usage_record
from toolsel.contracts import SelectRequest, ToolRef
from toolsel.contracts.selection import CONTEXT_KEY_MAX, SELECTED_MAX
from toolsel.services.selector.catalog import ReviewIndex
from toolsel.services.selector.decompose import decompose
from toolsel.services.selector.pipeline.candidates import first_best
from toolsel.services.selector.policy import Rule
from toolsel.services.selector.selector import Selector
from toolsel.services.selector.signals.base import ReviewLookup
from toolsel.settings import Settings

TOOLS = [
    T("send_email", "send an email message to a recipient", 0, category="mail"),
    T("read_inbox", "read the email inbox messages", 1, category="mail"),
    T("get_weather", "weather forecast for a city", 2, category="weather"),
    T("search_flights", "search flights between airports", 3, category="travel"),
    T("book_hotel", "book a hotel room", 4, category="travel"),
    T("search_tools", "find more tools", 5, pinned=True, pin_weight=10),
]
EMBED = AxisEmbedder({"email": 0, "inbox": 1, "weather": 2, "flight": 3, "hotel": 4})


class FixedEmbedder:
    """Embeds every query to one given vector."""

    dim = DIM

    def __init__(self, vector: npt.NDArray[np.float32]) -> None:
        self.vector = vector

    def embed_request(self, query: str, parts: Sequence[str] = ()) -> list[npt.NDArray[np.float32]]:
        return [self.vector for _ in (query, *parts)]


def usage_row(name: str, scope: str, axis_: int, version: int) -> dict[str, Any]:
    """The tool learnt queries along ``axis_`` in ``scope``."""
    return usage_record(f"p/{name}", axis_, version, scope)


def selector(tools: list[T] = TOOLS, **settings: object) -> Selector:
    # the seed's page-wide context keeps these tests' context keys readable; the intent default has its own test
    defaults: dict[str, object] = {
        "exploration_slots": 0,
        "thompson_sampling": False,
        "context_key_template": "{tier}:{page}:general",
    }
    return Selector(Settings(**{**defaults, **settings}), catalog(tools), EMBED)  # type: ignore[arg-type]


def names(sel: Selector, **request: object) -> list[str]:
    reply, _ = sel.select(SelectRequest(**request))  # type: ignore[arg-type]
    return [t.name for t in reply.tools]


def test_the_matching_tool_comes_first_after_the_pins() -> None:
    assert names(selector(), query="send an email to Bob", k=2)[:2] == ["search_tools", "send_email"]


def test_pins_come_first_by_weight_and_may_exceed_k() -> None:
    tools = [*TOOLS, T("health", "health check", 6, pinned=True, pin_weight=50)]
    got = names(selector(tools), query="weather in Oslo", k=2)
    assert got[:2] == ["health", "search_tools"]
    assert len(got) == 4


def test_max_tools_caps_the_reply_pins_included_and_the_event_offers_what_it_holds() -> None:
    tools = [*TOOLS, T("health", "health check", 6, pinned=True, pin_weight=50)]
    reply, event = selector(tools).select(SelectRequest(query="weather in Oslo", k=3, max_tools=3))
    assert [t.name for t in reply.tools] == ["health", "search_tools", "get_weather"]
    assert event is not None
    assert [t.name for t in event.tools] == ["health", "search_tools", "get_weather"]


@pytest.mark.parametrize(
    "request_fields",
    [
        {"query": "email please"},
        {"query": "email please", "dry_run": True},
        {"query": "email please", "retrieval": "bm25"},
        {"query": "email please", "rerank": False},
    ],
)
def test_a_quarantined_tool_never_appears(request_fields: dict[str, object]) -> None:
    tools = [
        T("send_email", "send an email", 0, quarantined=True),
        T("pinned_bad", "email", 1, pinned=True, quarantined=True),
        T("read_inbox", "email inbox", 1),
    ]
    assert "send_email" not in names(selector(tools), **request_fields)
    assert "pinned_bad" not in names(selector(tools), **request_fields)
    assert "send_email" not in names(
        selector(tools, bm25_fast_path=True, bm25_confidence_threshold=0.0), **request_fields
    )


def test_tenant_isolation() -> None:
    tools = [
        T("mine", "email tool", 0, tenant="acme"),
        T("theirs", "email tool", 0, tenant="globex"),
        T("shared", "email tool", 1),
    ]
    assert sorted(names(selector(tools), query="email", tenant_id="acme")) == ["mine", "shared"]


def test_a_catalog_pinning_hundreds_of_tools_still_answers_with_the_heaviest_pins() -> None:
    """The selection event holds at most ``SELECTED_MAX`` tools: 250 pins used to fail every request."""
    pinned = [T(f"pin_{i:03}", "always there", 6, pinned=True, pin_weight=i) for i in range(250)]
    reply, event = selector([*TOOLS, *pinned]).select(SelectRequest(query="send an email", k=3))
    assert len(event.tools) == len(reply.tools) == SELECTED_MAX
    shown = [t.name for t in reply.tools]
    assert shown[:2] == ["pin_249", "pin_248"]  # the heaviest first
    assert "send_email" in shown[-3:]  # room kept for the answer itself


def test_the_longest_page_and_tier_a_request_may_send_make_a_context_key_the_event_holds() -> None:
    page, tier = "/" + "p" * 255, "t" * 128
    reply, event = selector(context_key_template="{tier}:{page}:{intent}").select(
        SelectRequest(query="send an email", k=2, page=page, tier=tier)
    )
    assert event.context_key == reply.context_key == f"{tier}:{page}:{reply.intent}"
    wordy = "a context of much text of its own " * 30 + "{tier}:{page}:{intent}"
    first = selector(context_key_template=wordy).select(SelectRequest(query="send an email", k=2, page=page))[1]
    other = selector(context_key_template=wordy).select(SelectRequest(query="send an email", k=2, page=page[:-1] + "x"))
    assert len(first.context_key) == len(other[1].context_key) == CONTEXT_KEY_MAX
    assert first.context_key != other[1].context_key


def test_a_reply_tells_nothing_of_another_tenants_private_tools() -> None:
    """A shared tool's declared related tools, the query's spelling and the catalog count are read among the
    tools the tenant may see: another's private tool is neither named, spelt out nor counted."""
    tools = [
        T("send_email", "send an email message", 0, related=["payroll_export", "mail_merge", "gone"]),
        T("mail_merge", "merge a mail template", 1),
        T("payroll_export", "export the quintessor payroll ledger", 2, tenant="acme"),
        T("get_weather", "weather forecast for a city", 3),
    ]
    sel = selector(tools)
    query = "send an email; then find the quintesor report"

    def seen_by(tenant: str) -> tuple[list[str], list[str], int]:
        reply, _ = sel.select(SelectRequest(query=query, k=2, tenant_id=tenant, dry_run=True))
        email = next(t for t in reply.tools if t.name == "send_email")
        return [r.name for r in email.related_tools], reply.sub_queries, reply.candidate_counts["catalog"]

    assert seen_by("globex") == (["mail_merge"], ["send an email", "find the quintesor report"], 3)
    assert seen_by("acme") == (
        ["payroll_export", "mail_merge"],
        ["send an email", "find the quintessor report"],
        4,
    )


def test_same_name_in_two_plugins_are_two_tools() -> None:
    tools = [T("search", "search the web", 0, plugin="web"), T("search", "search files", 0, plugin="files")]
    reply, _ = selector(tools).select(SelectRequest(query="email", k=5))
    assert sorted(t.key for t in reply.tools) == ["files/search", "web/search"]


def test_exclude_removes_a_rejected_tool_even_a_pinned_one() -> None:
    got = names(
        selector(),
        query="send email",
        filters={"exclude": [ToolRef(plugin_id="p", name="send_email"), ToolRef(plugin_id="p", name="search_tools")]},
    )
    assert "send_email" not in got
    assert "search_tools" not in got


def test_page_filter_narrows_to_mapped_categories_and_falls_back_when_empty() -> None:
    sel = selector()
    sel.catalog = catalog(TOOLS, mappings=[("p", "/travel*", "travel", 0), ("p", "/empty", "nothing", 0)])
    travel = names(sel, query="weather please", page="/travel/rome", k=5)
    assert set(travel) == {"search_tools", "search_flights", "book_hotel"}
    reply, _ = sel.select(SelectRequest(query="weather please", page="/empty", k=5))
    assert "page_filter.empty" in reply.degraded
    assert "get_weather" in [t.name for t in reply.tools]


def test_another_tenants_page_mapping_leaves_a_request_alone() -> None:
    """acme maps its checkout page to its own private category: globex's requests there are neither narrowed
    nor told that the page's categories left nothing (which would say that someone maps the page)."""
    tools = [*TOOLS, T("acme_pay", "pay at the checkout", 6, tenant="acme", category="checkout")]
    sel = selector(tools)
    sel.catalog = catalog(tools, mappings=[("p", "/checkout", "checkout", 0)])
    globex, _ = sel.select(SelectRequest(query="send an email", page="/checkout", k=3, tenant_id="globex"))
    plain, _ = sel.select(SelectRequest(query="send an email", k=3, tenant_id="globex"))
    assert "page_filter.empty" not in globex.degraded
    assert [t.name for t in globex.tools] == [t.name for t in plain.tools]
    acme, _ = sel.select(SelectRequest(query="send an email", page="/checkout", k=3, tenant_id="acme"))
    assert [t.name for t in acme.tools if not t.pinned] == ["acme_pay"]


def test_visibility_rules_apply() -> None:
    sel = selector()
    sel.rules = [
        Rule("*", "tier", "deny", "category", "p/travel", {}, 0),
        Rule("*", "tier", "allow", "category", "p/travel", {"tier": {"gte": "teams"}}, 10),
    ]
    assert "book_hotel" not in names(sel, query="hotel", tier="free", k=5)
    assert "book_hotel" in names(sel, query="hotel", tier="enterprise", k=5)


def test_bm25_alone_when_vectors_are_unavailable() -> None:
    sel = selector()
    sel.embedder = None
    reply, _ = sel.select(SelectRequest(query="weather forecast", k=2))
    assert "retrieval.vectors" in reply.degraded
    assert reply.method == "bm25"
    assert reply.tools[1].name == "get_weather"


def test_compound_query_gets_a_tool_for_each_need() -> None:
    reply, _ = selector().select(SelectRequest(query="search a flight to Rome and then book a hotel", k=2))
    assert {t.name for t in reply.tools} >= {"search_flights", "book_hotel"}
    assert "decomposed(2)" in reply.method


def test_the_event_records_the_need_each_tool_was_offered_for() -> None:
    query = "search a flight to Rome and then book a hotel"
    reply, event = selector().select(SelectRequest(query=query, k=2))
    offered_for = {t.name: t.sub_query for t in event.tools}
    assert offered_for["search_flights"] == "search a flight to Rome"
    assert offered_for["book_hotel"] == "book a hotel"
    assert reply.sub_queries == ["search a flight to Rome", "book a hotel"]
    _, plain = selector().select(SelectRequest(query="book a hotel", k=2))
    assert plain.tools
    assert all(t.sub_query is None for t in plain.tools)


def test_each_need_of_a_compound_query_has_its_own_first_tool_for_confidence() -> None:
    by_rank_alone = {  # first: 0.5
        "intercept": 0.0,
        "cosine": 0.0,
        "bm25_match": 0.0,
        "log_rank": -10.0,
        "cosine_lead": 0.0,
        "log_length": 0.0,
        "compound": 0.0,
        "compound_log_rank": 0.0,
        "compound_first": 0.0,
    }
    sel = selector(confidence_coefficients=by_rank_alone)
    reply, _ = sel.select(SelectRequest(query="search a flight to Rome and then book a hotel", k=2))
    sure = {t.name: t.confidence for t in reply.tools}
    assert sure["search_flights"] == sure["book_hotel"] == pytest.approx(0.5)


@pytest.mark.parametrize(("sentence_vectors", "similarity"), [(True, 1.0), (False, 0.7071)])
def test_a_query_of_several_sentences_is_as_near_a_tool_as_its_nearest_sentence(
    sentence_vectors: bool, similarity: float
) -> None:
    sel = selector(sentence_vectors=sentence_vectors)
    query = "I read my email every morning. What will the weather be in Oslo?"  # one need: no parts
    reply, _ = sel.select(SelectRequest(query=query, k=3, dry_run=True))
    assert reply.sub_queries == []
    weather = next(t for t in reply.tools if t.name == "get_weather")
    assert weather.breakdown.similarity == pytest.approx(similarity, abs=1e-4)
    caching = CachingEmbedder(EMBED.keywords)
    ahead = Selector(Settings(sentence_vectors=sentence_vectors), catalog(TOOLS), caching)  # type: ignore[arg-type]
    sentences = ["I read my email every morning.", "What will the weather be in Oslo?"]
    read = [query, *sentences] if sentence_vectors else [query]
    assert ahead.to_embed(SelectRequest(query=query)) == read
    ahead.select(SelectRequest(query=query))
    assert caching.seen == set(read)  # what was named ahead is what the selection read


def test_a_learnt_tool_is_as_near_a_query_of_several_sentences_as_its_nearest_sentence() -> None:
    tools = [T("send_email", "send an email", 0), T("get_weather", "weather forecast", 2)]
    sel = selector(tools, fusion_weights={"bm25": 0.0})
    sel.usage.merge([usage_row("get_weather", "acme", 2, version=1)])  # learnt what it declares: the same axis
    query = "I read my email every morning. What will the weather be in Oslo?"
    for tenant in ("acme", "other"):  # learnt in acme, declared elsewhere: the sentence counts for both
        reply, _ = sel.select(SelectRequest(query=query, k=2, tenant_id=tenant, dry_run=True))
        weather = next(t for t in reply.tools if t.name == "get_weather")
        assert weather.breakdown.similarity == pytest.approx(1.0, abs=1e-4), tenant


def test_exploration_slot_is_marked_and_is_outside_the_exploited_ones() -> None:
    sel = selector(exploration_slots=1, thompson_sampling=True)
    reply, _ = sel.select(SelectRequest(query="email inbox", k=3, seed=1))
    retrieved = [t for t in reply.tools if not t.pinned]
    assert [t.exploration for t in retrieved] == [False, False, True]


def test_a_request_can_turn_exploration_off() -> None:
    sel = selector(exploration_slots=1, thompson_sampling=True)
    reply, _ = sel.select(SelectRequest(query="email inbox", k=3, seed=1, explore=False))
    expected, _ = sel.select(SelectRequest(query="email inbox", k=3, seed=1, rerank=True))
    assert not any(t.exploration for t in reply.tools)
    assert [t.key for t in reply.tools if not t.pinned][:2] == [t.key for t in expected.tools if not t.pinned][:2]


def test_learnt_posterior_moves_a_tool_up() -> None:
    twins = [T("alpha_mail", "send an email", 0), T("beta_mail", "send an email", 0)]  # equal relevance
    sel = selector(twins)
    assert names(sel, query="email", k=2) == ["alpha_mail", "beta_mail"]
    sel.learn("p/alpha_mail", "default", "free:*:general", 1.0, 30.0, None)
    sel.learn("p/beta_mail", "default", "free:*:general", 30.0, 1.0, None)
    assert names(sel, query="email", k=2) == ["beta_mail", "alpha_mail"]


def test_a_posterior_lifts_only_in_its_tenant_and_context() -> None:
    twins = [T("alpha_mail", "send an email", 0), T("beta_mail", "send an email", 0)]
    sel = selector(twins)
    sel.learn("p/beta_mail", "acme", "free:/inbox:general", 30.0, 1.0, datetime.now(UTC))
    assert names(sel, query="email", k=2, tenant_id="acme", page="/inbox") == ["beta_mail", "alpha_mail"]
    assert names(sel, query="email", k=2, tenant_id="acme", page="/compose") == ["alpha_mail", "beta_mail"]
    assert names(sel, query="email", k=2, tenant_id="other", page="/inbox") == ["alpha_mail", "beta_mail"]
    elsewhere = sel.select(SelectRequest(query="email", k=2, tenant_id="acme", page="/compose"))[0].tools
    assert [t.breakdown.recency for t in elsewhere] == [0.0, 0.0]


def test_perfect_statistics_never_lift_an_irrelevant_tool_above_a_relevant_one() -> None:
    # relevance after fusion: strong 1.0, relevant 0.3, popular 0.01; popular has every learnt part at its best
    tools = [T("strong", "a", 0), T("relevant", "b", 1), T("popular", "c", 2)]
    query = np.array([1.0, 0.3, 0.01] + [0.0] * (DIM - 3), dtype=np.float32)
    query /= np.linalg.norm(query)
    sel = selector(tools, fusion_weights={"bm25": 0.0, "history": 0.0})
    sel.embedder = FixedEmbedder(query)
    sel.learn("p/popular", "default", "free:*:general", 10_000.0, 1.0, datetime.now(UTC))
    sel.reviews = ReviewIndex(["p/popular"], query.reshape(1, DIM), np.array([1.4]), np.array(["default"]))
    reply, _ = sel.select(SelectRequest(query="anything", k=3))
    assert [t.name for t in reply.tools] == ["strong", "relevant", "popular"]
    popular = reply.tools[2].breakdown
    assert (popular.quality, popular.recency, popular.fitness) == (
        pytest.approx(1.0, abs=1e-3),
        pytest.approx(1.0, abs=1e-3),
        pytest.approx(1.4),
    )


@pytest.mark.parametrize("sampling", ["slot", "all"])
def test_rerank_sampling_draws_for_the_slot_or_for_every_rank(sampling: str) -> None:
    # equal relevance: with a draw for every rank the uncertain tools' order changes from seed to seed
    tools = [T(f"mail_{i}", "send an email", 0) for i in range(6)]
    sel = selector(tools, exploration_slots=1, thompson_sampling=True, rerank_sampling=sampling)
    orders = {tuple(names(sel, query="email", k=3, seed=seed)) for seed in range(20)}
    heads = {order[:2] for order in orders}
    assert (len(heads) > 1) == (sampling == "all")
    explored = [t.exploration for t in sel.select(SelectRequest(query="email", k=3, seed=1))[0].tools]
    assert explored == ([False, False, True] if sampling == "slot" else [False, False, False])


def deep_exploring() -> Selector:
    """40 tools by falling relevance to its one query, 3 candidates, and a slot that may reach rank 40."""
    tools = [T(f"tool_{i:02}", f"tool number {i}", i) for i in range(40)]
    query = np.array([1.0 - i / 50 for i in range(40)] + [0.0] * (DIM - 40), dtype=np.float32)
    sel = selector(
        tools,
        exploration_slots=1,
        thompson_sampling=True,
        retrieval_candidates=3,
        exploration_depth=40,
        fusion_weights={"bm25": 0.0},
    )
    sel.embedder = FixedEmbedder(query / np.linalg.norm(query))
    return sel


def test_the_exploration_slot_reaches_past_the_candidates_until_the_context_has_evidence() -> None:
    sel = deep_exploring()  # nothing is known yet
    ranks = {int(names(sel, query="q", k=2, seed=seed)[1][5:]) for seed in range(30)}
    assert max(ranks) >= 3  # some slot went past the 3 candidates
    for name in ("tool_00", "tool_01", "tool_02"):
        sel.learn(f"p/{name}", "default", "free:*:general", 200.0, 200.0, None)
    ranks = {int(names(sel, query="q", k=2, seed=seed)[1][5:]) for seed in range(30)}
    assert max(ranks) < 3  # this context has its evidence: the slot stays among the candidates


def test_a_slot_past_the_candidates_tries_a_tool_nothing_was_learnt_of_in_the_scope() -> None:
    sel = deep_exploring()  # every tool past the 3 candidates learnt something in acme but tool_39
    sel.usage.merge([usage_row(f"tool_{i:02}", "acme", i, version=i) for i in range(3, 39)])

    def past_the_candidates(tenant: str) -> set[str]:
        picks = {names(sel, query="q", k=2, seed=seed, tenant_id=tenant)[1] for seed in range(30)}
        return picks - {"tool_00", "tool_01", "tool_02"}

    assert past_the_candidates("acme") == {"tool_39"}
    assert len(past_the_candidates("other")) > 1  # nothing learnt in its scope: any tool past them may be tried


def test_learnt_usage_replaces_the_declared_vector_for_its_scope_only() -> None:
    tools = [T("send_email", "send an email", 0), T("get_weather", "weather forecast", 2)]
    sel = selector(tools, fusion_weights={"bm25": 0.0})
    sel.usage.merge([usage_row("send_email", "acme", 2, version=1)])

    def similarity(tenant: str) -> float:
        reply, _ = sel.select(SelectRequest(query="weather", k=2, tenant_id=tenant))
        return next(t.breakdown.similarity for t in reply.tools if t.name == "send_email")

    assert similarity("acme") == pytest.approx(0.7 / np.hypot(0.3, 0.7), abs=1e-6)
    assert similarity("other") == 0.0


def test_reply_reports_counts_tokens_and_breakdown() -> None:
    reply, event = selector().select(SelectRequest(query="send an email", k=2))
    assert reply.candidate_counts["catalog"] == len(TOOLS)
    assert reply.tokens.selected == 10 * len(reply.tools)
    assert reply.tokens.catalog == 10 * len(TOOLS)
    top = reply.tools[1]
    assert top.breakdown.similarity == pytest.approx(1.0)
    assert top.breakdown.bm25 > 0
    assert event.selection_id == reply.selection_id
    assert [t.name for t in event.tools] == [t.name for t in reply.tools]


def test_min_score_bounds_every_tool_returned_pins_and_related_tools_included() -> None:
    tools = [T("send_email", "send an email message to a recipient", 0, related=["book_hotel"]), *TOOLS[1:]]
    reply, _ = selector(tools).select(SelectRequest(query="send email", k=5, filters={"min_score": 0.6}))
    assert [t.name for t in reply.tools] == ["send_email"]
    assert all(t.confidence >= 0.6 for t in reply.tools)
    unbounded = names(selector(tools), query="send email", k=1)
    assert unbounded == ["search_tools", "send_email"]


def test_max_tools_caps_the_reply_without_reranking_too() -> None:
    assert len(names(selector(), query="send an email", k=5, max_tools=2, rerank=False)) == 2


def test_related_tools_name_only_what_the_request_may_be_given() -> None:
    """An agent following ``related_tools`` must not be led to a tool quarantined for it or one its session
    rejected."""
    tools = [
        T("send_email", "send an email message", 0, related=["read_inbox", "purge_inbox", "mail_merge"]),
        T("read_inbox", "read the email inbox messages", 1),
        T("purge_inbox", "purge the inbox", 2, quarantined=True),
        T("mail_merge", "merge a mail template", 3),
    ]
    excluded = {"exclude": [{"plugin_id": "p", "name": "read_inbox"}]}
    reply, _ = selector(tools).select(SelectRequest(query="send an email", k=1, filters=excluded))
    assert [r.name for r in reply.tools[0].related_tools] == ["mail_merge"]


def test_seeded_requests_are_reproducible() -> None:
    sel = selector(exploration_slots=1, thompson_sampling=True)
    first = names(sel, query="email", k=3, seed=42)
    assert all(names(sel, query="email", k=3, seed=42) == first for _ in range(5))
    assert np.isfinite(sel.select(SelectRequest(query="email", seed=1))[0].tools[0].score)


def test_the_intent_labels_the_query_by_its_nearest_tool_whatever_the_session_excluded() -> None:
    assert Settings().context_key_template == "{tier}:{page}:{intent}"  # the default
    sel = selector(context_key_template="{tier}:{page}:{intent}")
    reply, event = sel.select(SelectRequest(query="weather in Oslo", tier="pro", page="/home"))
    assert reply.intent == event.intent == "p/get_weather"
    assert reply.context_key == event.context_key == "pro:/home:p/get_weather"
    excluded = {"exclude": [{"plugin_id": "p", "name": "get_weather"}]}
    rejected = SelectRequest(query="weather in Oslo", tier="pro", page="/home", filters=excluded)
    assert sel.select(rejected)[0].context_key == reply.context_key  # the session's exclusions change nothing
    by_category = selector(context_key_template="{tier}:{page}:{intent}", intent_label="category")
    assert by_category.select(SelectRequest(query="weather in Oslo"))[0].context_key == "free:*:weather"
    uncategorised = selector([T("get_weather", "weather forecast", 2), *TOOLS[3:]], intent_label="category")
    assert uncategorised.select(SelectRequest(query="weather"))[0].intent == "p/get_weather"  # its own label
    assert selector().select(SelectRequest(query="weather"))[0].context_key == "free:*:general"


class SentenceEmbedder:
    """Each text's own vector, for a request of two sentences whose second names one tool outright."""

    dim = DIM

    def __init__(self, vectors: dict[str, npt.NDArray[np.float32]]) -> None:
        self.vectors = vectors

    def embed_request(self, query: str, parts: Sequence[str] = ()) -> list[npt.NDArray[np.float32]]:
        return [self.vectors[text] for text in (query, *parts)]

    def embed_requests(self, requests: Sequence[tuple[str, Sequence[str]]]) -> list[list[npt.NDArray[np.float32]]]:
        return [self.embed_request(q, p) for q, p in requests]

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.vectors[text]

    def cached(self, query: str, parts: Sequence[str] = ()) -> bool:
        return True


def _unit(v: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return (v / np.linalg.norm(v)).astype(np.float32)


def test_a_request_of_sentences_keeps_its_intent_once_its_nearest_tool_is_learnt() -> None:
    """The nearest tool by one of the request's sentences was labelled; once its success was learnt, only the
    whole request's cosine was read for it, the label moved to another tool, and the lesson was never read again."""
    whole = "We land in Paris on Friday and need somewhere to stay. Book the flight."
    first, second = "We land in Paris on Friday and need somewhere to stay.", "Book the flight."
    vectors = {
        whole: _unit(0.6 * axis(3) + 0.8 * axis(4)),
        first: _unit(0.2 * axis(3) + 0.7 * axis(4) + 0.69 * axis(7)),
        second: axis(3),
    }
    sel = selector(context_key_template="{tier}:{page}:{intent}")
    sel.embedder = SentenceEmbedder(vectors)  # type: ignore[assignment]
    request = SelectRequest(query=whole, tenant_id="acme")
    before, event = sel.select(request)
    assert before.intent == "p/search_flights"  # "Book the flight." names it
    sel.learn("p/search_flights", "acme", event.context_key, 4.0, 1.0, None)
    sel.usage.merge([usage_record("p/search_flights", 3, version=1, scope="acme", positives=1)])
    after = sel.select(request)[0]
    assert (after.intent, after.context_key) == (before.intent, before.context_key)
    flights = next(t for t in after.tools if t.name == "search_flights")
    assert (flights.breakdown.alpha, flights.breakdown.beta) == (4.0, 1.0)  # the lesson is read


@pytest.mark.parametrize("model", [True, False])
def test_without_vectors_the_intent_is_the_declared_words_whatever_was_excluded_or_quarantined(model: bool) -> None:
    """By BM25 alone (the request's retrieval, or no model), the label was the first tool left after the session's
    exclusions and quarantine: what rejected or quarantined a tool was filed under a key the next ask did not read."""
    template = {"context_key_template": "{tier}:{page}:{intent}"}
    query = "weather forecast for Oslo"
    plain = selector(**template)
    excluded = {"exclude": [ToolRef(plugin_id="p", name="get_weather")]}
    gone = [T(t.name, t.text, t.axis, category=t.category, quarantined=t.name == "get_weather") for t in TOOLS[:5]]
    quarantined = selector(gone, **template)
    if not model:
        plain.embedder = quarantined.embedder = None
    mode = "bm25" if model else "hybrid"
    keys = {
        plain.select(SelectRequest(query=query, tenant_id="acme", retrieval=mode))[0].context_key,
        plain.select(SelectRequest(query=query, tenant_id="acme", retrieval=mode, filters=excluded))[0].context_key,
        quarantined.select(SelectRequest(query=query, tenant_id="acme", retrieval=mode))[0].context_key,
    }
    assert keys == {"free:*:p/get_weather"}
    nothing = plain.select(SelectRequest(query="zzz qqq", tenant_id="acme", retrieval=mode))[0]
    assert nothing.intent == "none"


def test_bm25_counts_in_the_fusion_as_much_as_its_confidence() -> None:
    # "flight" is in search_flights' text (BM25) but the query vector points at the weather tool
    sel = selector(bm25_confidence_scale=1000.0)  # BM25 barely trusted: the vectors decide
    embed = AxisEmbedder({"flight": 2})
    sel.embedder = embed  # type: ignore[assignment]
    assert names(sel, query="flights", k=1, rerank=False) == ["get_weather"]
    trusting = selector(fusion_bm25_by_confidence=False)
    trusting.embedder = embed  # type: ignore[assignment]
    top_two = names(trusting, query="flights", k=2, rerank=False)
    assert set(top_two) == {"get_weather", "search_flights"}


def test_a_replaced_review_index_is_mapped_anew() -> None:
    from toolsel.services.selector.catalog import ReviewIndex

    def index(n: int) -> ReviewIndex:
        centroids = np.zeros((n, 384), dtype=np.float32)
        centroids[:, 0] = 1.0
        return ReviewIndex(["p/send_email"] * n, centroids, np.full(n, 1.4), np.full(n, "default"))

    sel = selector()
    for size in (3, 5, 2, 7):  # copies come and go; each answer must use the current one
        sel.reviews = index(size)
        reply, _ = sel.select(SelectRequest(query="email", k=2))
        assert reply.tools[1].breakdown.fitness == pytest.approx(1.4)


def test_reviews_from_another_tenant_leave_this_tenants_fitness_alone() -> None:
    tools = [T("strong", "a", 0), T("reviewed", "b", 1)]
    query = np.array([1.0, 0.5] + [0.0] * (DIM - 2), dtype=np.float32)
    query /= np.linalg.norm(query)
    sel = selector(tools)
    sel.embedder = FixedEmbedder(query)
    sel.reviews = ReviewIndex(["p/reviewed"], query.reshape(1, DIM), np.array([1.4]), np.array(["other"]))
    mine, _ = sel.select(SelectRequest(query="anything", k=2, seed=1))
    theirs, _ = sel.select(SelectRequest(query="anything", k=2, seed=1, tenant_id="other"))
    fitness = {t.name: t.breakdown.fitness for t in mine.tools}
    assert fitness["reviewed"] == pytest.approx(1.0)
    assert {t.name: t.breakdown.fitness for t in theirs.tools}["reviewed"] == pytest.approx(1.4)


FILTERED = [
    T("send_email", "send an email", 0, plugin="mail", category="outbox", tags=["messaging"], server="smtp"),
    T("read_inbox", "read the email inbox", 1, plugin="mail", category="inbox", tags=["messaging", "read"]),
    T("get_weather", "weather forecast", 2, plugin="meteo", category="forecast", server="api"),
]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"plugins": ["mail"]}, {"send_email", "read_inbox"}),
        ({"servers": ["smtp", "api"]}, {"send_email", "get_weather"}),
        ({"servers": [""]}, {"read_inbox"}),  # no server declared
        ({"categories": ["inbox", "forecast"]}, {"read_inbox", "get_weather"}),
        ({"tags": ["read"]}, {"read_inbox"}),
        ({"plugins": ["mail"], "tags": ["messaging"], "servers": ["smtp"]}, {"send_email"}),
        ({"plugins": ["nowhere"]}, set()),
    ],
)
def test_request_filters_keep_only_the_tools_they_name(filters: dict[str, list[str]], expected: set[str]) -> None:
    assert set(names(selector(FILTERED), query="email weather", k=5, filters=filters)) == expected


class CachingEmbedder(AxisEmbedder):
    """Keeps what it embedded, as the model's query cache does."""

    def __init__(self, keywords: dict[str, int]) -> None:
        super().__init__(keywords)
        self.seen: set[str] = set()

    def embed_request(self, query: str, parts: Sequence[str] = ()) -> list[npt.NDArray[np.float32]]:
        self.seen.update((query, *parts))
        return super().embed_request(query, parts)

    def cached(self, query: str, parts: Sequence[str] = ()) -> bool:
        return all(text in self.seen for text in (query, *parts))


def test_what_is_embedded_ahead_is_the_query_and_its_parts_until_the_model_has_them() -> None:
    embedder = CachingEmbedder(EMBED.keywords)
    sel = Selector(Settings(), catalog(TOOLS), embedder)  # type: ignore[arg-type]
    query = "check the weather in Paris, then search flights to Paris, and then book a hotel room"
    request = SelectRequest(query=query)
    texts = sel.to_embed(request)
    assert texts == [query, *decompose(query)]  # the whole request, then each need
    assert len(texts) == 4
    sel.select(request)
    assert embedder.seen == set(texts)  # the selection embeds exactly what was named
    assert sel.to_embed(request) == []
    assert sel.to_embed(SelectRequest(query="a new query", retrieval="bm25")) == []
    fast = Selector(Settings(bm25_fast_path=True), catalog(TOOLS), embedder)  # type: ignore[arg-type]
    assert fast.to_embed(SelectRequest(query="a new query")) == []  # BM25 may answer it alone
    assert Selector(Settings(), catalog(TOOLS), None).to_embed(SelectRequest(query="a new query")) == []


def test_a_misspelt_query_is_embedded_ahead_as_the_selection_reads_it() -> None:
    # the selection reads the repaired query: embedded ahead as asked, the model would be called again in it
    embedder = CachingEmbedder(EMBED.keywords)
    sel = Selector(Settings(), catalog(TOOLS), embedder)  # type: ignore[arg-type]
    request = SelectRequest(query="weathr forcast for Oslo")
    assert sel.to_embed(request) == ["weather forecast for Oslo"]
    embedder.embed_request("weather forecast for Oslo")
    sel.select(request)
    assert embedder.seen == {"weather forecast for Oslo"}


@pytest.mark.parametrize(("history_weight", "searches"), [(0.0, 1), (1.0, 2)])
def test_the_review_index_is_searched_for_retrieval_only_when_its_signal_counts(
    monkeypatch: pytest.MonkeyPatch, history_weight: float, searches: int
) -> None:
    # the rerank's fitness searches it once a request; the retrieval signal at weight 0 shows nowhere
    sel = selector(fusion_weights={"vector": 1.0, "bm25": 2.0, "history": history_weight})
    sel.reviews = ReviewIndex(["p/send_email"], axis(0).reshape(1, DIM), np.array([1.0]), np.array(["default"]))
    calls: list[object] = []
    near = ReviewLookup.near

    def counted(self: ReviewLookup, query: npt.NDArray[np.float32]) -> object:
        calls.append(query)
        return near(self, query)

    monkeypatch.setattr(ReviewLookup, "near", counted)
    sel.select(SelectRequest(query="send an email to Bob", k=2))
    assert len(calls) == searches


def test_another_tenants_nearer_reviews_leave_a_tenants_own_fitness_as_it_was() -> None:
    # tenant-b's one past query (similarity 0.9 to "email") rated send_email 1.4; tenant-a has reviewed more
    # queries, all nearer: with its entries competing for the neighbours' places, tenant-b's would be left out
    near = (0.9 * axis(0) + np.sqrt(1 - 0.81) * axis(5)).astype(np.float32)
    own = ("p/send_email", near, 1.4, "tenant-b")
    theirs = [("p/read_inbox", axis(0), 0.35, "tenant-a")] * 12

    def fitness_seen_by_b(entries: list[tuple[str, npt.NDArray[np.float32], float, str]]) -> float:
        sel = selector()
        sel.reviews = ReviewIndex(
            [key for key, _, _, _ in entries],
            np.array([v for _, v, _, _ in entries], dtype=np.float32),
            np.array([f for _, _, f, _ in entries]),
            np.array([scope for _, _, _, scope in entries]),
        )
        reply, _ = sel.select(SelectRequest(query="email", tenant_id="tenant-b", k=5))
        return next(t.breakdown.fitness for t in reply.tools if t.name == "send_email")

    alone = fitness_seen_by_b([own])
    assert alone == pytest.approx(1.4)
    assert fitness_seen_by_b([*theirs, own]) == alone


def test_the_nearest_tool_among_ties_is_the_first_whatever_rounding_did() -> None:
    """Two tools with one vector tie; a row recomputed apart (a learnt tool's) differs in its last bits, and the
    label must not follow that noise (it would file what was learnt under a key the next query does not read)."""
    assert first_best(np.array([0.2, 0.7712312, 0.7712309, -np.inf])) == 1
    assert first_best(np.array([0.2, 0.7712309, 0.7712312, -np.inf])) == 1
    assert first_best(np.array([0.2, 0.77, 0.78])) == 2


def test_a_quarantined_tool_keeps_the_intent_it_labelled() -> None:
    """The outcomes that quarantine a query's nearest tool were learnt under the label it gave: the query must
    still read them once the tool is gone from its answers."""
    template = {"context_key_template": "{tier}:{page}:{intent}"}
    before = selector(**template).select(SelectRequest(query="weather in Oslo"))[0]
    gone = [T(t.name, t.text, t.axis, category=t.category, quarantined=t.name == "get_weather") for t in TOOLS[:5]]
    after = selector(gone, **template).select(SelectRequest(query="weather in Oslo"))[0]
    assert "get_weather" not in {t.name for t in after.tools}
    assert after.intent == before.intent == "p/get_weather"
    assert after.context_key == before.context_key


def test_the_intent_is_read_from_declared_vectors_whatever_use_taught() -> None:
    """A tool usage memory taught for words no tool declares comes nearest the query by the vector signal, and the
    label stays: what is learnt is filed under the key the same query reads again."""
    sel = selector(context_key_template="{tier}:{page}:{intent}", fusion_weights={"bm25": 0.0})
    sel.embedder = AxisEmbedder({**EMBED.keywords, "rain": 6})  # type: ignore[assignment]
    request = SelectRequest(query="rain", tenant_id="acme", rerank=False)
    before = sel.select(request)[0]
    sel.usage.merge([usage_row("book_hotel", "acme", 6, version=1)])  # book_hotel learnt for rain queries
    after = sel.select(request)[0]
    assert after.tools[0].name == "book_hotel"
    assert after.tools[0].breakdown.similarity > 0.5  # its learnt vector, near the query
    assert after.intent == before.intent != "p/book_hotel"
