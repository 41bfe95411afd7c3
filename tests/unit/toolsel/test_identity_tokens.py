"""A bearer token is checked without error whatever it holds: bcrypt reads 72 bytes of a secret and refuses more.
One verified is remembered, and answered without bcrypt, for as long as its identity is unchanged."""

from pathlib import Path

import bcrypt
import pytest

from toolsel import identities


def test_a_token_with_any_secret_is_answered_yes_or_no(tmp_path: Path) -> None:
    made = identities.create(tmp_path, "acme", "agent")
    verifier = identities.Verifier(tmp_path)
    user = made.bearer.partition(":")[0]
    assert verifier.verify(made.bearer) is not None
    for secret in ("x" * 80, "é" * 40, "", "wrong", made.bearer.partition(":")[2] + "x" * 40):
        assert verifier.verify(f"{user}:{secret}") is None, secret[:10]
    assert verifier.verify("nobody.agent:" + "x" * 43) is None  # no such identity


def counting_checks(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The secrets bcrypt is asked to check from now on."""
    checked: list[bytes] = []
    real = bcrypt.checkpw

    def counted(given: bytes, stored: bytes) -> bool:
        checked.append(given)
        return real(given, stored)

    monkeypatch.setattr(bcrypt, "checkpw", counted)
    return checked


def test_a_verified_token_is_remembered_without_bcrypt_until_its_identity_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Making another identity rewrites the file, and sent every token back to bcrypt, behind any wrong ones."""
    made = identities.create(tmp_path, "acme", "agent")
    verifier = identities.Verifier(tmp_path)
    assert verifier.remembered(made.bearer) is None
    assert verifier.verify(made.bearer) == made.identity
    checked = counting_checks(monkeypatch)
    identities.create(tmp_path, "acme", "other")
    assert verifier.remembered(made.bearer) == made.identity
    assert verifier.verify(made.bearer) == made.identity
    assert checked == []
    identities.revoke(tmp_path, "acme", "agent")
    assert verifier.remembered(made.bearer) is None
    assert verifier.verify(made.bearer) is None
    again = identities.create(tmp_path, "acme", "agent")  # the same name, a new secret
    assert verifier.verify(made.bearer) is None
    assert verifier.remembered(again.bearer) is None


def test_a_token_whose_identity_is_revoked_during_its_check_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Else it would be remembered, and served, after its revocation."""
    made = identities.create(tmp_path, "acme", "agent")
    verifier = identities.Verifier(tmp_path)
    real = bcrypt.checkpw

    def revoked_meanwhile(given: bytes, stored: bytes) -> bool:
        identities.revoke(tmp_path, "acme", "agent")
        return real(given, stored)

    monkeypatch.setattr(bcrypt, "checkpw", revoked_meanwhile)
    assert verifier.verify(made.bearer) is None
    assert verifier.remembered(made.bearer) is None
