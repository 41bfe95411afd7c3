"""Query decomposition: a compound request split into its atomic needs, and a request's sentences."""

import re

PART_MIN_WORDS = 2
"""Words each part has at least, else the request stays whole: a one-word piece ("pepper" of "salt and pepper")
is no need of its own."""
PART_MAX_WORDS = 6
"""Words a listed or chained clause has at most: a longer one is a sentence, not a short step, and is not split at
its commas or "and"."""
PARTS_MAX = 4
"""Parts kept at most, the first ones: each is retrieved on its own, a ranking more per part."""

_RUN_START = r"(?:(?<!\s)|(?!\s))"
"""Not inside a run of spaces: a separator that may begin with spaces is tried where the run begins, and the run is
taken whole (possessive quantifiers), so a query of 2,000 spaces between two words costs one pass, not the
engine's backtracking through every split of the run at every place in it (about 40 s, the selector's event
loop held)."""
_SEQUENCE = re.compile(
    _RUN_START + r"\s*+(?:;|,?\s*+\b(?:and then|after that|afterwards|and finally|then)\b,?)\s*+", re.IGNORECASE
)
_LIST = re.compile(_RUN_START + r"\s*+(?:,\s*+(?:and\s++)?|\band\b)\s*+", re.IGNORECASE)
_AND = re.compile(_RUN_START + r"\s++and\s++", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.?!])\s+(?=[A-Z0-9])")
_NUMBERED = r"\d+[.)]\s"
"""A list item's number: "2. ", "3) "."""
_LIST_ITEM = re.compile(r"\s*" + _NUMBERED)
_ADDED_REQUEST = re.compile(
    r"^(?:(?:(?:[\w']+\s+){0,2}also|additionally|furthermore|moreover|besides|plus|in addition"
    r"|first(?:ly)?|second(?:ly)?|third(?:ly)?|next|then|finally|lastly|after that|afterwards)\b|" + _NUMBERED + ")",
    re.IGNORECASE,
)
"""A sentence that adds a request or a step to the ones before: "Also, ...", "I'm also curious ...",
"Additionally, ...", "Next, ...", "Finally, ...", "2. ..."."""
ACTION_VERBS = frozenset(
    [
        "add",
        "analyse",
        "analyze",
        "archive",
        "book",
        "build",
        "buy",
        "calculate",
        "call",
        "cancel",
        "check",
        "clone",
        "compress",
        "convert",
        "copy",
        "create",
        "crop",
        "deploy",
        "delete",
        "download",
        "draft",
        "edit",
        "email",
        "encrypt",
        "export",
        "extract",
        "fetch",
        "file",
        "find",
        "forward",
        "generate",
        "get",
        "install",
        "invite",
        "list",
        "load",
        "log",
        "look",
        "make",
        "merge",
        "message",
        "monitor",
        "move",
        "notify",
        "open",
        "order",
        "pay",
        "ping",
        "play",
        "post",
        "print",
        "publish",
        "pull",
        "push",
        "read",
        "record",
        "remind",
        "rename",
        "reply",
        "report",
        "reserve",
        "resize",
        "restart",
        "revert",
        "run",
        "save",
        "scan",
        "schedule",
        "search",
        "send",
        "set",
        "share",
        "shorten",
        "sign",
        "start",
        "stop",
        "store",
        "summarise",
        "summarize",
        "sync",
        "tag",
        "text",
        "track",
        "transcode",
        "transcribe",
        "translate",
        "tweet",
        "update",
        "upload",
        "validate",
        "verify",
        "watch",
        "write",
    ]
)
"""Imperative verbs that start a step: "deploy to AWS and notify Slack" is two requests, "a durable and
waterproof tracker" one."""


def decompose(query: str) -> list[str]:
    """Split a compound request into its atomic needs (seed 002). A request of several sentences that asks in
    two or more of them is split into those (``asking_sentences``). Otherwise: always at sequence markers
    ("then", "and then", "after that", ";"); at commas and "and" in a list of three or more short clauses of
    ``PART_MIN_WORDS``..``PART_MAX_WORDS`` words ("download X, transcode it, and email it"); and at one "and"
    between two short clauses that each start with an action verb ("deploy to AWS and notify Slack"). "Salt and
    pepper", "a durable and waterproof tracker" or a long sentence stays whole."""
    if len(asked := asking_sentences(query)) >= 2:
        return asked[:PARTS_MAX]
    parts: list[str] = []
    for step in (p.strip(" ,") for p in _SEQUENCE.split(query.strip())):
        if not step:
            continue
        pieces = [p.strip() for p in _LIST.split(step) if p.strip()]
        short = all(PART_MIN_WORDS <= len(p.split()) <= PART_MAX_WORDS for p in pieces)
        if len(pieces) >= 3 and short and len(step.split()) <= 3 * PART_MAX_WORDS:
            parts.extend(pieces)
        elif _chained_actions(step):
            parts.extend(_AND.split(step))
        else:
            parts.append(step)
    if len(parts) < 2 or any(len(p.split()) < PART_MIN_WORDS for p in parts):
        return [query]
    return parts[:PARTS_MAX]


def asking_sentences(query: str) -> list[str]:
    """The sentences (or lines) of a request that ask for something: a question, one that adds a request or a
    step ("Additionally, ...", "I'm also curious ...", "Next, ...", "2. ..."), and the one such an addition
    follows. A sentence that sets the scene ("I'm planning a trip to Rome.") or details the request before it is
    no need of its own: the whole query, which is retrieved too, keeps it."""
    sentences = split_sentences(query)
    adds = [_ADDED_REQUEST.match(s) is not None for s in sentences]
    return [s for i, s in enumerate(sentences) if s.endswith("?") or adds[i] or (i + 1 < len(adds) and adds[i + 1])]


def split_sentences(query: str) -> list[str]:
    """The request's sentences, line by line (a list item's number stays with its first sentence)."""
    return [s for line in query.splitlines() for s in _line_sentences(line)]


def _line_sentences(line: str) -> list[str]:
    """A line's sentences; a list item's number ("2. ") stays with its first sentence."""
    number = _LIST_ITEM.match(line)
    head = number.group(0).strip() + " " if number else ""
    pieces = [p.strip() for p in _SENTENCE.split(line[number.end() if number else 0 :]) if p.strip()]
    return [head + pieces[0], *pieces[1:]] if pieces else []


def _chained_actions(step: str) -> bool:
    """Two short clauses joined by one "and", each led by an action verb."""
    pieces = _AND.split(step)
    return len(pieces) == 2 and all(
        PART_MIN_WORDS <= len(p.split()) <= PART_MAX_WORDS and p.split()[0].lower() in ACTION_VERBS for p in pieces
    )
