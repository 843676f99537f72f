"""Token rows padded into one batch: left-padded prompts (generation continues every row from its last column)
and right-padded sequences (a causal model reads each row from column 0), each with its attention mask.

Batches read from an RLDS dataset are padded in tf.data instead (``transforms.token_mdp.pad_batches``, or
``transforms.torch_bridge.collate_token_mdp`` for unbatched sequences); these are for token lists made in Python:
PPO's queries, CHAI's sampled utterances, DPO's and MALT's responses. They are built on the CPU, whatever torch's
default device is; the caller moves them to its device."""

from __future__ import annotations

from typing import Sequence

import torch


def left_pad(rows: Sequence[Sequence[int]], width: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, attention_mask)`` of ``[len(rows), width]``: every row ends in the last column, ``pad_id`` before it;
    a row longer than ``width`` keeps its last ``width`` tokens.

    >>> ids, mask = left_pad([[7, 8], [1, 2, 3, 4]], 3, 0)
    >>> ids.tolist(), mask.tolist()
    ([[0, 7, 8], [2, 3, 4]], [[0, 1, 1], [1, 1, 1]])
    """
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long, device="cpu")
    mask = torch.zeros((len(rows), width), dtype=torch.long, device="cpu")
    for index, row in enumerate(rows):
        kept = list(row)[-width:] if width > 0 else []
        if kept:
            ids[index, width - len(kept):] = torch.tensor(kept, device="cpu")
            mask[index, width - len(kept):] = 1
    return ids, mask


def right_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, attention_mask)`` of ``[len(rows), longest row]`` (at least one column): every row starts in column
    0, ``pad_id`` after it.

    >>> ids, mask = right_pad([[7, 8], [1, 2, 3]], 0)
    >>> ids.tolist(), mask.tolist()
    ([[7, 8, 0], [1, 2, 3]], [[1, 1, 0], [1, 1, 1]])
    """
    width = max((len(row) for row in rows), default=1)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long, device="cpu")
    mask = torch.zeros((len(rows), width), dtype=torch.long, device="cpu")
    for index, row in enumerate(rows):
        if len(row):
            ids[index, :len(row)] = torch.tensor(list(row), device="cpu")
            mask[index, :len(row)] = 1
    return ids, mask


def pad_responses(rows: Sequence[tuple[Sequence[int], int]], pad_id: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask, response_mask)`` of right-padded ``(ids, response start)`` rows (a prompt and
    the response that follows it): ``response_mask`` is true on each row's tokens from its start on.

    >>> ids, mask, response = pad_responses([([5, 6, 7], 1), ([5, 9], 1)], 0)
    >>> ids.tolist(), response.tolist()
    ([[5, 6, 7], [5, 9, 0]], [[False, True, True], [False, True, False]])
    """
    ids, mask = right_pad([row for row, _ in rows], pad_id)
    response = torch.zeros(ids.shape, dtype=torch.bool, device="cpu")
    for index, (row, start) in enumerate(rows):
        response[index, start:len(row)] = True
    return ids, mask, response


__all__ = ["left_pad", "right_pad", "pad_responses"]
