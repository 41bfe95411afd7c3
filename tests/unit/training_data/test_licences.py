"""Naming a source's licence by its SPDX identifier."""

from toolsel.training_data.licences import NO_ASSERTION, spdx_id

APACHE = """
                                 Apache License
                           Version 2.0, January 2004
                        http://www.apache.org/licenses/
"""
MIT = """MIT License

Copyright (c) 2023 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
"""


def test_known_licences_are_named() -> None:
    assert spdx_id(APACHE) == "Apache-2.0"
    assert spdx_id(MIT) == "MIT"
    assert spdx_id("Attribution-ShareAlike 4.0 International\n\n=====") == "CC-BY-SA-4.0"
    assert spdx_id("Licensed under the Apache License, Version 2.0 (the 'License')") == "Apache-2.0"


def test_no_file_or_an_unknown_text_is_no_assertion() -> None:
    assert spdx_id(None) == NO_ASSERTION
    assert spdx_id("All rights reserved.") == NO_ASSERTION
    assert spdx_id("Apache License Version 1.1") == NO_ASSERTION
