"""Who may use the dashboard: operators signed in with the admin token (a session cookie, and a CSRF token every
write must carry), or a script sending the token itself (``Authorization: Bearer``, which a browser never adds on
its own, so it needs no CSRF token). Sessions live in the dashboard's memory: a restart signs everyone out."""

import hmac
import secrets
import time
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from toolsel.errors import NotPermitted

COOKIE = "toolsel_session"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"


@dataclass
class Session:
    csrf: str
    expires: float
    flash: list[str] = field(default_factory=list)
    """One-line messages (a write's result or its error) shown once on the next page."""


@dataclass
class Caller:
    """Who made a request: a session's operator, or a script with the token (``session`` None)."""

    session: Session | None


class Sessions:
    """Signed-in operators by session id; expired ones are dropped when met and at each sign-in."""

    def __init__(self, admin_token: str, ttl_s: float):
        self.admin_token = admin_token
        self.ttl_s = ttl_s
        self._by_id: dict[str, Session] = {}

    def token_matches(self, given: str) -> bool:
        return bool(self.admin_token) and hmac.compare_digest(given.encode(), self.admin_token.encode())

    def sign_in(self, token: str) -> str:
        """A new session's id for the right admin token; ``NotPermitted`` for any other."""
        if not self.token_matches(token):
            raise NotPermitted.saying("wrong admin token (`toolsel env` prints TOOLSEL_ADMIN_TOKEN)", "token")
        now = time.monotonic()
        self._by_id = {kept: session for kept, session in self._by_id.items() if session.expires >= now}
        session_id = secrets.token_urlsafe(32)
        self._by_id[session_id] = Session(csrf=secrets.token_urlsafe(32), expires=time.monotonic() + self.ttl_s)
        return session_id

    def sign_out(self, session_id: str) -> None:
        self._by_id.pop(session_id, None)

    def get(self, session_id: str | None) -> Session | None:
        session = self._by_id.get(session_id or "")
        if session is not None and session.expires < time.monotonic():
            del self._by_id[session_id or ""]
            return None
        return session


def client_address(request: Request) -> str:
    return request.client.host if request.client is not None else ""


def bearer(request: Request) -> str | None:
    """The request's bearer token, if it sends one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token if scheme.lower() == "bearer" and token else None


def caller(request: Request) -> Caller | None:
    """The request's operator, if it carries a live session cookie or the admin token as a bearer token."""
    sessions: Sessions = request.app.state.sessions
    token = bearer(request)
    if token is not None:
        return Caller(None) if sessions.token_matches(token) else None
    session = sessions.get(request.cookies.get(COOKIE))
    return Caller(session) if session is not None else None


def operator(request: Request) -> Caller:
    """A dependency of every route but sign-in and health: the caller, or ``NotPermitted``."""
    found = caller(request)
    if found is None:
        raise NotPermitted.saying("sign in first (POST /sign-in with the admin token), or send it as a bearer token")
    return found


def check_csrf(found: Caller, given: str | None) -> None:
    """A session's write must carry its CSRF token (header or form field); a bearer token's needs none."""
    if found.session is not None and not (given and hmac.compare_digest(given.encode(), found.session.csrf.encode())):
        raise NotPermitted.saying("missing or wrong CSRF token: reload the page and try again", CSRF_FIELD)


async def writer(request: Request) -> Caller:
    """A dependency of every write: an operator whose request carries the session's CSRF token."""
    found = operator(request)
    given = request.headers.get(CSRF_HEADER)
    if (
        given is None
        and found.session is not None
        and request.headers.get("content-type", "").startswith(
            ("application/x-www-form-urlencoded", "multipart/form-data")
        )
    ):
        value = (await request.form()).get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    check_csrf(found, given)
    return found


Reader = Annotated[Caller, Depends(operator)]
"""A route's caller who may read."""
Writer = Annotated[Caller, Depends(writer)]
"""A route's caller who may write (the CSRF token checked)."""
