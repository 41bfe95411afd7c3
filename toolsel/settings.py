"""Configuration from the environment (``TOOLSEL_*``). Every default from the seeds is named here, once."""

from functools import lru_cache
from pathlib import Path

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
    retrieval_candidates: int = 30
    exploration_slots: int = 1
    weight_similarity: float = 0.5
    weight_quality: float = 0.35
    weight_recency: float = 0.15
    recency_half_life_days: float = 14.0
    context_key_template: str = "{tier}:{page}:general"
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
    learner_batch_size: int = 500
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

    # registry
    drift_days: float = 7.0
    plugin_secrets: dict[str, str] = Field(default_factory=dict)
    """plugin_id -> shared secret; a plugin with no secret here may sync without a credential."""

    request_timeout_s: float = 10.0


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once from the environment."""
    return Settings()
