"""Who sent a message: the scope that NATS permissions tie to a connection, read from the subject it arrived on.

A tenant's identity is a NATS user named ``<tenant>.<name>``; it may publish only under its scope
``t.<tenant>.<name>`` and read replies only under its inbox prefix ``_INBOX.t.<tenant>.<name>``. The operator
(scope ``op``) acts for every tenant. Tenant and name are single subject tokens, so neither holds a dot or a
wildcard.
"""

import re
from dataclasses import dataclass
from typing import Final

from toolsel.contracts import subjects

NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A tenant or identity name that is one subject token."""
INBOX: Final = "_INBOX"
"""Where replies come back by default (services, the operator)."""


@dataclass(frozen=True)
class Scope:
    """A sender: a tenant's identity, or the operator (``tenant is None``)."""

    tenant: str | None = None
    name: str | None = None

    @property
    def operator(self) -> bool:
        return self.tenant is None

    @property
    def token(self) -> str:
        """The subject tokens after a root: ``op`` or ``t.<tenant>.<name>``."""
        return subjects.OPERATOR_SCOPE if self.tenant is None else f"{subjects.TENANT_SCOPE}.{self.tenant}.{self.name}"

    @property
    def user(self) -> str:
        """The NATS user of a tenant's identity."""
        return f"{self.tenant}.{self.name}"

    @property
    def inbox_prefix(self) -> str:
        """Its replies' prefix: only this identity (and the operator) may subscribe under it."""
        return INBOX if self.tenant is None else f"{INBOX}.{self.token}"

    def owns(self, owner: str) -> bool:
        """Whether this sender may speak about what ``owner`` (a ``token``) made: its own, or any as operator."""
        return self.operator or owner == self.token


OPERATOR: Final = Scope()


def tenant_scope(tenant: str, name: str) -> Scope:
    """A tenant's identity; ``ValueError`` unless both are single subject tokens."""
    for what, value in (("tenant", tenant), ("name", name)):
        if not NAME.fullmatch(value):
            raise ValueError(f"{what} {value!r}: use letters, digits, '-' and '_' (at most 64, no dots)")
    return Scope(tenant, name)


def parse_scope(token: str | None) -> Scope | None:
    """The sender of a scope ``token`` (what ``subjects.scope_of`` read), or None when it names none."""
    if token == subjects.OPERATOR_SCOPE:
        return OPERATOR
    parts = (token or "").split(".")
    if len(parts) == 3 and parts[0] == subjects.TENANT_SCOPE and all(NAME.fullmatch(p) for p in parts[1:]):
        return Scope(parts[1], parts[2])
    return None


def scope_of_user(user: str | None) -> Scope:
    """The scope a NATS user sends under: ``<tenant>.<name>`` is that tenant's identity, any other user (the
    operator, a service, a URL without credentials) sends as the operator, and NATS refuses what it may not."""
    tenant, dot, name = (user or "").partition(".")
    if dot and NAME.fullmatch(tenant) and NAME.fullmatch(name):
        return Scope(tenant, name)
    return OPERATOR
