"""A service that refuses to start (the store's vectors are another model's, its model cannot be loaded) says why
in one line of its log, the fix in it, rather than in a traceback; an unexpected error is a plain traceback, not a
box of source cut to a terminal's width."""

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from faststream import FastStream

from toolsel.cli import services
from toolsel.cli.running import FAILED
from toolsel.embedder import ModelUnavailable
from toolsel.embedding_space import ModelMismatch
from toolsel.settings import Settings


def _refusing(refusal: Exception) -> Callable[[Settings], FastStream]:
    """A service app that refuses to start as a real one does: its ``run`` raises."""

    class Refusing:
        async def run(self) -> None:
            raise refusal

    def create_app(settings: Settings) -> FastStream:
        return Refusing()  # type: ignore[return-value]

    return create_app


@pytest.mark.parametrize(
    "refusal",
    [
        ModelMismatch("the stored vectors come from a/b: run `toolsel indexer --switch-model`"),
        ModelUnavailable(
            "a/b is not in the model cache and downloads are off (HF_HUB_OFFLINE=1): set TOOLSEL_MODEL_DIR"
        ),
    ],
)
def test_a_service_that_refuses_to_start_says_why_in_one_line(
    refusal: Exception, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # serve sets it: restored after the test
    monkeypatch.setattr(services, "service_settings", lambda current, service: Settings(home=tmp_path))
    with pytest.raises(typer.Exit) as exited:
        services.serve(_refusing(refusal), "indexer")
    assert exited.value.exit_code == FAILED
    assert capsys.readouterr().err.strip() == f"error: the indexer refuses to start: {refusal}"


def test_an_unexpected_error_in_a_service_process_is_a_plain_traceback() -> None:
    """``toolsel up`` runs each service as ``python -m toolsel.cli.services``, outside ``toolsel``'s own entry."""
    broken = (
        "from toolsel.cli.services import app\n"
        "@app.command()\n"
        "def broken() -> None:\n"
        "    raise RuntimeError('unexpected')\n"
        "app(['broken'])\n"
    )
    done = subprocess.run([sys.executable, "-c", broken], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):"), done.stderr
    assert done.stderr.strip().endswith("RuntimeError: unexpected")
    assert "╭" not in done.stderr
