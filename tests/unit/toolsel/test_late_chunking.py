"""A compound request's parts read from the whole request's token vectors: where each part lies, the pooling over
its tokens, and the real model's vectors through the embedder."""

from pathlib import Path

import numpy as np
import pytest

from toolsel.embedder import Embedder, load_embedder
from toolsel.late_chunking import part_spans, span_means

QUERY = "Download a picture of a dog, then transcode it, and then email it to Bob."
PARTS = ["Download a picture of a dog", "transcode it", "email it to Bob."]


def test_parts_are_found_in_order_and_a_repeated_part_is_its_next_occurrence() -> None:
    assert part_spans("send it, then send it", ["send it", "send it"]) == [(0, 7), (14, 21)]
    assert part_spans(QUERY, PARTS) == [(0, 27), (34, 46), (57, 73)]
    assert part_spans("abc", ["x", "", "c"]) == [None, None, (2, 3)]


def test_a_part_written_before_the_one_before_it_is_still_found() -> None:
    assert part_spans("b then a", ["a", "b"]) == [(7, 8), (0, 1)]


def test_a_span_is_the_unit_mean_of_the_tokens_wholly_within_it_special_tokens_left_out() -> None:
    states = np.array([[9, 9], [1, 0], [0, 1], [0, 3], [9, 9]], dtype=np.float32)
    offsets = [(0, 0), (0, 4), (5, 8), (9, 12), (0, 0)]  # [CLS] word word word [SEP]
    first, both, none = span_means(states, offsets, [(0, 4), (5, 12), (4, 5)])
    assert first is not None
    assert both is not None
    assert first.tolist() == pytest.approx([1.0, 0.0])
    assert both.tolist() == pytest.approx([0.0, 1.0])  # (0, 2) normalised
    assert none is None  # no token lies within it
    assert span_means(states, offsets, [None]) == [None]


def test_a_span_the_models_length_cut_off_is_left_to_be_embedded_alone() -> None:
    states = np.ones((3, 2), dtype=np.float32)
    offsets = [(0, 0), (0, 4), (0, 0)]  # the request was longer: its tokens stop at character 4
    assert span_means(states, offsets, [(0, 4), (0, 9), (5, 9)])[1:] == [None, None]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    home: Path = tmp_path_factory.mktemp("home")
    return load_embedder(None, home, threads=1, workers=1, batch_size=8, batch_tokens=512, cache_size=16)


def test_the_real_model_reads_a_requests_parts_in_its_context(model: Embedder) -> None:
    whole, *parts = model.embed_request(QUERY, PARTS)
    alone = model.embed([QUERY, *PARTS])
    assert float(whole @ alone[0]) == pytest.approx(1.0, abs=1e-5)  # the whole request: the model's own vector
    for pooled, single in zip(parts, alone[1:], strict=True):
        assert float(np.linalg.norm(pooled)) == pytest.approx(1.0, abs=1e-5)
        assert 0.6 < float(pooled @ single) < 0.999  # near the part's own vector, yet read in context
    assert float(parts[0] @ parts[1]) < 0.95  # the parts stay apart


def test_a_part_the_request_does_not_contain_is_embedded_alone(model: Embedder) -> None:
    vectors = model.embed_request(QUERY, ["book a flight to Oslo", "transcode it"])
    alone = model.embed(["book a flight to Oslo", "transcode it"])
    assert float(vectors[1] @ alone[0]) == pytest.approx(1.0, abs=1e-5)
    assert float(vectors[2] @ alone[1]) < 0.999
    assert model.cached(QUERY, ["book a flight to Oslo", "transcode it"])
