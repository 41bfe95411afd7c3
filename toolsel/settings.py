"""Configuration from the environment (``TOOLSEL_*``). Every default from the seeds is named here, once."""

import json
import re
from functools import lru_cache
from pathlib import Path
from string import Formatter
from typing import Any, Literal, Self

import platformdirs
from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from toolsel.embedder import BATCH_TOKENS, TOOLS_MODEL_NAME
from toolsel.errors import first_problem

RERANK_WEIGHTS = {
    "relevance": 0.5,
    "quality": 0.35,
    "recency": 0.15,
    "popularity": 0.0,
    "user_history": 0.0,
    "performance": 0.0,
    "fitness": 0.3,
}
FUSION_WEIGHTS = {"vector": 1.0, "bm25": 2.0, "history": 0.0}
CONTEXT_FIELDS = ("tier", "page", "intent")
"""What a bandit context's template may name (``context_key_template``)."""
CONFIDENCE_COEFFICIENTS = {
    "intercept": -4.6912,
    "cosine": 3.9119,
    "bm25_match": 2.7169,
    "log_rank": -0.9621,
    "cosine_lead": 12.4635,
    "log_length": 0.4835,
    "compound": -2.2087,
    "compound_log_rank": 0.8495,
    "compound_first": 2.557,
}
"""Logistic regression fitted for toolsel/minilm-tools-3 on the four shared evaluation sets (each weighing the same),
each set ranked by the model trained without it, over the top 10 of every query (``scripts/fit_fusion.py``;
``scripts/fit_confidence.py`` fits it alone): raw cosine, the share of the query's BM25 ceiling a tool reached, the
log of its best retrieval rank over the query and its parts, its cosine's lead over the best other tool's times its
cosine, the log of the query's length in characters, and for a compound request an intercept, rank slope and a
part's first tool's term of its own (``toolsel.services.selector.confidence``)."""


ENV_PREFIX = "TOOLSEL_"
"""Every setting is read from the environment variable of its name in upper case after this prefix."""


def variable(field: str) -> str:
    """The environment variable that sets ``field``."""
    return ENV_PREFIX + field.upper()


def default_home() -> Path:
    """Per-user data directory for the embedded servers; ``TOOLSEL_HOME`` overrides it."""
    return Path(platformdirs.user_data_dir("toolsel", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=".env",
        env_ignore_empty=True,  # `TOOLSEL_X=` (a template's blank, compose's `${X:-}`) means the default
        extra="ignore",
        use_attribute_docstrings=True,
    )

    # where things are
    home: Path = Field(default_factory=default_home)
    """Data directory of the embedded servers, their logs and the model layout."""
    nats_url: str | None = None
    """External NATS; when unset, ``toolsel up`` starts an embedded server under ``home``."""
    database_url: str | None = None
    """External PostgreSQL with pgvector; when unset, an embedded server under ``home``."""
    model_dir: Path | None = None
    """A directory with model.onnx and tokenizer files; default: the packaged model ``embedding_model`` names. With
    an ``embedding_model`` fastembed does not know, the directory's model is read as mean-pooled, of
    ``embedding_dim``-d vectors (scripts/export_onnx_model.py writes such a directory)."""
    embedding_model: str = TOOLS_MODEL_NAME
    """The embedding model. By default ``toolsel/minilm-tools-3``, toolsel's own all-MiniLM-L6-v2 fine-tuned for
    tool retrieval, shipped in the package; the stock model, also shipped, is
    ``sentence-transformers/all-MiniLM-L6-v2``.
    Another name is a fastembed model, fetched and cached by fastembed (needs the network once), ``model_dir`` then
    optional, or with ``model_dir`` a model of your own (``toolsel train-model``). Set ``embedding_dim`` to its
    dimension. The store records which model made its vectors and the services refuse another: on a store in use,
    change the model with ``toolsel indexer --switch-model``."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    """Log level of the services (DEBUG, INFO, WARNING, ERROR, CRITICAL; in any case)."""

    # embeddings
    embedding_dim: int = Field(default=384, ge=1)
    """Dimension of the embedding vectors (the packaged model's: 384)."""
    embedding_batch_size: int = Field(default=32, ge=1)
    """Texts embedded per model call; also the most requests a selector embeds in one call (those that arrived while
    every embedding worker was busy)."""
    embedding_batch_tokens: int = Field(default=BATCH_TOKENS, ge=1)
    """Padded tokens per model call at most: long texts go in small batches, which keeps the model's memory
    arena small (a 10,000-tool sync peaked at 470 MB instead of 1.84 GB)."""
    embedding_threads: int = Field(default=1, ge=1)
    """One ONNX thread beats two on a busy 2-core box."""
    blas_threads: int = Field(default=1, ge=1)
    """numpy's BLAS threads per service process. A selection's matrix products are small; more threads only
    contend with the other services for the cores (a 2,000-tool cosine: 24 ms with two threads on a busy
    2-core machine, 0.6 ms with one)."""
    query_cache_size: int = Field(default=4096, ge=0)
    """Query embeddings a selector, and the learner, keeps (LRU); repeated queries skip the model."""
    embedding_workers: int = Field(default=2, ge=1)
    """Threads a service embeds in (the model releases the GIL, so each can use a core): a selector embeds this many
    requests' queries at once, off the event loop that other requests and broadcasts wait on; and any one call runs
    this many of its batches at once (a sync's texts, a compound request's parts)."""
    select_concurrency: int = Field(default=8, ge=1)
    """Select requests a selector takes at once: while some wait for their embedding, the others (a repeated
    query, another's selection) go on."""
    selects_held: int = Field(default=1024, ge=1)
    """Select requests a selector takes off NATS at most, running or waiting their turn: past
    ``select_concurrency`` they take turns across the requests' tenants, so one tenant's burst no longer holds
    another's select until it ends, and a selection given its turn first lets up to this many requests waiting at
    the NATS client come in. Past this many the rest wait at NATS, first come first served
    (``toolsel.services.selector.app``). 1024: four tenants' full waits (``select_waiting_per_tenant``), a few KB
    each."""
    select_waiting_per_tenant: int = Field(default=256, ge=1)
    """Select requests one tenant (all its identities together) may have waiting at a selector; the next is refused
    at once (``rate_limited``). 256: about two seconds of a selector's work (some 130 selects a second on a busy
    2-core box), well within the client's default 10 s timeout: a tenant with more in flight is told so at once
    rather than timing out."""

    # selection (seeds 000, 004)
    default_k: int = Field(default=7, ge=1, le=50)
    """Tools per answer before pins, when a request gives no k."""
    auto_k_floor: int = Field(default=1, ge=1, le=50)
    """The fewest tools a ``k: auto`` answer gives before pins (when the pool holds them)."""
    auto_k_ceiling: int = Field(default=10, ge=1, le=50)
    """The most tools a ``k: auto`` answer gives before pins."""
    auto_k_min_confidence: float = Field(default=0.03, ge=0.0, le=1.0)
    """``k: auto`` gives each candidate whose confidence (the calibrated chance that it fits) reaches this, and
    reaches ``auto_k_relative_confidence`` of the best one's: a tool is worth its tokens while it may be the one
    needed. Chosen with ``auto_k_relative_confidence`` for toolsel/minilm-tools-3 on the four shared sets, each
    ranked by the model that never saw it: of the rules at least as complete as k=5 on every set, the one that
    gives metatool's one-need queries the fewest tools (docs/results.md, Answer size)."""
    auto_k_relative_confidence: float = Field(default=0.08, ge=0.0, le=1.0)
    """The share of the best candidate's confidence a ``k: auto`` tool must reach: after a sure first tool, the
    long tail of unlikely ones is left out."""
    retrieval_candidates: int = Field(default=30, ge=1)
    """Candidates passed from retrieval to the rerank."""
    retrieval_cache_size: int = Field(default=32, ge=0)
    """Repeated queries whose retrieval and candidates a selector keeps (the hot-query cache, seed 001; LRU, 0:
    none). An entry is used only while the catalog, the learnt vectors and (when retrieval weighs it) the review
    index it came from are unchanged; the rerank runs on every request. About 8 bytes per catalog row per signal
    and query part, 400 KB at 10,000 tools."""
    exploration_slots: int = Field(default=1, ge=0)
    """Of the k tools, this many are the best of the rest by the sampled score: new or uncertain tools get tried."""
    rerank_weights: dict[str, float] = Field(default_factory=lambda: dict(RERANK_WEIGHTS))
    """Composite score weights by rerank signal (seeds 004, 001, 002): the fused retrieval relevance, success
    rate x rating, recency, and seed 001's factors off unless weighted (usage percentile, the user's own success
    with the tool, latency and error rate), with historical fitness from reviews of similar past queries. Names
    not given keep their default; 0 turns a signal off. Seed 001's factors stay off by measurement: cold they
    change nothing (no calls yet); online over 500 events held-out NDCG@10 fell 4.1 points on toolbench_stb,
    0.5 on metatool and 0 on seal_tools with popularity at 0.25, and 1.1, 0.1 and 0.6 with performance at 0.15 (a
    tool called for one need is lifted into others' answers); user history needs users the evaluation's agent does
    not have (docs/results.md, Default signals)."""
    recency_half_life_days: float = Field(default=14.0, gt=0)
    """Days after a tool's last successful call at which its recency score halves."""
    rating_prior: float = Field(default=0.5, gt=0.0, le=1.0)
    """The neutral rating: an unrated tool is taken to have it, a rating above it lifts a tool's quality and one
    below lowers it (a tool's ratings are drawn towards it, ``rating_prior_weight``)."""
    rating_prior_weight: float = Field(default=2.0, ge=0.0)
    """How many ratings of ``rating_prior`` a tool's own ratings are averaged with: its first rating moves it a
    third of the way."""
    latency_reference_ms: float = Field(default=1000.0, gt=0)
    """A tool this slow (median) gets half of the latency part of the performance score."""
    tier_order: list[str] = Field(default_factory=lambda: ["free", "open_source", "pro", "teams", "enterprise"])
    """Tiers from lowest to highest, for rules such as {"tier": {"gte": "teams"}}."""
    user_history_users: int = Field(default=10_000, ge=1)
    """Users whose own record with their tools (the ``user_history`` signal) a selector keeps in memory, all
    tenants together. Past it, the least recent user of the tenant holding the most is forgotten: one tenant's
    flood of users pushes out its own, and every tenant keeps up to an equal share. A user's record is about 110
    bytes a tool: 70 MB at most with the defaults."""
    user_history_tools: int = Field(default=64, ge=1)
    """Tools kept in one user's record, the least recently called forgotten first (an outcome counts only the tools
    its selection offered)."""
    user_history_selections: int = Field(default=100_000, ge=1)
    """Selections with a user whose outcome a selector awaits for that user's record, all tenants together, shared
    out as the users are (250 bytes each, 600 offering 50 tools); an outcome of one forgotten counts in no one's
    record (the learner still learns from it)."""

    # retrieval (seeds 002, 003)
    fusion: Literal["rrf", "scores", "zscore"] = "zscore"
    """How retrieval signals combine: a weighted mean of their z-scores over the pool (zscore), of max-scaled
    scores (scores), or reciprocal rank fusion (rrf). Z-scores beat max-scaled scores leaving each of the four
    evaluation sets out, and max-scaled scores beat RRF on all four (docs/results.md, Quality), so zscore is the
    default."""
    fusion_rrf_k: float = Field(default=60.0, ge=0)
    """The k of reciprocal rank fusion (TOOLSEL_FUSION=rrf)."""
    fusion_weights: dict[str, float] = Field(default_factory=lambda: dict(FUSION_WEIGHTS))
    """Retrieval fusion weights by signal: vector cosine, BM25 (over the tools' text and their learnt words), and
    the historical recommendation (tools that helped on similar past queries). Names not given keep their default;
    0 leaves a signal out. The historical recommendation is off by default: lifting what helped on near queries
    pulled multi-tool sets down (online toolbench_stb R@5 0.690 -> 0.615 over 2,000 events with it;
    docs/results.md, Quality); what is learnt reaches retrieval through the usage vectors and the learnt words
    instead."""
    fusion_zscore_bm25_factor: float = Field(default=0.3, ge=0)
    """With TOOLSEL_FUSION=zscore, BM25's fusion weight is multiplied by this: most tools match none of the
    query's words, so the few that do stand more deviations out than any cosine does. Fitted for toolsel/minilm-tools-3
    on a grid over the four shared sets, each ranked by the model trained without it (scripts/fit_fusion.py): 0.3
    on all four, and leaving each set out the other three picked 0.3 (0.2 leaving toolbench_stb out); its better
    vectors want less of BM25 than the stock model's, for which 0.67 was fitted (docs/results.md, Fusion and A
    model trained for tool retrieval)."""
    fusion_bm25_coverage: float = Field(default=0.0, ge=0.0)
    """Before fusion, each row's BM25 score is multiplied by the share of the query's BM25 ceiling it reached (the
    IDF mass of the query's words it matched) to this power (0 leaves BM25 as it is), so common words alone do not
    carry a tool to the top: at 0.75 "find hotels near the Eiffel Tower" no longer puts a store finder first on
    toolbench_stb. Off: leaving each set out of the model, full pipeline NDCG@10 livemcpbench -0.6 points at 0.75
    (-1.0 at 0.5), over the 0.3 a default may cost (docs/results.md, Lexical traps and misspellings)."""
    fusion_bm25_by_confidence: bool = True
    """Scale BM25's fusion weight by its confidence (seed 003's blend) rather than trusting it equally always."""
    bm25_k1: float = Field(default=1.2, ge=0)
    """BM25 term-frequency saturation (the textbook default; measured above 0.9 on all four sets)."""
    bm25_b: float = Field(default=0.75, ge=0, le=1)
    """BM25 length normalisation (the textbook default; measured above 0.4 on all four sets)."""
    bm25_fast_path: bool = False
    """Seed 003: answer from BM25 alone, skipping the embedding, when its confidence clears the gate. Off: in
    process, full pipeline NDCG@10 toolbench_stb -1.4 points, seal_tools -0.8, livemcpbench -0.2, metatool the same,
    and 6-16% of the replies whose first tool is relevant said ``no_match`` (docs/results.md, Default signals)."""
    bm25_confidence_threshold: float = Field(default=0.8, ge=0, le=1)
    """BM25 confidence above which the fast path answers from BM25 alone."""
    bm25_confidence_scale: float = Field(default=20.0, gt=0)
    """The best BM25 score divided by this, capped at 1, is BM25's confidence. With BM25's fusion weight of 2,
    chosen as one default over the four shared sets and checked leaving each set out (docs/results.md, Quality)."""
    query_spelling: bool = True
    """Repair misspelt query words before retrieval: a word neither a tool's text nor an English word list holds
    becomes the nearest word of the catalog's (``toolsel.services.selector.spelling``; docs/results.md, Lexical
    traps and misspellings)."""
    spelling_one_edit_length: int = Field(default=5, ge=1)
    """A misspelt word this long or longer may be one edit (insertion, deletion, substitution, transposition)
    from its repair; a shorter one is left as it is (Elasticsearch's AUTO fuzziness, AUTO:5,8)."""
    spelling_two_edits_length: int = Field(default=8, ge=1)
    """A misspelt word this long or longer may be two edits from its repair."""
    spelling_max_words: int = Field(default=8, ge=0)
    """Words of one query the spelling stage searches for at most (a word neither the catalog's words nor English
    hold is matched against the catalog's words of a near length): the query's first ones, whether or not an
    earlier query searched them; the rest stay as they are. A typed request holds a few typos: a query of hundreds
    of unknown words held a selector for tens of seconds, every tenant's selects waiting."""
    decompose_queries: bool = True
    """Split a compound request into its atomic needs and retrieve for each (seed 002)."""
    sentence_vectors: bool = True
    """For a query of several sentences, a tool's cosine with it is its best over the query and each sentence (read
    in the query's context, in the same model call). In process, full pipeline NDCG@10 metatool 0.709 -> 0.712,
    toolbench_stb 0.758 -> 0.761, seal_tools 0.930 -> 0.932, livemcpbench 0.439 -> 0.442 (docs/results.md)."""
    sentence_vectors_max: int = Field(default=16, ge=2)
    """Sentences of one query read so at most, its first ones (the evaluation sets' longest query has 13): each is a
    product with every tool's vector, and a query of hundreds of one-word sentences cost ten times a select."""
    confidence_coefficients: dict[str, float] = Field(default_factory=lambda: dict(CONFIDENCE_COEFFICIENTS))
    """The logistic model that turns a tool's raw signals into ``confidence``, the probability that it is
    relevant: intercept, cosine, bm25_match, log_rank (the log of the tool's best rank over the query and its
    parts), cosine_lead (its cosine less the best other tool's, times its cosine), log_length (the log of the
    query's length in characters), and for a compound request (split into parts) compound, compound_log_rank and
    compound_first, added to the intercept, the rank's slope and a part's first tool (fitted for the default model
    on the four shared sets by scripts/fit_fusion.py; docs/results.md, Quality)."""
    no_match_confidence: float = Field(default=0.2, ge=0.0, le=1.0)
    """A reply whose tools all have a confidence below this says ``no_match``: nothing in the catalog fits. At 0.2
    it says so for 2.9% of metatool's queries, none of toolbench_stb's or seal_tools' and 5.3% of livemcpbench's
    (at 0.25: 6.7%, 0%, 0.1%, 11.7%). Over five tools it says so for nonsense, a flight booked in Polish, an
    off-topic question and a question in German that none answers (best tools 0.07-0.16), over the 201 tools of the
    demo for nonsense and the Polish flight (0.10, 0.15) (docs/results.md, Quality)."""
    review_neighbours: int = Field(default=30, ge=1)
    """Review-index entries consulted for historical fitness and recommendation: an entry is one tool's verdicts
    on past queries alike, and a review judges every tool offered, so 30 is the verdicts of about three past
    queries."""
    review_min_similarity: float = Field(default=0.65, ge=-1, le=1)
    """Least cosine similarity of a past reviewed query to count as a neighbour (historical fitness, history).
    With 30 neighbours, 0.65 measured better online on the product than 0.8 with 10: held-out R@5 / NDCG@10 after
    2,000 events toolbench_stb 0.778 / 0.765 against 0.766 / 0.762, livemcpbench 0.542 / 0.549 against 0.473 /
    0.477, seal_tools 0.937 / 0.932 against 0.937 / 0.934, metatool after 5,000 0.927 / 0.867 against 0.923 /
    0.859 (docs/results.md). 0.5 lifted or sank tools for queries that needed others in an earlier simulation."""
    review_similarity_sharpness: float = Field(default=10.0, ge=0.0)
    """How much more a nearer past query's verdicts weigh in historical fitness: each neighbour weighs its cosine
    s times exp(sharpness x (s - 1)) (10: a neighbour at 0.9 weighs a third of an identical query, one at 0.65 a
    fiftieth), so the nearest verdicts on a tool decide rather than the mean of all within reach; 0 weighs by the
    cosine alone. Online, held-out R@5 / NDCG@10 with 10 against 0: metatool (10,000 events) 0.945 / 0.894
    against 0.946 / 0.890, toolbench_stb 0.756 / 0.737 against 0.752 / 0.736, livemcpbench 0.466 / 0.477 against
    0.465 / 0.466 (docs/results.md, Quality)."""
    context_key_template: str = "{tier}:{page}:{intent}"
    """The bandit context: placeholders {tier}, {page} and {intent} (the query's intent label,
    ``TOOLSEL_INTENT_LABEL``: seed 000 section 10.3's finer query category). Seed 000's own
    ``{tier}:{page}:general`` lets a tool's successes lift it for every query on the page, which measured worse
    online; with {intent} they lift it only for queries of the same intent."""
    intent_label: Literal["tool", "category"] = "tool"
    """A query's intent label (the reply's ``intent``, analytics, the bandit context's {intent}): the tool nearest
    its meaning by declared vectors among all the request may see, whatever the session excluded or a quarantine
    removed from its answers, or that tool's
    category (a tool without one: the tool). Measured on the sets whose tools carry categories
    (scripts/measure_intent.py, docs/results.md, Intent): by category, queries that need a tool in common share a
    label twice as often, but a label's queries share a needed tool 2-20 times less often (toolbench_stb 0.026
    against 0.617), so what one teaches lands mostly on other needs."""
    contexts_per_tenant_max: int = Field(default=10_000, ge=0)
    """Bandit contexts a tenant may learn under (0: no bound). Past it, a selection whose context the tenant has
    not learnt under reads and is learnt under its intent's context with page and tier ``*``. Pages and tiers are
    free text: a tenant's made-up page per selection added a context of about 3 posteriors each time, at 269 B
    each in every selector and about 340 B in ``tool_bandit_stats``; 10,000 contexts of 3 are 8.1 MB in each
    selector, far more than tiers x routes x intents an application's pages learn under."""
    thompson_sampling: bool = True
    """Off: rank by the posterior mean instead of a draw (reproducible evaluation)."""
    tokens_per_char: float = Field(default=0.25, gt=0)
    """Rough schema token estimate (about four characters a token)."""

    # learning from use, as the selector applies it (issue 12)
    usage_declared_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    """A tool with learnt examples is retrieved by ``normalize(w x declared + (1 - w) x usage centroid)``: the
    least share w of its declared vector, reached once it has learnt many examples (0.3 measured best in the
    offline simulation on four sets)."""
    usage_declared_prior: float = Field(default=8.0, ge=0.0)
    """The declared vector counts as this many examples: with n learnt ones its share is
    ``max(usage_declared_weight, prior / (n + prior))`` (0: always the least share). A centroid of a query or
    two is that query's phrasing and lifted its tool for other queries phrased alike: seal_tools' held-out R@5
    fell 0.858 -> 0.847 over 2,000 events with a fixed 0.3; in the offline simulation (vector alone, 2,000 events)
    8 took seal_tools 0.534 -> 0.587 and toolbench_stb 0.582 -> 0.623, livemcpbench unchanged, metatool
    0.905 -> 0.890 (equal at 10,000 events). A tool's learnt words count ``n / (n + prior)`` of their BM25
    score with n queries learnt, for the same reason."""
    usage_negative_similarity: float = Field(default=0.9, ge=0.0, le=2.0)
    """A query at least this close to a tool's negative examples (unrelated/broken reviews), and closer to them
    than to its positive blend, lowers the tool's cosine by the difference; above 1 turns the penalty off."""
    rerank_sampling: Literal["slot", "all"] = "slot"
    """``slot``: rank by the posterior mean and fill the exploration slots by a Thompson draw; ``all``: rank
    every place by the draw (seed 000). The slot measured better: in the offline simulation a draw for every
    place cost held-out R@5 0.652 -> 0.451 on toolbench_stb and 0.466 -> 0.334 on livemcpbench before learning."""
    exploration_depth: int = Field(default=90, ge=1)
    """How deep in the relevance ranking the exploration slot may reach beyond the candidates (default three
    times ``retrieval_candidates``; not below it, and equal to it: no reach beyond): a relevant tool retrieval
    never ranks high enough still gets tried, with a chance ``1 / (1 + n / 10)`` that falls as the context's top
    tools gather n observations; those nothing was learnt of in the request's scope first."""

    # learning (seeds 000, 002, 004)
    prior_alpha: float = Field(default=1.0, gt=0.0)
    """Beta prior of a tool's success: alpha (a Beta distribution needs it above 0)."""
    prior_beta: float = Field(default=1.0, gt=0.0)
    """Beta prior of a tool's success: beta (above 0)."""
    not_called_penalty: float = Field(default=0.0, ge=0.0)
    """Added to beta for a selected tool the model did not call (0: an impression, no update)."""
    posterior_discount: float = Field(default=0.98, gt=0.0, le=1.0)
    """Each outcome keeps this share of a posterior's evidence above the prior (about the last 1/(1-d) outcomes
    count): a tool that starts failing falls quickly and one that recovers comes back. 1: nothing is forgotten."""
    learning_credits_per_actor: int = Field(default=3, ge=0)
    """Successful calls of one actor (its session, else its user, else the selection) that count toward a tool's
    posterior, usage memory, quality and health, per tenant; as many of its failed calls count, and as many of its
    reviews teach the tool's usage memory and residual (every review is still logged): a flood of fake successes
    (rated 0 they score as failures), failures or verdicts moves a tool a bounded amount."""
    learning_credits_window_s: float = Field(default=86400.0, ge=0.0)
    """An actor's credits on a tool refill with each window of this many seconds of its selections (timed by the
    selector, so no sender can date its way to fresh ones): an actor of many sessions' length (a user asking
    without a session, a long-lived agent) kept teaching its first three lessons of a tool for good, its later
    successes and breakages counting nowhere. A flood moves a tool by at most the credits a window. 0: never."""
    usage_examples_per_tool: int = Field(default=64, ge=1)
    """Learnt query examples kept per tool, scope and polarity (positive, negative); the oldest are dropped."""
    usage_half_life: float = Field(default=64.0, gt=0.0)
    """Recency of learnt examples: one with this many newer examples of its tool weighs half as much."""
    usage_sharing: Literal["tenant", "global"] = "tenant"
    """Whose ranking a tenant's usage teaches: only its own ("tenant"), or every tenant's ("global")."""
    usage_residual_rate: float = Field(default=0.1, ge=0.0)
    """How far one review moves the residuals of the tools its selection offered for a query (a listwise step:
    the relevant ones towards the query, the others away, by how far the selector's ranking was from the
    verdicts); the selectors add a tool's residual's product with the query to its cosine. 0 turns it off. In the
    offline simulation over metatool's stream (the vector signal alone, 1,000 held-out queries, 10,000 events)
    the centroid blend reached R@5 0.918 / NDCG@10 0.854 and with residuals 0.944 / 0.891; 0.05 gave 0.941 /
    0.887, 0.2 0.940 / 0.891. Online on the product, held-out R@5 / NDCG@10 after 10,000 events 0.946 / 0.893
    against 0.937 / 0.885 without; the other sets level (docs/results.md, Quality)."""
    usage_residual_sharpness: float = Field(default=10.0, gt=0.0)
    """The listwise step's softmax reads the offered tools' cosines times this (10 measured better than 20 in the
    same simulation: 0.944 / 0.891 against 0.941 / 0.887)."""
    usage_residual_max_norm: float = Field(default=1.0, gt=0.0)
    """The longest a residual may grow, so a flood of reviews moves a tool's cosine by at most this much for any
    query (unbounded measured the same in the simulation; 0.5 cost 0.006 of NDCG@10)."""
    usage_residual_centred: bool = True
    """The listwise step moves a residual along the query less the mean of the queries its scope's reviews ranked
    (kept per scope): the direction a tenant's requests all share tells no tool apart, and a step along it would
    push an unrelated tool away from every request, or lift a relevant one for all. Off: along the query. Online,
    livemcpbench's long tasks: held-out R@5 / NDCG@10 after 2,000 events 0.488 / 0.488 centred against 0.466 /
    0.477 along the query (0.480 / 0.496 without residuals); metatool 0.947 / 0.893 against 0.945 / 0.894."""
    degrade_threshold: float = Field(default=0.3, ge=0, le=1)
    """Rolling quality below which a tool is degraded (seed 004)."""
    quarantine_after: int = Field(default=5, ge=1)
    """Consecutive degraded calls after which a tool is quarantined."""
    quality_window: int = Field(default=20, ge=1)
    """Span, in calls, of the rolling quality score (an exponential moving average: weight 2/(window+1))."""
    probation_calls: int = Field(default=20, ge=1)
    """Calls a released tool must make without its rolling quality falling below the threshold."""
    quarantine_release_after_s: float = Field(default=3600.0, ge=0)
    """A quarantined tool goes on probation this long after it was quarantined (0: only an operator releases)."""
    quarantine_release_max_s: float = Field(default=86400.0, gt=0)
    """Each time in a row a tool fails again on probation, its next release waits twice as long, up to this: a
    tool that stays broken is retried less and less often, one that recovers comes back at its next retry."""
    quarantine_check_interval_s: float = Field(default=30.0, gt=0)
    """How often a learner looks for quarantined tools due for probation."""
    fitness_perfect: float = Field(default=1.4, ge=0)
    """Fitness multiplier of a 'perfect' review verdict (seed 002)."""
    fitness_related: float = Field(default=1.05, ge=0)
    """Fitness multiplier of a 'related' review verdict."""
    fitness_unrelated: float = Field(default=0.75, ge=0)
    """Fitness multiplier of an 'unrelated' review verdict."""
    fitness_broken: float = Field(default=0.35, ge=0)
    """Fitness multiplier of a 'broken' review verdict."""
    review_merge_similarity: float = Field(default=0.9, ge=-1, le=1)
    """Online, a review joins its tool's nearest index entry when their queries are at least this similar."""
    review_clusters: int = Field(default=8, ge=1)
    """Compaction: at most this many index entries (k-means centroids) per tool."""
    review_spike_min: int = Field(default=3, ge=1)
    """Watching the review log: a day's ``broken`` verdicts are a spike when there are at least this many and at
    least ``review_spike_factor`` times the average of the days before it in the window."""
    review_spike_factor: float = Field(default=3.0, gt=0)
    """How many times the earlier days' average of ``broken`` verdicts a day's must reach to be a spike."""
    review_turn_min: int = Field(default=4, ge=2)
    """Reviews a tool needs in the window before its verdicts can be said to have turned."""
    review_turn_drop: float = Field(default=0.5, gt=0, le=1)
    """A tool's reviews turned when the share of its good verdicts (perfect, related) moved this much between the
    earlier and the later half of its reviews."""
    learner_batch_size: int = Field(default=2000, ge=1)
    """Events applied per learner transaction."""
    learner_batch_timeout_s: float = Field(default=0.02, ge=0)
    """How long a learner waits after the first event of a batch for more to join it."""
    learner_batches_in_flight: int = Field(default=2, ge=1)
    """Batches of one event kind a learner applies at once; what arrives while they run forms the next batch, so
    a learner behind its stream catches up in a few large transactions instead of many small ones that queue
    for the same tools' locks."""
    learner_ack_wait_s: float = Field(default=10.0, gt=0)
    """Redelivery time of an unacknowledged event (applying twice is harmless)."""
    max_deliver: int = Field(default=20, ge=1)
    """Deliveries of one event before it goes to the dead-letter subject."""
    orphan_timeout_s: float = Field(default=60.0, ge=0)
    """How long an outcome waits for its selection event (they may arrive out of order) before dead-letter."""
    poison_attempts: int = Field(default=3, ge=1)
    """Deliveries of an event that fails alone (not for want of a server) before it is dead-lettered."""
    failed_event_delay_s: float = Field(default=1.0, ge=0.0)
    """Redelivery delay of an event whose batch (or sync) failed."""
    orphans_per_sender_max: int = Field(default=100, ge=1)
    """Events of one sender a learner holds waiting for what they refer to (an outcome's selection, feedback's
    tool); past it one is dead-lettered at once unless that may still be in the learner's backlog. Held events take
    the consumer's slots, which all tenants share: 9,000 outcomes of made-up selections held a victim's outcome
    49.9 s. An outcome trails its selection by milliseconds, so an agent has a few waiting at most."""
    outcomes_per_selection_max: int = Field(default=48, ge=1)
    """Outcomes one sender may store per selection; more are dead-lettered. The MCP gateway reports every call it
    proxies as an outcome of its own, so an agent working on with what one search found sends one per call; at the
    default k (7) every call that can still count (3 successes and 3 failures per tool: the credits) fits."""
    reviews_per_selection_max: int = Field(default=8, ge=1)
    """Review events one sender may store per selection (each logs a verdict per offered tool); more are
    dead-lettered. 8: a review of each of the default k (7) tools on its own, and a "none of these"."""
    outcome_error_max_chars: int = Field(default=256, ge=0)
    """Characters of a call's error text an outcome stores (enough for its first line); the rest is cut."""
    feedback_kept_per_sender: int = Field(default=20, ge=1)
    """A sender's latest ratings kept per tool and tenant, older ones dropped (and taken out of the tool's average
    rating): what the dashboard's feedback list shows, and one identity's flood weighs as this many ratings."""

    # caches (seed 000 section 4.3)
    policy_cache_ttl_s: float = Field(default=30.0, gt=0)
    """How often a selector reloads the visibility rules (seed 000 section 4.3)."""
    tool_list_cache_ttl_s: float = Field(default=60.0, gt=0)
    """How often a selector checks its tool list against the registry (each tool's last write; only what differs
    is read again) and reloads its page mappings (both 60 s in seed 000), and takes in the posteriors written in the
    last two such periods (all of them again only when its count disagrees with the store's), besides their
    change notifications."""
    catalog_change_lookback_s: float = Field(default=30.0, ge=0.0)
    """How far before its catalog's version a selector reads the tools again on a registry broadcast: a write whose
    transaction began before a later one committed carries the earlier time, and would otherwise fall below the
    version. The periodic check (``tool_list_cache_ttl_s``) compares every tool's last write, so it finds whatever
    this misses."""
    review_index_refresh_s: float = Field(default=5.0, gt=0)
    """How often a selector checks the review index for new entries (a cheap count when nothing changed)."""

    # registry
    drift_days: float = Field(default=7.0, gt=0)
    """Embedding age counted as drift."""
    plugin_secrets: dict[str, str] = Field(default_factory=dict)
    """plugin_id -> shared secret; the plugin sends it, or its HMAC-SHA256 signature of the payload, as credential."""
    signed_plugins: list[str] = Field(default_factory=list)
    """Plugins whose credential must be the signature: their secret never travels."""
    require_plugin_credentials: bool = False
    """Refuse syncs of plugins with no secret configured (production); off, such plugins sync freely."""
    flagged_tools_selectable: bool = False
    """When off, a tool flagged for review is set to ``draft`` (not selectable) until an operator approves it."""
    sync_max_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """Largest sync (its JSON, in bytes) a client sends and the indexer accepts. One larger than a NATS message
    travels in parts that the indexer stages in PostgreSQL and joins (``toolsel.rpc.sync_part.<scope>``)."""
    sync_concurrency: int = Field(default=4, ge=1)
    """Syncs an indexer applies at once, of those sent as one request and of those sent in parts: a plugin's syncs
    are applied one at a time, and the syncs embedded together take turns at the model, so one tenant's large sync
    no longer holds another's small one until it ends. Each holds its payload (at most ``TOOLSEL_SYNC_MAX_BYTES``)
    while it is applied."""
    sync_upload_ttl_s: float = Field(default=600.0, gt=0)
    """How long the staged parts of a sync that was never completed are kept."""
    sync_staged_max_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    """Bytes one sender may hold staged over all its uploads not yet completed (twice the largest sync: a retry
    under a fresh upload fits beside the one it replaces), so that no sender fills the store with uploads it
    never completes."""
    sync_clock_skew_s: float = Field(default=300.0, ge=0)
    """How far ahead of the indexer's clock a sync may be dated. A sync is ordered by its date (one made before the
    last applied is refused as a revert), so one dated in the future would refuse every later sync of its plugin
    and tenant, ``toolsel plugins remove`` included, until that date."""
    tenant_pins_max: int = Field(default=100, ge=0)
    """How many tools a tenant may pin or unpin for itself (``toolsel pins``): each choice is a rule every
    selection of the tenant weighs, so a tenant cannot grow the rule table without bound."""

    # supervision and delivery
    restart_backoff_s: float = Field(default=1.0, gt=0)
    """``toolsel up`` restarts a service that exited after this long, doubled after each exit that follows its
    start by less than ``restart_backoff_max_s``."""
    restart_backoff_max_s: float = Field(default=30.0, gt=0)
    """The longest wait before ``toolsel up`` restarts a service."""
    service_log_max_bytes: int = Field(default=16 * 1024 * 1024, ge=0)
    """A service's log under ``toolsel up`` (``logs/<service>.log``) this large when the service starts is kept as
    ``<service>.log.1`` (replacing the one before) and begun again: a service in a crash loop appends its traceback
    at every restart, for good. 0: never."""
    shutdown_grace_s: float = Field(default=10.0, ge=0)
    """How long a stopping service lets the requests and events in hand finish before it cancels them
    (FastStream's ``graceful_timeout``): a select in hand is answered and its selection event published, a batch in
    hand is applied and acknowledged, not delivered again."""
    events_max_age_days: float = Field(default=30.0, gt=0)
    """How long the events stream keeps an event: a consumer stopped for longer loses what it had not read."""
    events_max_bytes: int = Field(default=4 * 1024**3, ge=0)
    """The events stream's size bound; beyond it the oldest events go first (normally long read and acknowledged),
    so a flood fills neither the disk nor JetStream's store. 0: bounded by age only."""
    dead_letters_max_age_days: float = Field(default=30.0, gt=0)
    """How long the dead-letter stream keeps a refused event for an operator to read."""
    dead_letters_max_bytes: int = Field(default=256 * 1024**2, ge=0)
    """The dead-letter stream's size bound; beyond it the oldest dead letters go first, so a sender of bad events
    cannot grow it without end. 0: bounded by age only."""
    selection_buffer_size: int = Field(default=100_000, ge=1)
    """Selection events a selector holds while NATS or JetStream is unavailable (replies do not wait for them);
    beyond it new ones are dropped and counted in its health reply."""
    selection_publish_batch: int = Field(default=256, ge=1)
    """Selection events a selector publishes at once (each waits for JetStream's ack)."""
    selection_retry_max_s: float = Field(default=2.0, gt=0)
    """The longest wait between a selector's attempts to publish buffered selection events."""

    # what is kept, and for how long (docs/operators.md)
    history_retention_days: float = Field(default=90.0, ge=0)
    """Days the event history is kept (selections with their outcomes, reviews and logged verdicts, and feedback),
    and the last-sync record of a plugin with no live tools left; 0: for good. A selection stays while an outcome
    or review of it, or a usage example learnt from it, does. Never below ``events_max_age_days``: an event's row
    is what recognises it when the stream delivers it again. 90 days: three times the stream's age, a quarter of
    analytics, and what a rebuild or a model switch re-learns from (docs/operators.md)."""
    tool_versions_kept: int = Field(default=20, ge=0)
    """Newest versions of each tool kept (its history and what a rollback may restore); the current version is
    always kept. 0: all. 20 covers a tool changed with each daily release for weeks back."""
    retention_interval_s: float = Field(default=3600.0, gt=0)
    """How often the learner drops the history and spent credits past keeping, and the indexer the versions and
    sync records: hourly keeps each pass short."""
    retention_batch_rows: int = Field(default=5000, ge=1)
    """Rows one delete removes at most: a backlog (a first pass over years of history) goes in many short
    statements, none holding its locks for long."""

    # the MCP gateway (``toolsel mcp`` calling the tools it found)
    gateway_timeout_s: float = Field(default=30.0, gt=0)
    """The longest a call that ``toolsel mcp`` proxies to a tool's MCP server may take, connecting included, from
    when it holds one of its identity's slots (``gateway_calls_per_identity``); a call past it fails (and is
    reported as failed)."""
    gateway_calls_per_identity: int = Field(default=4, ge=1)
    """Calls one identity may have in flight through the gateway at once (each starts a stdio server's process or
    opens an HTTP session); over HTTP one ``toolsel mcp`` serves every identity, and none may take it all. A call
    past it waits for a slot rather than being refused: a model calls several tools at once and expects each to
    be answered, and each call in flight ends within ``gateway_timeout_s``."""
    gateway_result_max_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Largest answer (its JSON, in bytes) the gateway passes back from a tool; a larger one becomes an error result
    naming this limit (and is reported as failed). 4 MiB is about a million tokens of text, more than a model
    reads at once, with room for a few images. An answer is read whole before it is measured: how much arrives is
    bounded by ``gateway_timeout_s``."""
    gateway_commands: list[list[str]] = Field(default_factory=list)
    """The stdio MCP servers the gateway may start, each as the start of a command line (``[["uvx",
    "mcp-server-time"]]``): a tool's declared command must begin with one. Empty: it starts none. A plugin's
    declaration is its tenant's word; this list is the operator's."""
    gateway_urls: list[str] = Field(default_factory=list)
    """The HTTP MCP servers the gateway may reach: a tool's declared URL must be under one of these (the same scheme,
    host and port, and a path below, as httpx sends it; never with dot segments). Empty: none."""
    gateway_secrets: dict[str, dict[str, str]] = Field(default_factory=dict)
    """plugin_id -> credentials for its MCP servers: environment variables of a stdio server's process, headers
    of an HTTP server's requests. Kept here, never in a declaration (which agents read)."""

    # bearer tokens of MCP over HTTP (``toolsel mcp --transport http``, ``toolsel.mcp.token_checks``)
    mcp_token_check_threads: int = Field(default=2, ge=1)
    """Threads of its own that check with bcrypt the tokens not verified before (about 25 ms each on a loaded
    two-core machine). A token verified before is answered without them, so no flood of wrong tokens makes an
    agent with a right one wait."""
    mcp_token_checks_waiting: int = Field(default=16, ge=0)
    """Checks that may wait for one of those threads; a request whose token would be one more is refused at once
    (HTTP 503, ``Retry-After``) rather than queued. At 2 threads, 16 are well under a second of work."""
    mcp_token_failures: int = Field(default=10, ge=1)
    """Wrong tokens one client address may send within ``mcp_token_failure_window_s``; past them, its tokens not
    verified before are refused unchecked (HTTP 429, ``Retry-After``) until the oldest failure is that old. Tokens
    verified before still pass: they cost nothing to check."""
    mcp_token_failure_window_s: float = Field(default=60.0, gt=0)
    """The window those failures are counted in."""
    mcp_trusted_proxies: list[str] = Field(default_factory=list)
    """Addresses of the proxies in front of ``toolsel mcp --transport http`` whose ``X-Forwarded-For`` it believes,
    so that wrong tokens are counted per client behind them. Empty: none is believed, so no caller names its own
    address; behind a proxy every client is the proxy's address."""

    # server-side sessions of ``toolsel mcp`` (``toolsel.mcp.sessions``); their idle time is ``--session-ttl-s``
    mcp_session_offers: int = Field(default=20, ge=1)
    """Answers (``search_tools`` calls) one MCP session remembers, the oldest forgotten first: a review or outcome
    counts for the latest of them that offered its tool (one of an older answer is refused as never offered), and
    paging skips what they offered. Measured (tracemalloc): a kept answer of 20 tools takes about 650 B, of 200
    (the most a reply holds) 3.5 kB, so a full session 13 kB, 77 kB with 200 tools an answer and its 200
    rejections; each tool's names are kept once for all sessions (about 450 B a tool offered)."""
    mcp_max_sessions: int = Field(default=1000, ge=1)
    """MCP sessions kept per identity (over stdio, the process's), the least recently used ending first: at most
    13 MB per identity at 20 tools an answer, 77 MB at 200 (``mcp_session_offers``)."""
    mcp_max_sessions_total: int = Field(default=5000, ge=1)
    """MCP sessions one ``toolsel mcp`` over HTTP keeps for all its identities together; past it idle ones end,
    then the least recently used session of the identity holding the most, so one identity's flood ends its own
    sessions, not another's. At most 65 MB at 20 tools an answer, 390 MB at 200, however many identities
    (docs/results.md, MCP sessions)."""

    admin_token: str | None = None
    """The operators' credential: every admin request must carry it; unset, the admin API refuses everything."""

    # the operators' dashboard and HTTP admin API (``toolsel dashboard``, started by ``toolsel up``)
    dashboard_host: str = "127.0.0.1"
    """Address the dashboard listens on: this machine only unless set."""
    dashboard_port: int = Field(default=8780, ge=0, le=65535)
    """Its port; 0: ``toolsel up`` starts no dashboard."""
    dashboard_page_size: int = Field(default=50, ge=1, le=5000)
    """Tools per catalog page."""
    dashboard_analytics_days: int = Field(default=30, ge=1)
    """Days of history (today's included) the Analytics and Reviews tabs show unless their form asks for others:
    each of their requests reads the window's history, so the whole of a long one would be read on every visit."""
    dashboard_session_ttl_s: float = Field(default=8 * 3600.0, gt=0)
    """How long a sign-in lasts."""
    dashboard_sign_in_attempts: int = Field(default=10, ge=1)
    """Wrong admin tokens (at sign-in or as a bearer token) one client address may send within
    ``dashboard_sign_in_window_s``; past them, its every credential is refused (``rate_limited``, HTTP 429) until
    the oldest failure is that old."""
    dashboard_sign_in_window_s: float = Field(default=60.0, gt=0)
    """The window those failures are counted in."""
    dashboard_trusted_proxies: list[str] = Field(default_factory=list)
    """Addresses of the proxies in front of the dashboard (``["127.0.0.1"]`` for a TLS proxy on this machine) whose
    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` it believes: the sign-in throttle counts per client behind them,
    and the session cookie is ``Secure`` for a client on https. Empty: no such header is believed, so no caller
    names its own address; behind a proxy every client is the proxy's address and no cookie is ``Secure``. Any
    process that connects from a trusted address can claim any client address."""

    # tuning the model from use (``toolsel tune``)
    tune_max_pairs: int = Field(default=10_000, ge=1)
    """Pairs from use a tune trains on at most, shared equally between the tenants (one with fewer gives the rest
    to the others); each tenant's pairs are bounded as its usage memory is (``learning_credits_per_actor`` per
    actor, window and tool, ``usage_examples_per_tool`` per tool)."""
    tune_epochs: int = Field(default=1, ge=1)
    """Passes a tune makes over its pairs. Three at 4e-5 (the packaged model's own recipe) learnt metatool's stream
    better than one at 2e-5, but lost 4–5 points on the catalogs the tune never saw, and the full pipeline ended
    level (docs/results.md): one pass keeps more of what the model knew."""
    tune_learning_rate: float = Field(default=2e-5, gt=0.0)
    """AdamW's learning rate for a tune."""
    tune_holdout_share: float = Field(default=0.2, gt=0.0, lt=1.0)
    """The most recent share of each tenant's selections with outcomes or reviews, held back: never trained on, the
    current model and the candidate are measured on them."""
    tune_margin: float = Field(default=0.005, ge=-1.0, le=1.0)
    """How much higher the candidate's held-back NDCG@10 must be than the current model's for a tune to switch."""
    tune_threads: int = Field(default=1, ge=1)
    """Torch threads a tune trains with: one leaves the other cores to a serving stack beside it."""
    tune_niceness: int = Field(default=10, ge=0, le=19)
    """How much a tune lowers its own CPU priority (``os.nice``), so that selections beside it go first."""

    @field_validator("rerank_weights", "fusion_weights")
    @classmethod
    def _weights(cls, given: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        """Each weight given replaces its default alone (as one variable per weight did); none is negative, and
        each names a signal (the defaults name every one): a misspelt name would weigh nothing, or stop the
        selector only once it started."""
        defaults = RERANK_WEIGHTS if info.field_name == "rerank_weights" else FUSION_WEIGHTS
        unknown = sorted(set(given) - set(defaults))
        if unknown:
            raise ValueError(f"no signal named {', '.join(unknown)}; the signals are {', '.join(defaults)}")
        negative = sorted(name for name, weight in given.items() if weight < 0)
        if negative:
            raise ValueError(f"weights must be >= 0: {', '.join(negative)}")
        return {**defaults, **given}

    @field_validator("confidence_coefficients")
    @classmethod
    def _coefficients(cls, given: dict[str, float]) -> dict[str, float]:
        """Every coefficient of the model, and no other: they are fitted together, so one left out is not taken
        from the defaults (every select failed ``internal`` instead)."""
        missing, unknown = (
            sorted(set(CONFIDENCE_COEFFICIENTS) - set(given)),
            sorted(set(given) - set(CONFIDENCE_COEFFICIENTS)),
        )
        if missing or unknown:
            said = [
                f"lacks {', '.join(missing)}" if missing else "",
                f"has no term {', '.join(unknown)}" if unknown else "",
            ]
            raise ValueError(f"{' and '.join(s for s in said if s)}: give all of {', '.join(CONFIDENCE_COEFFICIENTS)}")
        return given

    @field_validator("context_key_template")
    @classmethod
    def _template(cls, given: str) -> str:
        """Only the placeholders a selection fills ({tier}, {page}, {intent}): any other failed every select."""
        wanted = ", ".join(f"{{{name}}}" for name in CONTEXT_FIELDS)
        try:
            fields = {name for _, name, _, _ in Formatter().parse(given) if name is not None}
            if unknown := sorted(fields - set(CONTEXT_FIELDS)):
                raise ValueError(f"no placeholder {', '.join(repr(f) for f in unknown)}")
            given.format(**dict.fromkeys(CONTEXT_FIELDS, ""))
        except ValueError as refused:
            raise ValueError(f"{refused}: the context's placeholders are {wanted}") from None
        return given

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_in_any_case(cls, given: Any) -> Any:
        """``debug`` is ``DEBUG``: the logging module knows the upper-case names only."""
        return given.strip().upper() if isinstance(given, str) else given

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        """Each pair of ``ORDERED`` in order, the learner's batch wait shorter than its ack wait."""
        for low, high in ORDERED:
            if getattr(self, low) > getattr(self, high):
                raise ValueError(
                    f"{variable(low)} ({getattr(self, low)}) may not be above {variable(high)} ({getattr(self, high)})"
                )
        if self.learner_batch_timeout_s >= self.learner_ack_wait_s:
            raise ValueError(
                f"{variable('learner_batch_timeout_s')} ({self.learner_batch_timeout_s}) must be below"
                f" {variable('learner_ack_wait_s')} ({self.learner_ack_wait_s}): the events of a batch still"
                " waiting for more would be delivered again"
            )
        return self

    @model_validator(mode="after")
    def _history_outlives_redelivery(self) -> Self:
        """The history is kept at least as long as the events stream keeps an event (or for good): a stored event's
        row is what recognises a redelivered copy, which would otherwise be applied twice."""
        kept, stream = self.history_retention_days, self.events_max_age_days
        if 0 < kept < stream:
            raise ValueError(
                f"{variable('history_retention_days')} ({kept}) may not be below {variable('events_max_age_days')}"
                f" ({stream}): an event the stream delivers again after its row is dropped would be applied twice"
            )
        return self


ORDERED = (
    ("auto_k_floor", "auto_k_ceiling"),
    ("retrieval_candidates", "exploration_depth"),
    ("spelling_one_edit_length", "spelling_two_edits_length"),
    ("restart_backoff_s", "restart_backoff_max_s"),
    ("quarantine_release_after_s", "quarantine_release_max_s"),
    ("sync_max_bytes", "sync_staged_max_bytes"),
    ("select_concurrency", "selects_held"),
)
"""Pairs of settings whose first may not be above its second: a floor and its ceiling, the candidates and how
deep exploration reaches past them, a first wait and the longest, a one-edit length and the two-edit one, and the
largest sync and what one sender may hold staged (a sync between the two could never be staged whole), the
selects a selector runs at once and those it holds. Otherwise one of them would be ignored in silence."""


class SettingsRefused(ValueError):
    """The environment's settings cannot be used; the message is one line naming the variable (``TOOLSEL_*``)."""


def refusal(error: ValidationError | SettingsError) -> str:
    """Why settings were refused, as one line naming the environment variable: the first offending value (and
    how many more there are), or the variable whose value is not JSON (a dict or list setting; never its value,
    which may hold secrets)."""
    if isinstance(error, SettingsError):
        found = re.search(r'field "(\w+)" from source "(\w+)"', str(error))
        if found is None:
            return str(error)
        where = " (in .env)" if found[2] == "DotEnvSettingsSource" else ""
        cause = error.__cause__
        why = f"not valid JSON ({cause})" if isinstance(cause, json.JSONDecodeError) else str(cause or error)
        return f"{variable(found[1])}{where}: {why}"
    field, why = first_problem(error)
    if not field:
        return why
    head, *within = field.split(".")
    return f"{variable(head)}{''.join(f'[{part}]' for part in within)}: {why}"


def load_settings() -> Settings:
    """The settings the environment (and ``.env``) gives; ``SettingsRefused`` naming the variable when one of
    them cannot be used."""
    try:
        return Settings()
    except (ValidationError, SettingsError) as error:
        raise SettingsRefused(refusal(error)) from error


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once from the environment (``SettingsRefused`` when they cannot be used)."""
    return load_settings()
