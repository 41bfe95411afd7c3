"""Naming a source's licence by its SPDX identifier."""

from toolsel.training_data.licences import NO_ASSERTION, evaluation_set_origin, spdx_id

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


def test_evaluation_set_origin_is_read_from_its_source_notes() -> None:
    notes = """# a set
- Repository: https://github.com/HowieHwong/MetaTool (snapshot commit `35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb`,
  2024-03-22).
- License: MIT (LICENSE in the snapshot).
"""
    assert evaluation_set_origin(notes) == {
        "repository": "https://github.com/HowieHwong/MetaTool",
        "commit": "35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb",
        "licence": "MIT",
        "licence_statement": "MIT (LICENSE in the snapshot).",
    }


def test_a_licence_heading_is_read_from_its_first_line() -> None:
    notes = "## License\n- StableToolBench repository: Apache License 2.0 (LICENSE file).\n- More.\n"
    origin = evaluation_set_origin(notes)
    assert origin["licence"] == "Apache-2.0"
    assert origin["licence_statement"] == "StableToolBench repository: Apache License 2.0 (LICENSE file)."
    assert "repository" not in origin


def test_an_unrecognised_statement_is_no_assertion() -> None:
    assert evaluation_set_origin("- License: see the paper")["licence"] == NO_ASSERTION
    assert evaluation_set_origin("no notes") == {}
