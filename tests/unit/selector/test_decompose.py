"""Query decomposition: a compound request's atomic needs, found in one pass however its spaces run."""

import json
import subprocess
import sys

import pytest

from toolsel.services.selector.decompose import decompose


@pytest.mark.parametrize(
    ("query", "parts"),
    [
        ("download the video, transcode it and email it", ["download the video", "transcode it", "email it"]),
        ("find flights to Rome then book a hotel", ["find flights to Rome", "book a hotel"]),
        ("check the weather; call a taxi", ["check the weather", "call a taxi"]),
        ("buy salt and pepper", ["buy salt and pepper"]),
        ("send an email", ["send an email"]),
        (
            "download a picture of a dog, transcode it, and email it",
            ["download a picture of a dog", "transcode it", "email it"],
        ),
        ("deploy to AWS and notify Slack", ["deploy to AWS", "notify Slack"]),
        ("translate the text and then send it", ["translate the text", "send it"]),
        ("fetch the report, after that email it to Bob", ["fetch the report", "email it to Bob"]),
        ("find a durable and waterproof tracker", ["find a durable and waterproof tracker"]),
        (
            "search for news and weather reports in a city I am visiting next month",
            ["search for news and weather reports in a city I am visiting next month"],
        ),
        (  # asks in two sentences: those are the needs; the scene it sets stays with the whole query
            "I'm planning a golf trip. Can you list the top players of 2022? I'm also curious about their scorecards.",
            ["Can you list the top players of 2022?", "I'm also curious about their scorecards."],
        ),
        (  # a sentence that adds a request makes the one before it a request too
            "Fetch the statistics on media sources. Additionally, show the top startup news. Thank you!",
            ["Fetch the statistics on media sources.", "Additionally, show the top startup news."],
        ),
        (  # steps: each is a need (and so, as before an added request, the sentence before the first)
            "I need help with our databases. First, retrieve order PO123. Next, delete survey S7. Finally, list users.",
            [
                "I need help with our databases.",
                "First, retrieve order PO123.",
                "Next, delete survey S7.",
                "Finally, list users.",
            ],
        ),
        (  # a numbered list, one item per line
            "Please do the following:\n1. Fetch the device info.\n2. Check its warranty.",
            ["Please do the following:", "1. Fetch the device info.", "2. Check its warranty."],
        ),
        (  # a number that starts a sentence is no list item
            "Book a table for tonight. 3.5 stars at least, please.",
            ["Book a table for tonight. 3.5 stars at least, please."],
        ),
        (  # one request and its details: one need
            "Create a leadership program in Tokyo. The program should have a limit of 15 participants.",
            ["Create a leadership program in Tokyo. The program should have a limit of 15 participants."],
        ),
        (  # one question among sentences: the other rules decide
            "I love cooking. Can you find a recipe, convert its units, and email it?",
            ["I love cooking. Can you find a recipe, convert its units, and email it?"],
        ),
    ],
)
def test_decompose(query: str, parts: list[str]) -> None:
    assert decompose(query) == parts


@pytest.mark.parametrize("gap", [" " * 1990, ", " * 995, " \t" * 995, " and" + " " * 1986])
def test_a_long_run_of_spaces_is_split_in_one_pass(gap: str) -> None:
    """A valid query of 2,000 characters, mostly spaces: the separators' backtracking through every split of
    the run held the selector's event loop for about 40 s. In a process of its own, since a regular expression
    holds the interpreter until it ends: a hang fails the test at the timeout (the fixed patterns take about a
    millisecond)."""
    query = f"send{gap}email"
    code = "import json, sys; from toolsel.services.selector.decompose import decompose; "
    code += "print(json.dumps(decompose(sys.stdin.read())))"
    ran = subprocess.run([sys.executable, "-c", code], input=query, capture_output=True, text=True, timeout=20)
    assert json.loads(ran.stdout) == [query], ran.stderr  # no need of two words or more on either side: one need
