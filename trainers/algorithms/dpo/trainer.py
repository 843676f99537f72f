"""The DPO training run: pairs from a response-tree dataset, reference log-probs once, then optimizer steps.

``train_dpo(config, start, reference)`` is handed the starting policy (``config.init`` as loaded by
``trainers.algorithms.registry``; its model size and tokenizer come with it) and optionally a reference LM
(default: the starting policy), reads the pairs (``trainers.algorithms.dpo.data``), computes every pair's reference
log-probabilities once and drops the reference, then trains the policy with the DPO loss
(``trainers.algorithms.dpo.dpo``) on seeded batches of pairs in the loop over in-memory tensors
(``trainers.core.tensor_loop.fit_tensors``: ``metrics.jsonl``, TensorBoard scalars, ``training_curves.png``, exact
resume) and writes ``out/checkpoint`` (algorithm ``dpo``, loadable by ``trainers.algorithms.registry.load_policy``).
``rlds-lang train dpo`` runs it through ``trainers.algorithms.registry.fit_dpo``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import nn

from trainers.algorithms.dpo.data import (
    PreferencePair,
    encode_pairs,
    load_tree_episodes,
    tree_pairs,
)
from trainers.algorithms.dpo.dpo import DPOConfig, DPOModel, reference_logps, tokens_in
from trainers.core.checkpoint import built_from_checkpoint
from trainers.core.loop import TrainResult
from trainers.core.tensor_loop import fit_tensors


def config_pairs(config: DPOConfig) -> list[PreferencePair]:
    """The pairs ``config`` trains on (recorded flags, or re-selected with ``config.pair_method``)."""
    if not config.dataset:
        raise ValueError("DPOConfig.dataset is empty: give a response-tree log folder or a built tree dataset")
    episodes = load_tree_episodes(config.dataset, config.split)
    return tree_pairs(episodes, config.pair_method, (config.reward_min, config.reward_max), config.pair_threshold,
                      config.interval_threshold_proportion, config.seed, strict_threshold=config.strict_threshold)


#: ``TrainConfig`` fields DPO does not use, with the value they must keep (the error says why).
UNUSED = {"grad_accum": (1, "a step is one batch of pairs: raise batch_size"), "top_p": (None, "pairs are selected "
          "by pair_method, not by return"), "min_return": (None, "pairs are selected by pair_method, not by return"),
          "token_reward": (0.0, "DPO has no per-token reward"),
          "config": (None, "give the dataset as a folder"), "data_dir": (None, "give the dataset as a folder")}


def prepare(config: DPOConfig, start: Any, reference: nn.Module | None = None,
            pairs: list[PreferencePair] | None = None):
    """``(config with the start's model, tokenizer, policy module at the start's weights, pair tensors with reference
    log-probs)``. ``start`` is the starting policy as loaded from ``config.init`` (``LoadedModel``: ``lm``,
    ``tokenizer``, ``config``), ``reference`` the reference LM (default: the starting policy's)."""
    for name, (value, why) in UNUSED.items():
        if getattr(config, name) != value:
            raise ValueError(f"DPOConfig.{name}={getattr(config, name)!r} is not used by DPO ({why}); leave it at {value!r}")
    config = dataclasses.replace(config, model=start.config.model, tokenizer=start.config.tokenizer)
    pairs = config_pairs(config) if pairs is None else pairs
    if not pairs:
        raise ValueError(f"{config.dataset}: no preference pairs (pair_method={config.pair_method!r})")
    tensors = encode_pairs(pairs, start.tokenizer, config.max_length)
    reference = start.lm if reference is None else reference
    tensors.update(reference_logps(reference, tensors))
    del reference
    # a start fine-tuned from a pretrained LM is rebuilt from its checkpoint's own lm/ (the folder it was fine-tuned
    # from need not be at hand); its weights are the start's either way
    module = DPOModel(built_from_checkpoint(config, config.init) if config.init else config, start.tokenizer)
    module.lm.load_state_dict(start.lm.state_dict())
    return config, start.tokenizer, module, tensors


def train_dpo(config: DPOConfig, start: Any, reference: nn.Module | None = None, progress: bool = True,
              pairs: list[PreferencePair] | None = None) -> TrainResult:
    """Trains the starting policy ``start`` (loaded from ``config.init``) with DPO on the pairs of
    ``config.dataset`` (or ``pairs``), against ``reference`` (default: the starting policy). The caller seeds
    torch with ``config.seed`` before it loads the models (``trainers.algorithms.registry.fit_dpo`` does), so the
    run, dropout included, is a function of the seed."""
    config, tokenizer, module, tensors = prepare(config, start, reference, pairs)

    def step_loss(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any], int]:
        result = module(batch)
        return result.loss, result.metrics, tokens_in(batch)

    return fit_tensors(config, "dpo", module, tokenizer, tensors, step_loss, progress=progress,
                       title=f"dpo: {config.dataset}", pairs=int(tensors["chosen_input_ids"].shape[0]))


__all__ = ["config_pairs", "prepare", "train_dpo"]
