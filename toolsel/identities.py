"""Tenants' identities, made, listed and revoked by the operator. Each is bound to one tenant: a NATS user
(``<tenant>.<name>``, publishing only under its scope, see ``toolsel.contracts.identity``) whose password is also its
bearer token for MCP over HTTP (``<tenant>.<name>:<secret>``), optionally naming the user, role and tier that
MCP selections are made for.

They are kept in ``identities.json`` in the home (0600) with only a bcrypt hash of each secret, which the NATS
server checks itself: the secret is shown once, when made. Making or revoking one rewrites the embedded NATS
server's configuration and has it reload (``toolsel.embedded.reload_nats``).
"""

import fcntl
import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import bcrypt

from toolsel.contracts.identity import Scope, tenant_scope
from toolsel.embedded import login_url, reload_nats, write_private
from toolsel.nats_permissions import NATS_USERS

IDENTITIES_FILE = "identities.json"
LOCK_FILE = "identities.lock"
BCRYPT_ROUNDS = 8
"""bcrypt's cost: a secret is 256 random bits, which no cost makes easier or harder to guess, and the NATS server
pays the cost on every connection (at 12, a few seconds each on a loaded two-core machine: longer than a
client's connect timeout)."""


class IdentityError(ValueError):
    """An identity that cannot be made (a bad or taken name) or revoked (none such)."""


@dataclass(frozen=True)
class Identity:
    tenant: str
    name: str
    secret_hash: str
    """bcrypt, as the NATS server checks it."""
    created_at: str
    user_id: str | None = None
    role: str | None = None
    tier: str | None = None

    @property
    def scope(self) -> Scope:
        return Scope(self.tenant, self.name)


@dataclass(frozen=True)
class Made:
    """A new identity and its secret: the only time the secret is known outside the caller."""

    identity: Identity
    secret: str

    @property
    def bearer(self) -> str:
        """Its bearer token for MCP over HTTP."""
        return f"{self.identity.scope.user}:{self.secret}"

    def nats_url(self, url: str) -> str:
        """``url`` with its NATS credentials."""
        return login_url(url, self.identity.scope.user, self.secret)


def load(home: Path) -> dict[str, Identity]:
    """Every identity, by NATS user."""
    try:
        rows = json.loads((home / IDENTITIES_FILE).read_text())
    except FileNotFoundError:
        return {}
    return {user: Identity(**row) for user, row in rows.items()}


def admitted(home: Path) -> list[tuple[Scope, str]]:
    """What the NATS server admits besides its built-in users: each identity's scope and hash."""
    return [(i.scope, i.secret_hash) for i in load(home).values()]


@contextmanager
def _editing(home: Path) -> Iterator[dict[str, Identity]]:
    """The identities, held against concurrent edits, written back (and the NATS server reloaded) after."""
    home.mkdir(parents=True, exist_ok=True)
    with (home / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        identities = load(home)
        yield identities
        write_private(home / IDENTITIES_FILE, json.dumps({u: asdict(i) for u, i in identities.items()}, indent=2))
        reload_nats(home / "nats", [(i.scope, i.secret_hash) for i in identities.values()])


BCRYPT_MAX_BYTES = 72
"""The longest secret bcrypt reads; a longer one is no identity's (theirs are 43 characters)."""


@cache
def _unknown_hash() -> str:
    """A hash no secret matches, of an identity's cost: a name that is no identity's takes as long to refuse as a
    wrong secret, so the time of a refusal does not tell which names are identities."""
    return bcrypt.hashpw(secrets.token_bytes(32), bcrypt.gensalt(BCRYPT_ROUNDS)).decode()


def create(
    home: Path, tenant: str, name: str, *, user_id: str | None = None, role: str | None = None, tier: str | None = None
) -> Made:
    """A new identity of ``tenant``; ``IdentityError`` when the names are not single subject tokens or taken."""
    try:
        scope = tenant_scope(tenant, name)
    except ValueError as error:
        raise IdentityError(str(error)) from None
    secret = secrets.token_urlsafe(32)
    identity = Identity(
        tenant,
        name,
        bcrypt.hashpw(secret.encode(), bcrypt.gensalt(BCRYPT_ROUNDS)).decode(),
        datetime.now(UTC).isoformat(timespec="seconds"),
        user_id,
        role,
        tier,
    )
    with _editing(home) as identities:
        if scope.user in identities or scope.user in NATS_USERS:
            raise IdentityError(f"{tenant}/{name} exists: revoke it first, or choose another name")
        identities[scope.user] = identity
    return Made(identity, secret)


def revoke(home: Path, tenant: str, name: str) -> Identity:
    """Remove an identity: the NATS server closes its connections and admits it no more, and its bearer token
    is refused from then on."""
    with _editing(home) as identities:
        gone = identities.pop(Scope(tenant, name).user, None)
        if gone is None:
            raise IdentityError(f"no identity {tenant}/{name}")
    return gone


class Verifier:
    """Checks bearer tokens against the identities in ``home``. A token verified once is remembered (by its
    SHA-256), so bcrypt's cost is paid once per token: ``remembered`` answers without it, on the event loop. When
    the file changes a remembered token stays only while its identity is unchanged there, so a revocation takes
    effect on the next request and making another identity sends no one's token back to bcrypt. Safe to call from
    several threads."""

    def __init__(self, home: Path):
        self.path = home / IDENTITIES_FILE
        self.home = home
        self._lock = threading.Lock()
        self._version: float | None = None
        self._identities: dict[str, Identity] = {}
        self._seen: dict[str, Identity] = {}

    def remembered(self, token: str) -> Identity | None:
        """The identity of a token verified before and still valid, without bcrypt; None for any other."""
        self._current()
        return self._seen.get(_digest(token))

    def verify(self, token: str) -> Identity | None:
        """The token's identity: remembered, else checked with bcrypt (a wrong secret takes as long to refuse for
        any name); None for a wrong, malformed or revoked token."""
        identities = self._current()
        digest = _digest(token)
        known = self._seen.get(digest)
        if known is not None:
            return known
        user, _, secret = token.partition(":")
        identity = identities.get(user)
        given = secret.encode()
        if not 0 < len(given) <= BCRYPT_MAX_BYTES:  # bcrypt reads 72 bytes, and refuses more
            return None
        stored = identity.secret_hash if identity is not None else _unknown_hash()
        if not bcrypt.checkpw(given, stored.encode()) or identity is None:
            return None
        with self._lock:
            if self._read_if_changed().get(user) != identity:  # revoked (or made anew) during the check
                return None
            self._seen[digest] = identity
        return identity

    def _current(self) -> dict[str, Identity]:
        with self._lock:
            return self._read_if_changed()

    def _read_if_changed(self) -> dict[str, Identity]:
        """The identities, read again when the file changed (its mtime), forgetting then the remembered tokens of
        identities it no longer holds as they were. The caller holds the lock."""
        version = self.path.stat().st_mtime if self.path.exists() else None
        if version != self._version:
            self._identities = load(self.home)
            self._seen = {d: i for d, i in self._seen.items() if self._identities.get(i.scope.user) == i}
            self._version = version
        return self._identities


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
