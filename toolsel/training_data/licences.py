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
