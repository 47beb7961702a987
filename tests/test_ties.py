"""The rule of tests/ties.py says no where two computations differ by more than rounding."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from ties import assert_first_difference_is_rounding, assert_same_choice, first_difference  # noqa: E402

SCORES = torch.tensor([0.5, 0.25, 0.125])


def test_choices_part_at_their_first_different_round():
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3, 0], [1, 2, 0, 0]) == 2


def test_a_first_difference_of_a_few_ulps_is_rounding():
    ulps = SCORES + torch.tensor([0.0, 3e-8, 0.0])
    assert_first_difference_is_rounding([(0, SCORES, SCORES), (1, ulps, SCORES), (2, SCORES + 0.3, SCORES)])


@pytest.mark.parametrize("difference", [1e-3, 1e-1])
def test_a_first_difference_above_rounding_is_a_logical_difference(difference):
    with pytest.raises(AssertionError, match="above rounding"):
        assert_first_difference_is_rounding([(0, SCORES, SCORES), (1, SCORES + difference, SCORES)])


def test_choices_that_part_on_equal_scores_are_refused():
    with pytest.raises(AssertionError, match="scores were equal"):
        assert_first_difference_is_rounding([(0, SCORES, SCORES), (1, SCORES, SCORES)])


def test_another_choice_is_allowed_on_a_near_tie_only():
    assert_same_choice(0, 0, SCORES)
    assert_same_choice(1, 0, torch.tensor([0.5, 0.5 - 3e-8, 0.125]))  # the top two a few ulps apart
    with pytest.raises(AssertionError, match="top two scores are 2.5e-01 apart"):
        assert_same_choice(1, 0, SCORES)
