"""Configuration from the environment (``TOOLSEL_*``). Every default from the seeds is named here, once."""

from functools import lru_cache
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_home() -> Path:
    """Per-user data directory for the embedded servers; ``TOOLSEL_HOME`` overrides it."""
    return Path(platformdirs.user_data_dir("toolsel", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TOOLSEL_", env_file=".env", extra="ignore")

    # where things are
    home: Path = Field(default_factory=default_home)
    nats_url: str | None = None
    """External NATS; when unset, ``toolsel up`` starts an embedded server under ``home``."""
    database_url: str | None = None
    """External PostgreSQL with pgvector; when unset, an embedded server under ``home``."""
    model_dir: Path | None = None
    """A directory with model.onnx and tokenizer files; default: the packaged all-MiniLM-L6-v2 int8."""
    log_level: str = "INFO"

    # embeddings
    embedding_dim: int = 384
    embedding_batch_size: int = 32
    embedding_threads: int = 1
    """One ONNX thread beats two on a busy 2-core box."""
    query_cache_size: int = 4096

    # selection (seeds 000, 004)
    default_k: int = Field(default=7, ge=1, le=50)
    retrieval_candidates: int = Field(default=30, ge=1)
    exploration_slots: int = Field(default=1, ge=0)
    weight_similarity: float = 0.5
    weight_quality: float = 0.35
    weight_recency: float = 0.15
    recency_half_life_days: float = Field(default=14.0, gt=0)
    weight_popularity: float = 0.0
    """Seed 001's other factors, off unless weighted: usage percentile, the user's own success with the tool,
    latency and error rate, and historical fitness from reviews of similar past queries (seed 002)."""
    weight_user_history: float = 0.0
    weight_performance: float = 0.0
    weight_fitness: float = 0.3
    latency_reference_ms: float = 1000.0
    """A tool this slow (median) gets half of the latency part of the performance score."""
    tier_order: list[str] = Field(default_factory=lambda: ["free", "open_source", "pro", "teams", "enterprise"])
    """Tiers from lowest to highest, for rules such as {"tier": {"gte": "teams"}}."""

    # retrieval (seeds 002, 003)
    fusion: Literal["rrf", "scores"] = "scores"
    """How retrieval signals combine: a weighted mean of max-scaled scores, or reciprocal rank fusion (rrf).
    Scores measured better than RRF on all four evaluation sets (README, Quality), so they are the default."""
    fusion_rrf_k: float = 60.0
    fusion_weight_vector: float = 1.0
    fusion_weight_bm25: float = 1.0
    fusion_bm25_by_confidence: bool = True
    """Scale BM25's fusion weight by its confidence (seed 003's blend) rather than trusting it equally always."""
    fusion_weight_history: float = 1.0
    """Weight of the historical recommendation (tools that helped on similar past queries) in the fusion."""
    bm25_k1: float = 0.9
    bm25_b: float = 0.4
    bm25_fast_path: bool = False
    """Seed 003: answer from BM25 alone, skipping the embedding, when its confidence clears the gate."""
    bm25_confidence_threshold: float = 0.8
    bm25_confidence_scale: float = 10.0
    decompose_queries: bool = True
    review_neighbours: int = 10
    review_min_similarity: float = 0.5
    context_key_template: str = "{tier}:{page}:general"
    """Placeholders: {tier}, {page}, and {intent} (the top retrieved tool) for per-intent posteriors."""
    thompson_sampling: bool = True
    """Off: rank by the posterior mean instead of a draw (reproducible evaluation)."""
    tokens_per_char: float = 0.25
    """Rough schema token estimate (about four characters a token)."""

    # learning (seeds 000, 002, 004)
    prior_alpha: float = 1.0
    prior_beta: float = 1.0
    not_called_penalty: float = 0.0
    """Added to beta for a selected tool the model did not call (0: an impression, no update)."""
    degrade_threshold: float = 0.3
    quarantine_after: int = 5
    quality_window: int = 20
    """Span, in calls, of the rolling quality score (an exponential moving average: weight 2/(window+1))."""
    probation_calls: int = 20
    """Calls a released tool must make without its rolling quality falling below the threshold."""
    quarantine_release_after_s: float = 3600.0
    """A quarantined tool goes on probation this long after it was quarantined (0: only an operator releases)."""
    quarantine_check_interval_s: float = 30.0
    fitness_perfect: float = 1.4
    """Review verdict fitness multipliers (seed 002): perfect, related, unrelated, broken."""
    fitness_related: float = 1.05
    fitness_unrelated: float = 0.75
    fitness_broken: float = 0.35
    review_merge_similarity: float = 0.9
    """Online, a review joins its tool's nearest index entry when their queries are at least this similar."""
    review_clusters: int = 8
    """Compaction: at most this many index entries (k-means centroids) per tool."""
    learner_batch_size: int = 2000
    learner_batch_timeout_s: float = 0.02
    """How long a learner waits after the first event of a batch for more to join it."""
    learner_ack_wait_s: float = 10.0
    """Redelivery time of an unacknowledged event (applying twice is harmless)."""
    max_deliver: int = 20
    """Deliveries of one event before it goes to the dead-letter subject."""
    orphan_timeout_s: float = 60.0
    """How long an outcome waits for its selection event (they may arrive out of order) before dead-letter."""

    # caches (seed 000 section 4.3)
    policy_cache_ttl_s: float = 30.0
    page_mapping_cache_ttl_s: float = 60.0
    tool_list_cache_ttl_s: float = 60.0
    review_index_refresh_s: float = 5.0
    """How often a selector checks the review index for new entries (a cheap count when nothing changed)."""

    # registry
    drift_days: float = 7.0
    plugin_secrets: dict[str, str] = Field(default_factory=dict)
    """plugin_id -> shared secret; the plugin sends it, or its HMAC-SHA256 signature of the payload, as credential."""
    signed_plugins: list[str] = Field(default_factory=list)
    """Plugins whose credential must be the signature: their secret never travels."""
    require_plugin_credentials: bool = False
    """Refuse syncs of plugins with no secret configured (production); off, such plugins sync freely."""
    flagged_tools_selectable: bool = False
    """When off, a tool flagged for review is set to ``draft`` (not selectable) until an operator approves it."""

    admin_token: str | None = None
    """The operators' credential: every admin request must carry it; unset, the admin API refuses everything."""

    request_timeout_s: float = 10.0


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once from the environment."""
    return Settings()
