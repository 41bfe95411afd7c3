"""Select request/reply and the selection event recorded after each reply."""

from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from contracts.common import Identifier, Message, ShortText, ToolRef

Query = Annotated[str, StringConstraints(min_length=1, max_length=2000, strip_whitespace=True)]
Page = Annotated[str, StringConstraints(max_length=256)]


class SelectFilters(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    plugins: list[Identifier] = Field(default_factory=list, max_length=50)
    servers: list[Annotated[str, StringConstraints(max_length=256)]] = Field(default_factory=list, max_length=50)
    categories: list[Identifier] = Field(default_factory=list, max_length=50)
    tags: list[Annotated[str, StringConstraints(max_length=64)]] = Field(default_factory=list, max_length=50)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    exclude: list[ToolRef] = Field(default_factory=list, max_length=200)
    """Tools the session already rejected ("none of these")."""


class SelectRequest(Message):
    query: Query
    tenant_id: Identifier = "default"
    user_id: Identifier | None = None
    tier: Identifier = "free"
    role: Identifier | None = None
    page: Page = ""
    session_id: Identifier | None = None
    k: int | None = Field(default=None, ge=1, le=50)
    """How many tools to retrieve (pins may add more); the selector's default when absent."""
    filters: SelectFilters = Field(default_factory=SelectFilters)
    dry_run: bool = False
    """Answer without recording a selection event (admin test-selection, evaluation)."""
    seed: int | None = Field(default=None, ge=0)
    """Seed the Thompson sample for a reproducible answer."""
    retrieval: Literal["hybrid", "vector", "bm25"] = "hybrid"
    """Which retrieval signals to use (evaluation compares them); hybrid fuses vectors and BM25."""
    rerank: bool = True
    """False: the retrieval order alone, without the composite score, exploration or pins."""


class ScoreBreakdown(BaseModel):
    """Every part of a tool's score, so a caller can see why it was chosen."""

    similarity: float = 0.0
    """Cosine of the query and the tool vector."""
    bm25: float = 0.0
    relevance: float = 0.0
    """The fused retrieval score in [0, 1] that the composite weighs as similarity."""
    quality: float = 0.0
    recency: float = 0.0
    popularity: float = 0.0
    user_history: float = 0.0
    performance: float = 0.0
    fitness: float = 1.0
    """Historical fitness from reviews of similar past queries; 1.0 is neutral."""
    thompson: float = 0.0
    """The Beta(alpha, beta) sample for this request's context key."""
    alpha: float = 1.0
    beta: float = 1.0
    composite: float = 0.0


class ScoredTool(ToolRef):
    display_name: str = ""
    description: str
    parameters: dict[str, Any]
    category: str | None = None
    score: float
    breakdown: ScoreBreakdown
    pinned: bool = False
    exploration: bool = False


class TokenEstimate(BaseModel):
    selected: int
    catalog: int
    saved: int


class SelectReply(Message):
    selection_id: UUID
    tools: list[ScoredTool]
    context_key: str
    method: str
    degraded: list[str] = Field(default_factory=list)
    """Stages that were skipped or fell back, e.g. ``retrieval.vectors``."""
    candidate_counts: dict[str, int] = Field(default_factory=dict)
    workflow_hints: dict[str, str] = Field(default_factory=dict)
    tokens: TokenEstimate
    latency_ms: float


class SelectedTool(ToolRef):
    rank: int
    score: float
    pinned: bool = False
    exploration: bool = False


class SelectionEvent(Message):
    """What the selector answered; the learner stores it and joins outcomes to it."""

    selection_id: UUID = Field(default_factory=uuid4)
    occurred_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    tenant_id: str
    user_id: str | None = None
    session_id: str | None = None
    query: str
    page: str = ""
    tier: str
    role: str | None = None
    context_key: ShortText
    method: str
    tools: list[SelectedTool] = Field(max_length=200)
    candidate_count: int
    latency_ms: float
    tokens_selected: int
    tokens_catalog: int
