"""``trainers.core.padding``: left- and right-padded token batches and their masks."""

import doctest

import torch

from trainers.core import padding
from trainers.core.padding import left_pad, pad_responses, right_pad


def test_the_padding_doctests_pass():
    assert doctest.testmod(padding, raise_on_error=False).failed == 0


def test_left_padding_ends_every_row_in_the_last_column_and_keeps_a_long_rows_end():
    ids, mask = left_pad([[4, 5, 6, 7, 8], [9], []], 3, pad_id=1)
    assert ids.tolist() == [[6, 7, 8], [1, 1, 9], [1, 1, 1]] and mask.tolist() == [[1, 1, 1], [0, 0, 1], [0, 0, 0]]
    assert ids.dtype == mask.dtype == torch.long
    assert left_pad([[4, 5]], 0, pad_id=1)[0].shape == (1, 0)


def test_right_padding_starts_every_row_in_column_0_and_is_as_wide_as_the_longest():
    ids, mask = right_pad([[4], [5, 6, 7], []], pad_id=2)
    assert ids.tolist() == [[4, 2, 2], [5, 6, 7], [2, 2, 2]] and mask.tolist() == [[1, 0, 0], [1, 1, 1], [0, 0, 0]]
    assert right_pad([], pad_id=2)[0].shape == (0, 1)


def test_the_response_mask_covers_each_rows_tokens_from_its_start_and_no_padding():
    ids, mask, response = pad_responses([([3, 4, 5, 6], 2), ([3, 7], 1), ([8], 0)], pad_id=0)
    assert ids.tolist() == [[3, 4, 5, 6], [3, 7, 0, 0], [8, 0, 0, 0]]
    assert response.tolist() == [[False, False, True, True], [False, True, False, False], [True, False, False, False]]
    assert response.dtype == torch.bool and bool((response <= mask.bool()).all())
