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
| ``token_mdp`` | ``token_mdp`` (ILQL token-level MDP: masks, turn index, EOA rewards, dones, returns-to-go), ``pad_batches``, ``token_batches`` (%BC, shuffle, repeat, prefetch); its PyTorch collate is ``transforms.torch_bridge.collate_token_mdp`` |
| ``token_layout`` | ``TokenMDPConfig`` and ``layout``: the token MDP in plain numpy, which ``token_mdp`` runs in ``tf.data`` and the data-source reader runs without TensorFlow |
| ``array_record``, ``data_source`` | ArrayRecord builds read without TensorFlow: ``open_source`` (``tfds.data_source``), ``episode_returns``, ``select_episodes``; ``SourceBatches`` (torch ``DataLoader``), the batches of ``token_batches`` |
| ``shuffle_order``, ``top_p`` | the order of ``tf.data``'s seeded ``shuffle(...).repeat()`` in numpy; ``top_p_mask`` and the cache of episode returns |

Names are imported on first use, so that the TensorFlow-free modules (``token_layout``, ``array_record``,
``data_source``, ``shuffle_order``, ``top_p``, ``torch_bridge``) load where TensorFlow is not installed.
"""

import importlib
from typing import Any

#: Where each public name lives. They are imported on first use (PEP 562), so that importing a TensorFlow-free
#: submodule (``token_layout``, ``data_source``, ``shuffle_order``, ``top_p``) never imports TensorFlow.
_HOMES = {
    "alignment": ("AlignmentType", "add_alignment_to_step", "realign", "shift_keys"),
    "loading": ("load", "to_turns"),
    "moments": ("mean_and_std", "sar_fields_mask"),
    "returns": ("add_episode_return", "add_returns_to_go", "episode_return", "returns_to_go_of"),
    "selection": ("episode_returns", "filter_top_p", "split_by_episode_id"),
    "top_p": ("top_p_mask",),
    "statistics": ("compute_statistics", "dataset_statistics"),
    "statistics_report": ("DatasetStatistics",),
    "specs": ("BATCH_AUTO_TUNE", "zero_dataset_like", "zeros_from_spec"),
    "steps": ("apply_nested_steps", "concat_if_terminal", "concatenate", "episode_length", "final_step",
              "map_nested_steps", "map_steps", "sum_dataset", "sum_nested_steps", "truncate_after_condition"),
    # the function token_mdp stays in its module: exported here, it would shadow the submodule transforms.token_mdp
    "token_layout": ("TokenMDPConfig",),
    "token_mdp": ("pad_batches", "token_batches"),
    "windows": ("batch", "batch_nested_steps", "n_step_windows"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'transforms' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"transforms.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The package's names, the lazily imported ones included."""
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "AlignmentType", "add_alignment_to_step", "realign", "shift_keys", "load", "to_turns", "mean_and_std", "sar_fields_mask",
    "add_episode_return", "add_returns_to_go", "episode_return", "returns_to_go_of", "episode_returns",
    "filter_top_p", "split_by_episode_id", "top_p_mask", "BATCH_AUTO_TUNE", "zero_dataset_like", "zeros_from_spec",
    "apply_nested_steps", "concat_if_terminal", "concatenate", "episode_length", "final_step", "map_nested_steps",
    "map_steps", "sum_dataset", "sum_nested_steps", "truncate_after_condition", "batch", "batch_nested_steps",
    "n_step_windows", "DatasetStatistics", "compute_statistics", "dataset_statistics", "TokenMDPConfig",
    "pad_batches", "token_batches",
]
