"""Episode-aware ``tf.data`` transforms over RLDS datasets, and the PyTorch bridge.

The rlds transformation set under rlds' names and semantics (checked against ``rlds.transformations``
on the TF 2.15 stack by ``tests/legacy``), vectorised and safe on text-only steps, plus what language RL
needs: returns-to-go, n-step windows, top-p episode filtering, deterministic splits, statistics.
No ``import rlds`` here (it needs dm-reverb, which only loads beside TF 2.15; ARCHITECTURE.md). The
PyTorch bridge lives in ``transforms.torch_bridge`` so that this package imports without torch.

| module | what |
| --- | --- |
| ``loading`` | ``load`` a built dataset, ``to_turns`` |
| ``steps`` | ``map_steps``, ``map_nested_steps``, ``apply_nested_steps``, ``sum_dataset``, ``sum_nested_steps``, ``episode_length``, ``final_step``, ``concatenate``, ``concat_if_terminal``, ``truncate_after_condition`` |
| ``windows`` | ``batch`` (size/shift/stride/drop_remainder), ``batch_nested_steps``, ``n_step_windows`` |
| ``alignment`` | ``shift_keys``, ``realign`` (SAR ↔ ARS / RSA), ``AlignmentType``, ``add_alignment_to_step`` |
| ``moments`` | ``mean_and_std``, ``sar_fields_mask`` |
| ``specs`` | ``zeros_from_spec``, ``zero_dataset_like``, ``BATCH_AUTO_TUNE`` |
| ``returns`` | ``add_returns_to_go``, ``episode_return``, ``add_episode_return`` |
| ``statistics`` | ``compute_statistics`` → ``DatasetStatistics``, ``dataset_statistics``, ``returns_and_lengths`` |
| ``statistics_report`` | ``DatasetStatistics`` (``summary()``, ``table()``, ``plot()``) |
| ``selection`` | ``filter_top_p``, ``split_by_episode_id``, ``episode_returns`` |
| ``token_mdp`` | ``TokenMDPConfig``, ``token_mdp`` (ILQL token-level MDP: masks, turn index, EOA rewards, dones, returns-to-go), ``pad_batches``, ``token_batches`` (%BC, shuffle, repeat, prefetch); its PyTorch collate is ``transforms.torch_bridge.collate_token_mdp`` |
"""

from transforms.alignment import AlignmentType, add_alignment_to_step, realign, shift_keys
from transforms.loading import load, to_turns
from transforms.moments import mean_and_std, sar_fields_mask
from transforms.returns import add_episode_return, add_returns_to_go, episode_return, returns_to_go_of
from transforms.selection import episode_returns, filter_top_p, split_by_episode_id, top_p_mask
from transforms.statistics import compute_statistics, dataset_statistics
from transforms.statistics_report import DatasetStatistics
from transforms.specs import BATCH_AUTO_TUNE, zero_dataset_like, zeros_from_spec
from transforms.steps import (apply_nested_steps, concat_if_terminal, concatenate, episode_length, final_step,
                              map_nested_steps, map_steps, sum_dataset, sum_nested_steps, truncate_after_condition)
# the function token_mdp stays in its module: exported here, it would shadow the submodule transforms.token_mdp
from transforms.token_mdp import TokenMDPConfig, pad_batches, token_batches
from transforms.windows import batch, batch_nested_steps, n_step_windows

__all__ = [
    "AlignmentType", "add_alignment_to_step", "realign", "shift_keys", "load", "to_turns", "mean_and_std", "sar_fields_mask",
    "add_episode_return", "add_returns_to_go", "episode_return", "returns_to_go_of", "episode_returns",
    "filter_top_p", "split_by_episode_id", "top_p_mask", "BATCH_AUTO_TUNE", "zero_dataset_like", "zeros_from_spec",
    "apply_nested_steps", "concat_if_terminal", "concatenate", "episode_length", "final_step", "map_nested_steps",
    "map_steps", "sum_dataset", "sum_nested_steps", "truncate_after_condition", "batch", "batch_nested_steps",
    "n_step_windows", "DatasetStatistics", "compute_statistics", "dataset_statistics", "TokenMDPConfig",
    "pad_batches", "token_batches",
]
