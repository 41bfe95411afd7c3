"""Signing in to the real dashboard app (its NATS connection not started), and as uvicorn serves it with the
options of ``toolsel dashboard``: forwarded headers believed from trusted proxies only, a sign-in's body read no
further than a sign-in needs, and the session cookie ``Secure`` over https."""

from typing import Any

import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Message

from toolsel.dashboard.app import SIGN_IN_BODY_MAX, create_app, uvicorn_options
from toolsel.dashboard.auth import COOKIE
from toolsel.settings import Settings

TOKEN = "right-token-0123456789"
CHUNK = 64 * 1024
"""What a server hands the app of a body at a time."""
LOCAL = ("127.0.0.1", 40000)


def dashboard(settings: Settings) -> FastAPI:
    return create_app(settings, "nats://127.0.0.1:1", TOKEN)


def served(settings: Settings) -> ASGIApp:
    """The app inside the middleware uvicorn wraps it in, given ``toolsel dashboard``'s options."""
    config = uvicorn.Config(dashboard(settings), log_config=None, **uvicorn_options(settings))
    config.load()
    loaded: ASGIApp = config.loaded_app
    return loaded


def sign_in(client: TestClient, token: str, forwarded_for: str) -> int:
    """A sign-in's status, its request naming ``forwarded_for`` as the client in ``X-Forwarded-For``."""
    answer = client.post(
        "/sign-in", data={"token": token}, headers={"x-forwarded-for": forwarded_for}, follow_redirects=False
    )
    return answer.status_code


def cookie_attributes(answer: Any) -> list[str]:
    """The session cookie an answer sets, as its lower-cased parts: name=value first, then its attributes."""
    parts = [part.strip().lower() for part in answer.headers["set-cookie"].split(";")]
    assert parts[0].startswith(f"{COOKIE}=")
    return parts


def test_a_local_caller_cannot_name_its_own_address_to_the_throttle() -> None:
    client = TestClient(served(Settings(dashboard_sign_in_attempts=3)), client=LOCAL)
    guesses = [sign_in(client, f"guess{i}", f"10.0.0.{i}") for i in range(4)]
    assert guesses == [401, 401, 401, 429]
    assert sign_in(client, TOKEN, "10.0.1.1") == 429, "the operator's address is the caller's"


def test_a_trusted_proxy_names_the_client_and_its_scheme() -> None:
    settings = Settings(dashboard_sign_in_attempts=3, dashboard_trusted_proxies=["127.0.0.1"])
    proxy = TestClient(served(settings), client=LOCAL)
    assert [sign_in(proxy, "guess", "192.0.2.9") for _ in range(4)] == [401, 401, 401, 429]
    answer = proxy.post(
        "/sign-in",
        data={"token": TOKEN},
        headers={"x-forwarded-for": "192.0.2.1", "x-forwarded-proto": "https"},
        follow_redirects=False,
    )
    assert answer.status_code == 303, "another client behind the proxy is not held back"
    assert "secure" in cookie_attributes(answer)[1:]
    elsewhere = TestClient(served(settings), client=("198.51.100.7", 40000))
    guesses = [sign_in(elsewhere, "guess", f"10.0.0.{i}") for i in range(4)]
    assert guesses == [401, 401, 401, 429], "a caller not at a trusted address names no address"


def test_the_session_cookie_is_secure_over_https_only() -> None:
    for scheme, secure in (("https", True), ("http", False)):
        client = TestClient(dashboard(Settings()), base_url=f"{scheme}://testserver")
        answer = client.post("/sign-in", data={"token": TOKEN}, follow_redirects=False)
        script = {"authorization": f"Bearer {TOKEN}", "cookie": "none=1"}  # no session, so no CSRF token
        gone = client.post("/sign-out", headers=script, follow_redirects=False)  # deleted as it was set
        assert (answer.status_code, gone.status_code) == (303, 303)
        for attributes in (cookie_attributes(answer)[1:], cookie_attributes(gone)[1:]):
            assert ("secure" in attributes) is secure, scheme
            assert {"httponly", "samesite=strict"} <= set(attributes)


async def post_sign_in(app: ASGIApp, size: int, *, declared: bool) -> tuple[int, int]:
    """POST /sign-in with a form body of ``size`` bytes handed over ``CHUNK`` at a time, its length declared in
    ``Content-Length`` or not (chunked): the answer's status and how many bytes the app read."""
    headers = [(b"content-type", b"application/x-www-form-urlencoded")]
    if declared:
        headers.append((b"content-length", str(size).encode()))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/sign-in",
        "raw_path": b"/sign-in",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": LOCAL,
        "server": ("testserver", 80),
    }
    read = 0
    statuses: list[int] = []

    async def receive() -> Message:
        nonlocal read
        if read == size:
            return {"type": "http.disconnect"}
        chunk = b"a" * min(CHUNK, size - read)
        read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": read < size}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(scope, receive, send)
    return statuses[0], read


async def test_a_sign_in_body_longer_than_a_sign_in_needs_is_refused_unread() -> None:
    assert CHUNK > SIGN_IN_BODY_MAX  # so that a chunked body is refused at its first chunk
    app = dashboard(Settings())
    size = 8 * 1024 * 1024
    assert await post_sign_in(app, size, declared=True) == (413, 0)
    assert await post_sign_in(app, size, declared=False) == (413, CHUNK)
