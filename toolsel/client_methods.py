"""The client's methods as one table: each row names a subject and its message types, and the method is made
from the row (the request built from positional arguments and fields, the reply decoded). A new subject is one
row here; the async client and its sync wrapper both get it."""

import inspect
from collections.abc import Callable, Coroutine, Mapping
from functools import cached_property
from typing import Any, Generic, Self, TypeVar, overload

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from toolsel.contracts import (
    AccuracyTrend,
    AnalyticsQuery,
    CategoryQuery,
    CategoryTree,
    DriftReport,
    DriftRequest,
    FeedbackEvent,
    FeedbackList,
    FeedbackQuery,
    Heatmap,
    OutcomeEvent,
    PageCategories,
    PageMapping,
    PageMappingList,
    PageMappingQuery,
    PageMappingWrite,
    PageQuery,
    PinList,
    PinRequest,
    PluginList,
    PluginQuery,
    QualityList,
    QualityQuery,
    QuarantineList,
    QuarantineQuery,
    QuarantineRelease,
    QuarantineReleased,
    RecomputeReport,
    RecomputeRequest,
    ReviewEvent,
    ReviewTrend,
    RollbackReport,
    RollbackRequest,
    RuleCreate,
    RuleKey,
    RuleList,
    RuleQuery,
    RuleUpdate,
    SelectionMetrics,
    SelectReply,
    SelectRequest,
    ToolDetail,
    ToolKey,
    ToolList,
    ToolQuery,
    ToolRegister,
    ToolUpdate,
    ToolVersions,
    ToolWriteReport,
    VisibilityRule,
    subjects,
)
from toolsel.errors import InvalidRequest, invalid

Q = TypeVar("Q", bound=BaseModel)
A = TypeVar("A", bound=BaseModel)
T = TypeVar("T")


class Made:
    """The default shown for a field its message makes when left out (a fresh id, the time of sending)."""

    def __repr__(self) -> str:
        return "<made when left out>"


def _default(field: FieldInfo) -> Any:
    return Made() if field.default_factory is not None else field.default


class Method(Generic[Q, A]):
    """One row: a message type sent on a subject. ``args`` name the fields positional arguments fill."""

    name = ""

    def __init__(self, subject: str, message: type[Q], *, args: tuple[str, ...] = (), **preset: Any):
        self.subject = subject
        self.message = message
        self.args = args
        self.preset: Mapping[str, Any] = preset

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    def build(self, args: tuple[Any, ...], fields: Mapping[str, Any]) -> Q:
        """The message: given whole (one positional argument of its type) or made from arguments and fields."""
        if len(args) == 1 and isinstance(args[0], self.message) and not fields:
            return args[0]
        if len(args) > len(self.args):
            raise InvalidRequest.saying(
                f"{self.name}() takes {len(self.args)} positional arguments ({', '.join(self.args)})"
            )
        try:
            return self.message.model_validate({**self.preset, **dict(zip(self.args, args, strict=False)), **fields})
        except ValidationError as error:
            raise invalid(error) from None

    async def invoke(self, client: "AsyncMethods", message: Q) -> A:
        raise NotImplementedError

    @property
    def returns(self) -> type[BaseModel]:
        return self.message

    @cached_property
    def signature(self) -> inspect.Signature:
        """The method's real signature: the row's ``args`` positionally, every other field of the message by keyword
        with its default (the message whole is accepted as the one positional argument too). Made once, since every
        call binds the method anew."""
        hidden = {*self.preset, "schema_version"}
        fields = {name: f for name, f in self.message.model_fields.items() if name not in hidden}
        positional = [
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=fields[name].annotation)
            for name in self.args
        ]
        keywords = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=field.annotation,
                default=inspect.Parameter.empty if field.is_required() else _default(field),
            )
            for name, field in fields.items()
            if name not in self.args
        ]
        return inspect.Signature([*positional, *keywords], return_annotation=self.returns)

    @cached_property
    def doc(self) -> str:
        """The method's docstring: what it sends, where, what it returns, and the message's own description."""
        kind = "publishes" if isinstance(self, Event) else "requests"
        about = inspect.getdoc(self.message) or ""
        return (
            f"{kind.capitalize()} a {self.message.__name__} on {self.subject} and returns a "
            f"{self.returns.__name__}. Takes the message whole, or {', '.join(self.args) or 'no positional arguments'}"
            f" positionally and its other fields by keyword. Raises toolsel.errors.ToolselError.\n\n{about}"
        ).strip()

    def named(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call`` with this row's name, signature and docstring."""
        call.__name__ = call.__qualname__ = self.name
        call.__signature__ = self.signature  # type: ignore[attr-defined]
        call.__doc__ = self.doc
        return call

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, obj: "AsyncMethods", owner: type[Any]) -> Callable[..., Coroutine[Any, Any, A]]: ...
    @overload
    def __get__(self, obj: "SyncMethods", owner: type[Any]) -> Callable[..., A]: ...
    def __get__(self, obj: "ClientMethods | None", owner: type[Any]) -> Any:
        return self if obj is None else obj.bind(self)


class Request(Method[Q, A]):
    """A request/reply subject; admin requests carry the client's admin token."""

    def __init__(
        self,
        subject: str,
        request: type[Q],
        reply: type[A],
        *,
        args: tuple[str, ...] = (),
        admin: bool = True,
        timeout_s: float | None = None,
        **preset: Any,
    ):
        super().__init__(subject, request, args=args, **preset)
        self.reply = reply
        self.admin = admin
        self.timeout_s = timeout_s

    async def invoke(self, client: "AsyncMethods", message: Q) -> A:
        return await client.send(self, message)

    @property
    def returns(self) -> type[BaseModel]:
        return self.reply


class Event(Method[Q, Q]):
    """A durable event (JetStream); the call returns the event it published."""

    async def invoke(self, client: "AsyncMethods", message: Q) -> Q:
        await client.publish(self.subject, message)
        return message


class ClientMethods:
    """The table. ``select(query=...)``, ``list_tools(plugin_id=...)``, ``show_tool("plugin", "name")`` or
    ``rollback_tool(RollbackRequest(...))``: every method takes its message whole, or positional arguments
    (the row's ``args``) and fields."""

    # sent under the client's scope (``subjects.scoped``): the roots are scoped by ``send`` and ``publish``
    select = Request(subjects.SELECT_ROOT, SelectRequest, SelectReply, args=("query",), admin=False)
    report_outcome = Event(subjects.OUTCOME_ROOT, OutcomeEvent, args=("selection_id", "calls"))
    review = Event(subjects.REVIEW_ROOT, ReviewEvent, args=("selection_id", "reviews"))
    none_of_these = Event(subjects.REVIEW_ROOT, ReviewEvent, args=("selection_id",), none_of_these=True)
    feedback = Event(subjects.FEEDBACK_ROOT, FeedbackEvent, args=("plugin_id", "name", "rating"))
    # an agent's requests wait the client's ``timeout_s``, not an admin request's ``admin_timeout_s``
    list_pins = Request(subjects.PINS_ROOT, PinRequest, PinList, admin=False, action="list")
    pin_tool = Request(subjects.PINS_ROOT, PinRequest, PinList, args=("plugin_id", "name"), admin=False, action="pin")
    unpin_tool = Request(
        subjects.PINS_ROOT, PinRequest, PinList, args=("plugin_id", "name"), admin=False, action="unpin"
    )
    clear_pin = Request(
        subjects.PINS_ROOT, PinRequest, PinList, args=("plugin_id", "name"), admin=False, action="clear"
    )

    # registry area (indexer)
    list_tools = Request(subjects.ADMIN_TOOLS_LIST, ToolQuery, ToolList)
    list_plugins = Request(subjects.ADMIN_TOOLS_PLUGINS, PluginQuery, PluginList)
    show_tool = Request(subjects.ADMIN_TOOLS_SHOW, ToolKey, ToolDetail, args=("plugin_id", "name"))
    tool_versions = Request(subjects.ADMIN_TOOLS_VERSIONS, ToolKey, ToolVersions, args=("plugin_id", "name"))
    approve_tool = Request(subjects.ADMIN_TOOLS_APPROVE, ToolKey, ToolDetail, args=("plugin_id", "name"))
    rollback_tool = Request(
        subjects.ADMIN_TOOLS_ROLLBACK, RollbackRequest, RollbackReport, args=("plugin_id", "name", "version")
    )
    register_tool = Request(subjects.ADMIN_TOOLS_REGISTER, ToolRegister, ToolWriteReport)
    update_tool = Request(subjects.ADMIN_TOOLS_UPDATE, ToolUpdate, ToolWriteReport)
    delete_tool = Request(subjects.ADMIN_TOOLS_DELETE, ToolKey, ToolWriteReport, args=("plugin_id", "name"))
    recompute_embeddings = Request(
        subjects.ADMIN_EMBEDDINGS_RECOMPUTE, RecomputeRequest, RecomputeReport, args=("plugin_id",)
    )
    drift = Request(subjects.ADMIN_DRIFT, DriftRequest, DriftReport, args=("plugin_id", "days"))
    list_categories = Request(subjects.ADMIN_CATEGORIES_LIST, CategoryQuery, CategoryTree, args=("plugin_id",))
    page_categories = Request(subjects.ADMIN_CATEGORIES_FOR_PAGE, PageQuery, PageCategories, args=("page",))
    list_page_mappings = Request(subjects.ADMIN_PAGE_MAPPINGS_LIST, PageMappingQuery, PageMappingList)
    create_page_mapping = Request(subjects.ADMIN_PAGE_MAPPINGS_CREATE, PageMappingWrite, PageMapping)
    delete_page_mapping = Request(subjects.ADMIN_PAGE_MAPPINGS_DELETE, PageMappingWrite, PageMapping)
    list_rules = Request(subjects.ADMIN_RULES_LIST, RuleQuery, RuleList)
    create_rule = Request(subjects.ADMIN_RULES_CREATE, RuleCreate, VisibilityRule, args=("rule",))
    update_rule = Request(subjects.ADMIN_RULES_UPDATE, RuleUpdate, VisibilityRule, args=("id", "rule"))
    delete_rule = Request(subjects.ADMIN_RULES_DELETE, RuleKey, VisibilityRule, args=("id",))

    # learning area (learner)
    quality = Request(subjects.ADMIN_QUALITY, QualityQuery, QualityList)
    list_quarantine = Request(subjects.ADMIN_QUARANTINE_LIST, QuarantineQuery, QuarantineList)
    release_quarantine = Request(
        subjects.ADMIN_QUARANTINE_RELEASE, QuarantineRelease, QuarantineReleased, args=("plugin_id", "name")
    )
    list_feedback = Request(subjects.ADMIN_FEEDBACK_LIST, FeedbackQuery, FeedbackList)

    # analytics area (learner)
    metrics = Request(subjects.ADMIN_ANALYTICS_METRICS, AnalyticsQuery, SelectionMetrics)
    heatmap = Request(subjects.ADMIN_ANALYTICS_HEATMAP, AnalyticsQuery, Heatmap)
    accuracy = Request(subjects.ADMIN_ANALYTICS_ACCURACY, AnalyticsQuery, AccuracyTrend)
    review_trend = Request(subjects.ADMIN_ANALYTICS_REVIEWS, AnalyticsQuery, ReviewTrend)

    def bind(self, method: Method[Any, Any]) -> Callable[..., Any]:
        raise NotImplementedError


def table() -> dict[str, Method[Any, Any]]:
    """Method name -> its row."""
    return {name: row for name, row in vars(ClientMethods).items() if isinstance(row, Method)}


class AsyncMethods(ClientMethods):
    """The table's methods as coroutines over ``send`` and ``publish``."""

    async def send(self, request: Request[Any, A], message: BaseModel) -> A:
        raise NotImplementedError

    async def publish(self, subject: str, event: BaseModel) -> None:
        raise NotImplementedError

    def bind(self, method: Method[Any, Any]) -> Callable[..., Coroutine[Any, Any, Any]]:
        async def call(*args: Any, **fields: Any) -> Any:
            return await method.invoke(self, method.build(args, fields))

        return method.named(call)


class SyncMethods(ClientMethods):
    """The table's methods run to completion on an async client's loop."""

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        raise NotImplementedError

    @property
    def aio(self) -> AsyncMethods:
        raise NotImplementedError

    def bind(self, method: Method[Any, Any]) -> Callable[..., Any]:
        def call(*args: Any, **fields: Any) -> Any:
            return self.run(method.invoke(self.aio, method.build(args, fields)))

        return method.named(call)
