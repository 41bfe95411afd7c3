"""The SPDX identifier of a repository's licence file, for the licences the training sources carry."""

import re

PERMISSIVE = ("Apache-2.0", "MIT")
"""Licences under which a model trained on the data can ship under any licence (with the notices kept)."""
NO_ASSERTION = "NOASSERTION"
"""SPDX's word for "no licence could be determined" (a repository without a licence file, or one not known)."""

_KNOWN = (
    ("Apache-2.0", re.compile(r"Apache License,?\s+Version 2\.0", re.IGNORECASE)),
    ("CC-BY-SA-4.0", re.compile(r"Attribution-ShareAlike 4\.0 International", re.IGNORECASE)),
    ("MIT", re.compile(r"Permission is hereby granted, free of charge, to any person obtaining a copy", re.IGNORECASE)),
)


def spdx_id(licence_text: str | None) -> str:
    """``Apache-2.0``, ``CC-BY-SA-4.0`` or ``MIT`` from the text of the licence, else ``NOASSERTION``."""
    if licence_text is None:
        return NO_ASSERTION
    flat = " ".join(licence_text.split())
    return next((spdx for spdx, pattern in _KNOWN if pattern.search(flat)), NO_ASSERTION)


_STATED = (
    ("Apache-2.0", re.compile(r"Apache(?: License)?[ ,-]*(?:Version )?2\.0", re.IGNORECASE)),
    ("MIT", re.compile(r"\bMIT\b")),
)
_REPOSITORY = re.compile(r"Repository:\s*(?P<url>https://github\.com/[\w.-]+/[\w.-]+)")
_COMMIT = re.compile(r"commit\s+`(?P<sha>[0-9a-f]{40})`")
_LICENCE_HEAD = re.compile(r"^(?:#+|-)\s*licen[cs]e\b:?[ \t]*(?P<rest>.*)$", re.IGNORECASE | re.MULTILINE)
"""``- License: MIT (…)``, or a ``## License`` heading whose first line says it."""


def evaluation_set_origin(source_md: str) -> dict[str, str]:
    """Where an evaluation set came from, read from its SOURCE.md: ``repository``, ``commit`` and ``licence``
    (the SPDX identifier of the first licence statement, with the statement itself), each when stated."""
    origin: dict[str, str] = {}
    if repository := _REPOSITORY.search(source_md):
        origin["repository"] = repository["url"]
    if commit := _COMMIT.search(source_md):
        origin["commit"] = commit["sha"]
    if head := _LICENCE_HEAD.search(source_md):
        following = (line.strip(" -*") for line in source_md[head.end() :].splitlines())
        statement = head["rest"].strip() or next((line for line in following if line), "")
        origin["licence"] = next((spdx for spdx, p in _STATED if p.search(statement)), NO_ASSERTION)
        origin["licence_statement"] = statement
    return origin
