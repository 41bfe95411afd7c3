"""A bearer token is checked without error whatever it holds: bcrypt reads 72 bytes of a secret and refuses more."""

from pathlib import Path

from toolsel import identities


def test_a_token_with_any_secret_is_answered_yes_or_no(tmp_path: Path) -> None:
    made = identities.create(tmp_path, "acme", "agent")
    verifier = identities.Verifier(tmp_path)
    user = made.bearer.partition(":")[0]
    assert verifier.verify(made.bearer) is not None
    for secret in ("x" * 80, "é" * 40, "", "wrong", made.bearer.partition(":")[2] + "x" * 40):
        assert verifier.verify(f"{user}:{secret}") is None, secret[:10]
    assert verifier.verify("nobody.agent:" + "x" * 43) is None  # no such identity
