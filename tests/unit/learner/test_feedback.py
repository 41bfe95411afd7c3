"""What feedback changes in a tool's ratings (pure): new ratings added, dropped ones taken out, and a rating added
and dropped at once (a copy delivered again of one dropped before) nothing."""

from uuid import uuid4

from toolsel.services.learner.feedback import rating_changes


def test_new_ratings_are_added_and_dropped_ones_taken_out_per_tool_and_tenant() -> None:
    new, again, old, elsewhere = uuid4(), uuid4(), uuid4(), uuid4()
    added = {new: (1, "acme", 1.0), again: (1, "acme", 0.5), elsewhere: (2, "globex", 0.25)}
    dropped = {again: (1, "acme", 0.5), old: (1, "acme", 0.75)}
    assert rating_changes(added, dropped) == {(1, "acme"): (0.25, 0), (2, "globex"): (0.25, 1)}
    assert rating_changes({again: (1, "acme", 0.5)}, {again: (1, "acme", 0.5)}) == {}
