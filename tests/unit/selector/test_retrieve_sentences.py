"""Which sentences of a query the model reads apart, and how many at most."""

from toolsel.services.selector.pipeline.retrieve import sentences_of
from toolsel.settings import Settings


def test_a_query_of_many_sentences_reads_its_first_ones_apart_at_most() -> None:
    """Each sentence is a product with every tool's vector: a query of hundreds of one-word sentences cost ten times
    a select, with every tenant's selects waiting behind it."""
    many = " ".join(f"Step {i} done." for i in range(300))
    assert sentences_of(Settings(), many) == [f"Step {i} done." for i in range(16)]
    assert len(sentences_of(Settings(sentence_vectors_max=4), many)) == 4
    assert sentences_of(Settings(), "Book a flight to Oslo.") == []  # one sentence: the query itself
    assert sentences_of(Settings(sentence_vectors=False), many) == []
