"""What the MCP tools do, over the client and the sessions: search (seed 003's one discovery call, with
seed 002's paging and exclusion of rejected tools), review (seed 002's verdicts or "none of these") and the
outcome report. The MCP server only registers these; tests call them through the SDK's client."""

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import UUID

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from toolsel.client import ToolselClient
from toolsel.contracts import (
    OutcomeEvent,
    PinList,
    ReviewEvent,
    ScoredTool,
    SelectFilters,
    SelectReply,
    SelectRequest,
    ToolCall,
    ToolRef,
    ToolReview,
    Verdict,
)
from toolsel.contracts.pins import PinAction
from toolsel.mcp.gateway import CallableTools, Gateway, Proxied
from toolsel.mcp.sessions import Session, Sessions
from toolsel.tool_shapes import function_name, parameters_schema

log = logging.getLogger(__name__)
MAX_K = 50
"""The most tools one select ranks for a request (``SelectRequest.k``): how deep pages reach."""
REJECTING = frozenset({Verdict.UNRELATED, Verdict.BROKEN})
"""Verdicts after which a session never offers the tool again."""
PIN_ROWS = {
    "list": ToolselClient.list_pins,
    "pin": ToolselClient.pin_tool,
    "unpin": ToolselClient.unpin_tool,
    "clear": ToolselClient.clear_pin,
}
"""The client's request for each action on a tenant's pins."""
SESSION_META = "toolsel/session"
"""The ``_meta`` key of a ``tools/call`` of a found tool that names the caller's session: its outcome then counts
for the selection of that session that offered the tool."""
REPORT_WAIT_S = 0.5
"""The longest a found tool's answer waits for its outcome to be sent: a healthy stack takes milliseconds, so the
outcome is in before the agent goes on; one that is away would hold every answer back (the report goes on in
the background)."""


class FoundTool(BaseModel):
    name: str
    """The name to call it by (``plugin__name``, or a hashed one where that could stand for another tool:
    ``function_name``), valid for every LLM API."""
    tool: str
    """Its identity, ``plugin/name``."""
    description: str
    input_schema: dict[str, Any]
    usage_hint: str | None = None
    related_tools: list[str] = Field(default_factory=list)
    related_to: str | None = None
    """Set when it is here only as a related tool of that one."""
    category: str | None = None
    confidence: float
    """The calibrated probability that this tool fits the request."""
    score: float
    """Its rank score in this answer (higher is better), with what was learnt from use."""
    reason: str = ""
    """Why it was offered, in a sentence (matched words, meaning, success in this context, pinned, related)."""
    callable: bool = False
    """True when this server calls it for you: call it by ``name`` (its outcome is reported for you)."""
    server: str = ""
    """The server its plugin says serves it."""
    execution_type: Literal["rest", "dispatch", "internal", "mcp"] = "internal"
    execution_config: dict[str, Any] = Field(default_factory=dict)
    """How to call it yourself, as its plugin declares."""


class SearchResult(BaseModel):
    session: str
    """Pass it back to search again, review or report: the session remembers rejections and earlier pages."""
    selection_id: UUID
    page: int
    tools: list[FoundTool]
    workflow_hints: dict[str, str] = Field(default_factory=dict)
    """Guidance for the categories of the tools found, by ``plugin/category``."""
    no_match: bool
    """True when no tool found is likely to fit (none clears the service's confidence threshold)."""
    note: str


class ReviewResult(BaseModel):
    session: str
    recorded: int
    """How many review events were sent (one per selection the reviewed tools came from)."""
    rejected: list[str]
    """Tools this session will not offer again."""
    note: str


class OutcomeResult(BaseModel):
    session: str
    recorded: int


class ToolshedError(Exception):
    """A request the agent can correct (unknown session, a tool it was never offered)."""


def per_call(field: str, fixed: str | None, given: str | None) -> str | None:
    """The value of a request's ``field`` (user, tier): the identity's where it fixes one, else what the call
    gives. A call that gives another value than the identity fixes is refused: an identity made for one user or
    tier speaks only for that one."""
    if given is None or given == fixed:
        return fixed
    if fixed is not None:
        raise ToolshedError(f"{field} {given!r}: this identity is fixed to {fixed!r}; leave {field} out")
    return given


def found(tool: ScoredTool, callable_names: frozenset[str] = frozenset()) -> FoundTool:
    related_to = tool.related_to
    return FoundTool(
        name=function_name(tool),
        tool=tool.key,
        description=tool.description,
        input_schema=parameters_schema(tool.parameters),
        usage_hint=tool.usage_hint,
        related_tools=[function_name(r) for r in tool.related_tools],
        related_to=None if related_to is None else function_name(related_to),
        category=tool.category,
        confidence=tool.confidence,
        score=tool.score,
        reason=tool.reason,
        callable=function_name(tool) in callable_names,
        server=tool.server,
        execution_type=tool.execution_type,
        execution_config=tool.execution_config,
    )


def search_result(
    session: Session, reply: SelectReply, page: int, callable_names: frozenset[str] = frozenset()
) -> SearchResult:
    """The answer to a search; says so when nothing fits and how to ask for more when something might."""
    no_match = reply.no_match or not reply.tools
    if no_match:
        left_out = "No tool fits this request (tools rejected or already offered in this session are left out)."
        note = f"{left_out} {reply.advice or 'Rephrase the need, or go on without a tool.'}"
    else:
        how = (
            "Call the tools marked callable by name: this server calls them for you and reports how the call went."
            if callable_names
            else "Call these tools by name."
        )
        note = (
            f"{how} If none fits, call review_tools with none_of_these=true, or search_tools again with "
            f"page={page + 1} for further options."
        )
    return SearchResult(
        session=session.id,
        selection_id=reply.selection_id,
        page=page,
        tools=[found(t, callable_names) for t in reply.tools],
        workflow_hints=reply.workflow_hints,
        no_match=no_match,
        note=note.strip(),
    )


OFFERED_NAME_MAX = 128 + 1 + 128
"""A tool's name as search_tools gives it, at its longest (``plugin/name``): a longer one was never offered, and was
echoed back whole in the error."""


class Review(BaseModel):
    tool: str = Field(description="the tool's name as search_tools gave it", max_length=OFFERED_NAME_MAX)
    verdict: Verdict = Field(
        description="perfect: did what was needed; related: near but not right; unrelated: nothing to do with "
        "it; broken: failed when used. unrelated and broken tools are not offered again in this session."
    )


class Call(BaseModel):
    tool: str = Field(description="the tool's name as search_tools gave it", max_length=OFFERED_NAME_MAX)
    success: bool
    latency_ms: float | None = Field(default=None, ge=0, le=3_600_000)
    error: str | None = Field(default=None, max_length=2000)


@dataclass
class Toolshed:
    """The three MCP tools over one connected client, for one identity: the client's (its tenant is the
    sender's own), or for the operator's client the tenant named here."""

    client: ToolselClient
    sessions: Sessions
    tenant_id: str | None = None
    """None: the client's identity's tenant (left for the selector to take from the sender)."""
    user_id: str | None = None
    tier: str | None = None
    role: str | None = None
    gateway: Gateway | None = None
    """Calls the found tools whose plugin declares an MCP server it may reach; None: none is callable here."""
    callable: CallableTools = field(default_factory=CallableTools)
    """The found tools this toolshed calls (``tools/list`` shows them beside the three discovery tools)."""
    shared: bool = False
    """Several agents may use it (MCP over HTTP: one identity, many agents), so a call of a found tool that names
    no session counts only where one live session was offered the tool (``selection_for``)."""
    unattributed: int = 0
    """Calls of found tools whose outcome was not reported, since whose selection it was could not be told."""
    reports: set[asyncio.Task[None]] = field(default_factory=set)
    """The outcome reports still being sent (held here so that they run to their end)."""

    async def search(
        self,
        query: str,
        limit: int | None = None,
        page: int = 1,
        session: str | None = None,
        explore: bool = True,
        *,
        app_page: str = "",
        tier: str | None = None,
        user: str | None = None,
    ) -> SearchResult:
        """Page ``page`` of the tools for ``query``: past what earlier pages offered in this session (excluded),
        and past the rest of the offset (``(page - 1) * limit`` tools) where this session did not see them.
        ``app_page``, ``tier`` and ``user``: this call's context, where the identity does not fix it
        (``per_call``); the tenant is always the identity's. ``limit`` None: as many tools as the selector's
        confidence supports (``k: auto``), past what this session was offered for the query."""
        current = self.sessions.open(session)
        skip = 0 if limit is None else max(0, (page - 1) * limit - len(current.earlier(query, page)))
        k: int | Literal["auto"] = "auto" if limit is None else skip + limit
        if limit is not None and skip + limit > MAX_K:
            raise ToolshedError(
                f"page {page}: only the best {MAX_K} tools of a query are ranked; ask for an earlier page, or search "
                "on with the same session, page by page"
            )
        named = {"tenant_id": self.tenant_id, "tier": per_call("tier", self.tier, tier), "role": self.role}
        request = SelectRequest(
            query=query,
            user_id=per_call("user", self.user_id, user),
            page=app_page,
            session_id=current.id,
            k=k,
            max_tools=None if limit is None else skip + limit,
            filters=SelectFilters(exclude=current.exclude_for(query, page)),
            explore=explore,
            **{field: value for field, value in named.items() if value is not None},
        )
        answer = await self.client.select(request)
        reply = answer.model_copy(update={"tools": answer.tools[skip:]})
        current.record(reply.selection_id, query, page, reply.tools)
        proxied = [] if self.gateway is None else [self.gateway.proxied(t, reply.selection_id) for t in reply.tools]
        served = [p for p in proxied if p is not None]
        self.callable.add(served, current.id)
        return search_result(current, reply, page, frozenset(p.listed.name for p in served))

    async def call(self, name: str, arguments: dict[str, Any], session: str | None = None) -> CallToolResult | None:
        """Call a found tool on its MCP server and report the outcome to the selection that offered it to the
        caller (``selection_for``; as this toolshed's identity, the selection's owner), waiting for the report at
        most ``REPORT_WAIT_S``; None when ``name`` is not a tool this toolshed calls."""
        proxied = self.callable.get(name)
        if proxied is None or self.gateway is None:
            return None
        selection_id = self.selection_for(proxied, session)
        result, made = await self.gateway.call(proxied, arguments)
        if selection_id is None:
            self.unattributed += 1
            log.info(
                "the outcome of a call to %s was not reported: which selection offered it to the caller cannot be "
                "told (a call names its session in _meta %r); %d such calls so far",
                proxied.ref.key,
                SESSION_META,
                self.unattributed,
            )
            return result
        report = asyncio.create_task(self._report(OutcomeEvent(selection_id=selection_id, calls=[made])))
        self.reports.add(report)
        report.add_done_callback(self.reports.discard)
        await asyncio.wait({report}, timeout=REPORT_WAIT_S)
        return result

    def selection_for(self, proxied: Proxied, session: str | None) -> UUID | None:
        """The selection a call of a found tool counts for: that of the caller's ``session`` (``_meta``) that
        offered it. Without one, the latest that offered it where one agent uses the toolshed (stdio); where
        several do, that of the one session it was ever offered to while that session lives, else None: the call
        may be any of theirs (an expired session's agent still holds the tool list, so the one live session that
        was offered it is no proof of who calls)."""
        if not self.shared and session is None:
            return proxied.selection_id
        if session is None:
            offered = self.callable.offered_to(proxied.listed.name)
            session = next(iter(offered)) if len(offered) == 1 else None
        named = None if session is None else self.sessions.find(session)
        return None if named is None else named.selection_of(proxied.ref)

    async def settled(self, timeout_s: float) -> None:
        """Wait, at most ``timeout_s``, for the outcome reports still being sent: a server that stops while NATS
        is slow to acknowledge one would otherwise lose it."""
        if self.reports:
            await asyncio.wait(set(self.reports), timeout=timeout_s)

    async def _report(self, event: OutcomeEvent) -> None:
        try:
            await self.client.report_outcome(event)
        except Exception:  # the agent keeps the tool's answer; the stack being away loses only this outcome
            made = event.calls[0]
            log.warning("the outcome of a call to %s/%s was not sent", made.plugin_id, made.name, exc_info=True)

    async def review(self, session: str, reviews: Iterable[Review], none_of_these: bool = False) -> ReviewResult:
        current = self._session(session)
        by_selection: dict[UUID, list[ToolReview]] = defaultdict(list)
        rejected: list[ToolRef] = []
        for review in reviews:
            ref, selection_id = self._offered(current, review.tool)
            by_selection[selection_id].append(
                ToolReview(plugin_id=ref.plugin_id, name=ref.name, verdict=review.verdict)
            )
            if review.verdict in REJECTING:
                rejected.append(ref)
        events = [ReviewEvent(selection_id=s, reviews=r) for s, r in by_selection.items()]
        if none_of_these:
            if current.last is None:
                raise ToolshedError("none_of_these: this session was offered nothing yet")
            events.append(ReviewEvent(selection_id=current.last.selection_id, none_of_these=True))
            rejected.extend(current.last.refs())
        if not events:
            raise ToolshedError("reviews: give at least one review or none_of_these=true")
        for event in events:
            await self.client.review(event)
        current.reject(rejected)
        return ReviewResult(
            session=current.id,
            recorded=len(events),
            rejected=sorted({function_name(r) for r in rejected}),
            note="Rejected tools will not be offered again in this session; search again for other options."
            if rejected
            else "Thanks: the reviews teach the ranking for queries like this one.",
        )

    async def report(self, session: str, calls: Iterable[Call]) -> OutcomeResult:
        current = self._session(session)
        by_selection: dict[UUID, list[ToolCall]] = defaultdict(list)
        for call in calls:
            ref, selection_id = self._offered(current, call.tool)
            by_selection[selection_id].append(
                ToolCall(
                    plugin_id=ref.plugin_id,
                    name=ref.name,
                    success=call.success,
                    latency_ms=call.latency_ms,
                    error=call.error,
                )
            )
        if not by_selection:
            raise ToolshedError("calls: report at least one call")
        for selection_id, made in by_selection.items():
            await self.client.report_outcome(OutcomeEvent(selection_id=selection_id, calls=made))
        return OutcomeResult(session=current.id, recorded=len(by_selection))

    async def pins(self, action: PinAction, tool: str | None = None) -> PinList:
        """List, pin, unpin or clear ``tool`` (``plugin/name``) for the identity's tenant (or the operator's named
        one); the reply is the tenant's pins as they stand."""
        plugin_id, _, name = (tool or "").partition("/")
        fields = {"plugin_id": plugin_id, "name": name} if tool else {}
        if self.tenant_id is not None:
            fields["tenant_id"] = self.tenant_id
        row = PIN_ROWS[action]
        return await row.invoke(self.client, row.build((), fields))

    def _session(self, session: str) -> Session:
        if not session:
            raise ToolshedError("session: give the session id search_tools returned")
        return self.sessions.open(session)

    @staticmethod
    def _offered(session: Session, name: str) -> tuple[ToolRef, UUID]:
        ref = session.resolve(name)
        selection_id = None if ref is None else session.selection_of(ref)
        if ref is None or selection_id is None:
            raise ToolshedError(f"tool {name!r} was not offered in this session")
        return ref, selection_id
