"""``--help`` reads as prose: a paragraph wraps at the terminal's edge, not where its source line ends; it speaks of
what a user knows (no seed numbers); every option says what it takes and its default."""

import os
import re
import subprocess

from toolsel.stack import TOOLSEL_COMMAND


def _help(*args: str) -> str:
    env = os.environ | {"COLUMNS": "200"}
    done = subprocess.run([*TOOLSEL_COMMAND, *args, "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _prose(text: str) -> str:
    """The help's words in order, the box drawing and the wrapping gone."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_the_command_list_wraps_at_the_edge_not_mid_sentence() -> None:
    text = _help()
    up = next(line for line in text.splitlines() if "│ up " in line)
    assert "restarting any service or embedded server" in up  # the docstring's source line ends after "or"
    assert not re.search(r"seed \d", text)


def test_select_names_the_default_k_and_what_tier_is() -> None:
    text = _prose(_help("select"))
    assert "the selector's TOOLSEL_DEFAULT_K, 7" in text
    assert "--tier <str> the user's plan" in text
