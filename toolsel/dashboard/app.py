"""The dashboard's app: the admin API and the pages over one admin client, FastStream's FastAPI router holding
the NATS connection that watches tools' state changes, and every failure as a one-line typed error."""

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

from fastapi import FastAPI, Form, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from faststream.nats.fastapi import NatsRouter
from pydantic import ValidationError

from toolsel.client import ToolselClient
from toolsel.contracts import ErrorCode, ErrorDetail, ErrorReply, ToolStateChanged, subjects
from toolsel.dashboard import api, pages
from toolsel.dashboard.auth import COOKIE, Sessions, bearer, caller, check_csrf, client_address
from toolsel.errors import InvalidRequest, NotPermitted, ToolselError, TooManyAttempts, first_problem
from toolsel.settings import Settings
from toolsel.throttle import Throttle

STATUS: Final[dict[ErrorCode, int]] = {
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.INTERNAL: 500,
}
"""The HTTP status of each error code."""
STATE_CHANGES_KEPT: Final = 200
"""Tool state changes the dashboard remembers (newest first) for the Quality tab."""
STATIC: Final = Path(__file__).parent / "static"
SIGN_IN_BODY_MAX: Final = 4096
"""Bytes of a sign-in's body read at most: the token field's 512 characters percent-encoded, with room. Anyone may
send one, so a longer body is refused (HTTP 413) unread when its length is declared, and once past this when not."""


def unauthorized(message: str) -> NotPermitted:
    return NotPermitted(ErrorDetail(code=ErrorCode.UNAUTHORIZED, message=message))


def error_response(request: Request, error: ToolselError) -> Response:
    """An API call (or anything not asking for HTML) gets the error as an ``ErrorReply``, the services' shape; a
    browser gets the sign-in page when nobody is signed in, else the error on a page (a form's write: on the page
    it came from)."""
    status = STATUS[error.detail.code]
    if request.url.path.startswith("/api/") or "text/html" not in request.headers.get("accept", ""):
        return JSONResponse(ErrorReply(error=error.detail).model_dump(mode="json"), status_code=status)
    if caller(request) is None:
        return RedirectResponse("/sign-in", status_code=303)
    if request.method == "GET":
        return pages.error_page(request, error, status)
    return pages.back(request, str(error))


def create_app(settings: Settings, nats_url: str, admin_token: str) -> FastAPI:
    """The dashboard on ``nats_url`` (the operator's NATS user), signing in with ``admin_token``."""
    broker = NatsRouter(nats_url, schema_url=None, include_in_schema=False, logger=None)
    changes: deque[ToolStateChanged] = deque(maxlen=STATE_CHANGES_KEPT)

    @broker.subscriber(subjects.TOOL_STATE_CHANGED)
    async def state_changed(change: ToolStateChanged) -> None:
        changes.appendleft(change)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with (
            broker.lifespan_context(app),
            ToolselClient(nats_url, admin_token=admin_token, stay_connected=True) as client,
        ):
            app.state.client = client
            yield

    app = FastAPI(
        title="toolsel admin API",
        summary="Operators' HTTP API over toolsel's admin requests (sign in with the admin token).",
        version="1",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI would load its script from a CDN: the OpenAPI document is served, not rendered
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.sessions = Sessions(admin_token, settings.dashboard_session_ttl_s)
    throttle = Throttle(settings.dashboard_sign_in_attempts, settings.dashboard_sign_in_window_s, "wrong admin tokens")
    app.state.settings = settings
    app.state.changes = changes

    @app.exception_handler(ToolselError)
    async def typed(request: Request, error: ToolselError) -> Response:
        return error_response(request, error)

    @app.exception_handler(RequestValidationError)
    async def unparsed(request: Request, error: RequestValidationError) -> Response:
        return error_response(request, _invalid(error.errors()))

    @app.exception_handler(ValidationError)
    async def invalid(request: Request, error: ValidationError) -> Response:
        field, why = first_problem(error)
        return error_response(request, InvalidRequest.saying(why, field or None))

    @app.middleware("http")
    async def signed_in(request: Request, call_next: Any) -> Response:
        """Nothing but sign-in, health and the style sheet is served to someone not signed in; a wrong bearer
        token counts against its address as a wrong sign-in does."""
        sent_token = bearer(request) is not None
        if sent_token:
            try:
                throttle.check(client_address(request))
            except ToolselError as error:
                return error_response(request, error)
        found = caller(request)
        if found is None and sent_token:
            throttle.failed(client_address(request))
        if request.url.path not in OPEN and not request.url.path.startswith("/static/") and found is None:
            return error_response(request, unauthorized("sign in first: POST /sign-in with the admin token"))
        response: Response = await call_next(request)
        response.headers.setdefault("x-frame-options", "DENY")
        response.headers.setdefault("referrer-policy", "same-origin")
        return response

    @app.get("/health", include_in_schema=True, summary="Whether the dashboard and each service answer")
    async def health(request: Request) -> dict[str, str]:
        client: ToolselClient = request.app.state.client
        found = {"dashboard": "ok"}
        for service in subjects.SERVICES:
            try:
                found[service] = (await client.health(service)).status
            except ToolselError as error:
                found[service] = error.detail.code.value
        return found

    @app.get("/sign-in", include_in_schema=False)
    async def sign_in_page(request: Request) -> Response:
        return pages.sign_in_page(request)

    @app.post(
        "/sign-in", summary="Sign in with the admin token: sets the session cookie", max_body_size=SIGN_IN_BODY_MAX
    )
    async def sign_in(request: Request, token: str = Form(max_length=512)) -> Response:
        sessions: Sessions = request.app.state.sessions
        try:
            throttle.check(client_address(request))
            session_id = sessions.sign_in(token)
        except ToolselError as error:
            refused = error if isinstance(error, TooManyAttempts) else unauthorized(error.detail.message)
            if not isinstance(error, TooManyAttempts):
                throttle.failed(client_address(request))
            if "text/html" in request.headers.get("accept", ""):
                return pages.sign_in_page(request, str(error), STATUS[refused.detail.code])
            raise refused from None
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE,
            session_id,
            max_age=int(settings.dashboard_session_ttl_s),
            httponly=True,
            samesite="strict",
            secure=over_https(request),
        )
        return response

    @app.post("/sign-out", summary="Sign out (the session's CSRF token in the form)")
    async def sign_out(request: Request, csrf_token: str = Form("")) -> Response:
        found = caller(request)
        if found is not None and found.session is not None:
            check_csrf(found, csrf_token)
            request.app.state.sessions.sign_out(request.cookies.get(COOKIE))
        response = RedirectResponse("/sign-in", status_code=303)
        response.delete_cookie(COOKIE, httponly=True, samesite="strict", secure=over_https(request))
        return response

    app.include_router(api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


OPEN: Final = frozenset({"/sign-in", "/health"})
"""Paths served without signing in."""


def over_https(request: Request) -> bool:
    """Whether the browser reached the dashboard over https (through a trusted proxy): its session cookie is then
    ``Secure``, never sent over plain HTTP. Over plain HTTP (this machine, an SSH tunnel) it is not: a browser may
    refuse a ``Secure`` cookie there."""
    return request.url.scheme == "https"


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """How uvicorn serves the dashboard. Forwarded headers are believed from ``dashboard_trusted_proxies`` only:
    uvicorn's default believes any from 127.0.0.1, so a caller on this machine would name its own address to the
    sign-in throttle, a new one for each guess, or the operator's to lock them out."""
    trusted = settings.dashboard_trusted_proxies
    return {
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": trusted or None,
        "log_level": "warning",
        "access_log": False,
    }


def _invalid(problems: Any) -> InvalidRequest:
    """FastAPI's refusal of a request's parameters as one line naming the first bad field."""
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"] if part not in ("body", "query", "path"))
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return InvalidRequest.saying(f"{first['msg'].removeprefix('Value error, ')}{more}", where or None)
