import pytest

from toolsel.evaluation.calibration import calibration


def test_a_perfectly_calibrated_model_has_no_error() -> None:
    got = calibration([0.25] * 4 + [0.75] * 4, [True, False, False, False, True, True, True, False])
    assert got["ece"] == pytest.approx(0.0)
    assert [(b["n"], b["relevant"]) for b in got["bins"]] == [(4, 0.25), (4, 0.75)]


def test_ece_weighs_each_bins_gap_by_its_share() -> None:
    got = calibration([0.9, 0.9, 0.1, 1.0], [False, False, False, True])
    # bin 0.9-1.0: mean 0.933, rate 1/3 (3 of 4 tools); bin 0.1-0.2: mean 0.1, rate 0 (1 of 4)
    assert got["ece"] == pytest.approx(0.75 * (2.8 / 3 - 1 / 3) + 0.25 * 0.1)


def test_lengths_must_agree() -> None:
    with pytest.raises(ValueError, match="one label"):
        calibration([0.5], [])
