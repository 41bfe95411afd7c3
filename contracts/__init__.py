"""The wire: every message the toolsel services exchange, and every subject and stream name.

This package imports nothing from the services; agents, plugins and the services all depend on it.
"""

from contracts.common import SCHEMA_VERSION, SHARED_TENANT, ErrorCode, ErrorDetail, ErrorReply, ToolRef
from contracts.events import (
    FeedbackEvent,
    OutcomeEvent,
    PosteriorsUpdated,
    PosteriorUpdate,
    ReviewEvent,
    ToolCall,
    ToolReview,
    ToolState,
    ToolStateChanged,
    Verdict,
)
from contracts.health import HealthReply, HealthRequest
from contracts.registry import (
    CategorySpec,
    PageMappingSpec,
    PluginSync,
    RegistryChanged,
    SyncReport,
    ToolSpec,
)
from contracts.selection import (
    ScoreBreakdown,
    ScoredTool,
    SelectedTool,
    SelectFilters,
    SelectionEvent,
    SelectReply,
    SelectRequest,
    TokenEstimate,
)

__all__ = [
    "SCHEMA_VERSION",
    "SHARED_TENANT",
    "CategorySpec",
    "ErrorCode",
    "ErrorDetail",
    "ErrorReply",
    "FeedbackEvent",
    "HealthReply",
    "HealthRequest",
    "OutcomeEvent",
    "PageMappingSpec",
    "PluginSync",
    "PosteriorUpdate",
    "PosteriorsUpdated",
    "RegistryChanged",
    "ReviewEvent",
    "ScoreBreakdown",
    "ScoredTool",
    "SelectFilters",
    "SelectReply",
    "SelectRequest",
    "SelectedTool",
    "SelectionEvent",
    "SyncReport",
    "TokenEstimate",
    "ToolCall",
    "ToolRef",
    "ToolReview",
    "ToolSpec",
    "ToolState",
    "ToolStateChanged",
    "Verdict",
]
