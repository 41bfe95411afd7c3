"""Select request/reply and the selection event recorded after each reply."""

from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID, uuid4

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import PydanticCustomError

from toolsel.contracts.common import (
    DEFAULT_TENANT,
    DEFAULT_TIER,
    Count,
    Finite,
    Identifier,
    Message,
    ShortText,
    Storable,
    TenantScope,
    Timestamp,
    ToolRef,
)
from toolsel.contracts.subjects import OPERATOR_SCOPE

_NUMBER = TypeAdapter(Annotated[int, Field(ge=1, le=50)])


def _number_or_auto(value: Any, _handler: ValidatorFunctionWrapHandler) -> Any:
    """``auto``, or a number checked on its own: a bad value gets the number's one error, on the field itself."""
    if value == "auto":
        return value
    try:
        return _NUMBER.validate_python(value)
    except ValidationError as error:
        problem = error.errors()[0]
        raise PydanticCustomError(problem["type"], problem["msg"]) from None


AnswerSize = Annotated[Annotated[int, Field(ge=1, le=50)] | Literal["auto"], WrapValidator(_number_or_auto)]
"""How many tools to retrieve, or ``auto``."""
QUERY_MAX = 2000
"""A query's length at most; the recorded selections and the MCP server's ``search_tools`` take it too."""
Query = Annotated[str, StringConstraints(min_length=1, max_length=QUERY_MAX, strip_whitespace=True), Storable]
Page = Annotated[str, StringConstraints(max_length=256), Storable]
LABEL_MAX = 512
"""An intent label's length at most: a tool's key (a plugin id and a name of up to 128 characters each) or a
category's."""
CONTEXT_KEY_MAX = 1024
"""A bandit context's length at most: the default template's tier (128), page (256) and intent label fit in it
with room for a template's own text, and the selector shortens a longer one to this (``context_key``)."""
SELECTED_MAX = 200
"""Tools one selection gives at most, pins included (the selector leaves out the lowest-weighted pins past it)."""
Label = Annotated[str, StringConstraints(max_length=LABEL_MAX), Storable]
ContextKey = Annotated[str, StringConstraints(max_length=CONTEXT_KEY_MAX), Storable]


class SelectFilters(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    plugins: list[Identifier] = Field(default_factory=list, max_length=50)
    servers: list[ShortText] = Field(default_factory=list, max_length=50)
    categories: list[Identifier] = Field(default_factory=list, max_length=50)
    tags: list[Annotated[str, StringConstraints(max_length=64), Storable]] = Field(default_factory=list, max_length=50)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    """Least ``confidence`` (the calibrated probability that a tool fits, not the relative score) of a tool
    returned."""
    exclude: list[ToolRef] = Field(default_factory=list, max_length=200)
    """Tools the session already rejected ("none of these")."""


class SelectRequest(Message):
    query: Query
    tenant_id: Identifier = DEFAULT_TENANT
    user_id: Identifier | None = None
    tier: Identifier = DEFAULT_TIER
    role: Identifier | None = None
    page: Page = ""
    session_id: Identifier | None = None
    k: AnswerSize | None = None
    """How many tools to retrieve (pins may add more); the selector's default when absent; ``auto``: as many as
    the calibrated confidence supports, few for a one-need query and more for a compound one
    (``TOOLSEL_AUTO_K_FLOOR`` .. ``TOOLSEL_AUTO_K_CEILING``)."""
    token_budget: int | None = Field(default=None, ge=1, le=1_000_000)
    """The most tokens of tool definitions the reply may hold (counted as ``tokens.selected`` counts them), pins
    included: tools that would take it past are left out (``over_budget`` names them)."""
    max_tools: int | None = Field(default=None, ge=1, le=100)
    """The most tools the reply may hold, pins and related tools included (the lowest ranked go first); unset,
    pins may take the count past ``k``."""
    filters: SelectFilters = Field(default_factory=SelectFilters)
    dry_run: bool = False
    """Answer without recording a selection event (admin test-selection, evaluation)."""
    seed: int | None = Field(default=None, ge=0)
    """Seed the Thompson sample for a reproducible answer."""
    retrieval: Literal["hybrid", "vector", "bm25"] = "hybrid"
    """Which retrieval signals to use (evaluation compares them); hybrid fuses vectors and BM25."""
    rerank: bool = True
    """False: the retrieval order alone, without the composite score, exploration or pins."""
    explore: bool = True
    """False: no exploration slot (``TOOLSEL_EXPLORATION_SLOTS``): every tool is the expected best, none is there
    to be tried."""


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
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    """The probability that the tool fits the query, calibrated on the evaluation sets from its raw retrieval
    signals (unlike ``score``, not relative to the best tool): ``min_score`` filters on it."""
    breakdown: ScoreBreakdown
    reason: str = ""
    """Why it is here, in a sentence built from the evidence (matched words, meaning, success in this context over
    how many calls, reviews, pinned, explored, related to which tool)."""
    pinned: bool = False
    exploration: bool = False
    usage_hint: str | None = None
    """How to call it well, as its plugin declares (seed 003 couples it to the tool)."""
    related_tools: list[ToolRef] = Field(default_factory=list)
    """Live tools its plugin says are often used with it."""
    related_to: ToolRef | None = None
    """Set when the tool is in the answer only as a related tool of that one, in room the ranking left."""
    server: str = ""
    """The server its plugin says serves it ("" for none declared)."""
    execution_type: Literal["rest", "dispatch", "internal", "mcp"] = "internal"
    execution_config: dict[str, Any] = Field(default_factory=dict)
    """How to call it, as its plugin declares (for ``mcp``: ``toolsel.contracts.execution``), for agents that call
    tools themselves."""


class TokenEstimate(BaseModel):
    selected: int
    catalog: int
    saved: int


class ReplyCut(BaseModel):
    """How a reply was cut to fit what one NATS message may carry (the server's ``max_payload``): schemas
    summarised first, the largest first; then the lowest-ranked tools left out."""

    limit_bytes: int
    """The room the reply had."""
    full_bytes: int
    """What the whole reply would have taken."""
    schemas_summarised: list[str] = Field(default_factory=list)
    """``plugin/name`` of each tool whose ``parameters`` is a summary (its full schema: ``toolsel tools show``)."""
    tools_dropped: list[str] = Field(default_factory=list)
    """``plugin/name`` of each tool left out, in rank order."""


class SelectReply(Message):
    selection_id: UUID
    tools: list[ScoredTool]
    intent: str = ""
    """The query's intent label (``TOOLSEL_INTENT_LABEL``): the tool nearest its meaning among all the request may
    see, whatever the session excluded (or that tool's category); the bandit context names it."""
    context_key: str
    method: str
    degraded: list[str] = Field(default_factory=list)
    """Stages that were skipped or fell back, e.g. ``retrieval.vectors``."""
    candidate_counts: dict[str, int] = Field(default_factory=dict)
    workflow_hints: dict[str, str] = Field(default_factory=dict)
    tokens: TokenEstimate
    latency_ms: float
    no_match: bool = False
    """True when no tool's confidence clears ``TOOLSEL_NO_MATCH_CONFIDENCE``, among those given and those the token
    budget left out: nothing in the catalog fits."""
    advice: str = ""
    """With ``no_match``, what to do (seed 002): with candidates left, reject these and ask for more; with none,
    create a custom tool (what to declare, the sync command). When what fits was left out for the token budget
    alone, to ask with a larger one. Empty when something given fits."""
    sub_queries: list[str] = Field(default_factory=list)
    """The atomic needs a compound query was split into, each retrieved for (empty: not split)."""
    over_budget: list[str] = Field(default_factory=list)
    """``plugin/name`` of each tool the answer would have held but for the request's ``token_budget``, in rank
    order."""
    cut: ReplyCut | None = None
    """Set when the whole reply would not fit in one message: what was summarised or left out (and
    ``degraded`` names ``reply.size``)."""


class SelectedTool(ToolRef):
    rank: Count
    score: Finite
    pinned: bool = False
    exploration: bool = False
    sub_query: Query | None = None
    """The part of a compound query this tool was offered for (the part whose ranking held it highest); None
    when the query was not split or only the whole query retrieved it. What the tool then teaches is that part."""
    similarity: Finite | None = None
    """The tool's cosine with the query as the selector ranked it (``ScoreBreakdown.similarity``, what it learnt
    included): where the learner's listwise step starts from. None: not recorded."""


class SelectionEvent(Message):
    """What the selector answered; the learner stores it and joins outcomes to it."""

    selection_id: UUID = Field(default_factory=uuid4)
    occurred_at: Timestamp = Field(default_factory=lambda: datetime.now(UTC))
    tenant_id: TenantScope
    owner: ShortText = OPERATOR_SCOPE
    """Who asked (``toolsel.contracts.identity.Scope.token``, from the subject the request came on): only that
    identity, or the operator, may report outcomes and reviews of this selection."""
    user_id: Identifier | None = None
    session_id: Identifier | None = None
    query: Annotated[str, StringConstraints(max_length=QUERY_MAX), Storable]
    page: Page = ""
    tier: Identifier
    role: Identifier | None = None
    intent: Label = ""
    """The query's intent label (``SelectReply.intent``; empty in events recorded before it was)."""
    context_key: ContextKey
    method: ShortText
    tools: list[SelectedTool] = Field(max_length=SELECTED_MAX)
    candidate_count: Count
    latency_ms: Annotated[Finite, Field(ge=0)]
    tokens_selected: Count
    tokens_catalog: Count
