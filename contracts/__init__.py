"""The wire: every message the toolsel services exchange, and every subject and stream name.

This package imports nothing from the services; agents, plugins and the services all depend on it.
"""

from toolsel.contracts import admin
from toolsel.contracts.admin import *  # noqa: F403  (the admin API, listed once in contracts.admin)
from toolsel.contracts.common import (
    DEFAULT_TENANT,
    DEFAULT_TIER,
    SCHEMA_VERSION,
    SHARED_TENANT,
    AdminRequest,
    ErrorCode,
    ErrorDetail,
    ErrorReply,
    ToolRef,
)
from toolsel.contracts.events import (
    POSITIVE_VERDICTS,
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
from toolsel.contracts.health import (
    HealthReply,
    HealthRequest,
)
from toolsel.contracts.learning import UsageUpdated
from toolsel.contracts.pins import PinChoice, PinList, PinRequest
from toolsel.contracts.registry import (
    CategorySpec,
    PageMappingSpec,
    PinScope,
    PluginSync,
    RegistryChanged,
    SyncPart,
    SyncPartReceived,
    SyncReport,
    SyncUpload,
    ToolSpec,
    canonical_json,
    payload_signature,
)
from toolsel.contracts.selection import (
    ReplyCut,
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
    "DEFAULT_TENANT",
    "DEFAULT_TIER",
    "POSITIVE_VERDICTS",
    "SCHEMA_VERSION",
    "SHARED_TENANT",
    "AdminRequest",
    "CategorySpec",
    "ErrorCode",
    "ErrorDetail",
    "ErrorReply",
    "FeedbackEvent",
    "HealthReply",
    "HealthRequest",
    "OutcomeEvent",
    "PageMappingSpec",
    "PinChoice",
    "PinList",
    "PinRequest",
    "PinScope",
    "PluginSync",
    "PosteriorUpdate",
    "PosteriorsUpdated",
    "RegistryChanged",
    "ReviewEvent",
    "ScoreBreakdown",
    "ReplyCut",
    "ScoredTool",
    "SelectFilters",
    "SelectReply",
    "SelectRequest",
    "SelectedTool",
    "SelectionEvent",
    "SyncPart",
    "SyncPartReceived",
    "SyncReport",
    "SyncUpload",
    "TokenEstimate",
    "ToolCall",
    "ToolRef",
    "ToolReview",
    "ToolSpec",
    "ToolState",
    "ToolStateChanged",
    "UsageUpdated",
    "Verdict",
    "canonical_json",
    "payload_signature",
    *admin.__all__,
]
