"""The DPO training run: pairs from a response-tree dataset, reference log-probs once, then optimizer steps.

``train_dpo(config, start, reference)`` is handed the starting policy (``config.init`` as loaded by
``trainers.algorithms.registry``; its model size and tokenizer come with it) and optionally a reference LM
(default: the starting policy), reads the pairs (``trainers.algorithms.dpo.data``), computes every pair's reference
log-probabilities once and drops the reference, then trains the policy with the DPO loss
(``trainers.algorithms.dpo.dpo``) on seeded batches of pairs. Like every trainer it logs, checkpoints and draws its
curves through ``trainers.core.logs.RunLog`` (``metrics.jsonl``, TensorBoard scalars, ``training_curves.png``) and
writes ``out/checkpoint`` (algorithm ``dpo``, loadable by ``trainers.algorithms.registry.load_policy``); a run
restarted with the same ``out`` resumes from its checkpoint (the batch of step ``s`` is a pure function of
``(s, seed)``). ``rlds-lang train dpo`` runs it through ``trainers.algorithms.registry.fit_dpo``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainers.algorithms.dpo.data import (
    PreferencePair,
    encode_pairs,
    load_tree_episodes,
    tree_pairs,
)
from trainers.algorithms.dpo.dpo import (
    DPOConfig,
    DPOModel,
    batch_indices,
    reference_logps,
    tokens_in,
)
from trainers.core.checkpoint import resume_trainer, save_checkpoint, trainer_state
from trainers.core.logs import RunLog, elapsed_seconds
from trainers.core.loop import TrainResult, warmup_schedule


def config_pairs(config: DPOConfig) -> list[PreferencePair]:
    """The pairs ``config`` trains on (recorded flags, or re-selected with ``config.pair_method``)."""
    if not config.dataset:
        raise ValueError("DPOConfig.dataset is empty: give a response-tree log folder or a built tree dataset")
    episodes = load_tree_episodes(config.dataset, config.split)
    return tree_pairs(episodes, config.pair_method, (config.reward_min, config.reward_max), config.pair_threshold,
                      config.interval_threshold_proportion, config.seed)


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
    module = DPOModel(config, start.tokenizer)
    module.lm.load_state_dict(start.lm.state_dict())
    return config, start.tokenizer, module, tensors


def train_dpo(config: DPOConfig, start: Any, reference: nn.Module | None = None, progress: bool = True,
              pairs: list[PreferencePair] | None = None) -> TrainResult:
    """Trains the starting policy ``start`` (loaded from ``config.init``) with DPO on the pairs of
    ``config.dataset`` (or ``pairs``), against ``reference`` (default: the starting policy). The caller seeds
    torch with ``config.seed`` before it loads the models (``trainers.algorithms.registry.fit_dpo`` does), so the
    run, dropout included, is a function of the seed."""
    config, tokenizer, module, tensors = prepare(config, start, reference, pairs)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    optimizer = torch.optim.AdamW([p for p in module.parameters() if p.requires_grad], lr=config.lr,
                                  betas=(config.adam_beta1, config.adam_beta2), weight_decay=config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_schedule(config.warmup_steps))
    step, saved_seconds = resume_trainer(config, module, optimizer, scheduler)
    before = saved_seconds
    num_pairs = int(tensors["chosen_input_ids"].shape[0])
    run = RunLog(out, "dpo", config.steps, step, config.log_every, config.checkpoint_every, progress=progress,
                 title=f"dpo: {config.dataset}")
    run.write_config(config, pairs=num_pairs)
    module.train()
    while step < config.steps:
        index = torch.from_numpy(batch_indices(num_pairs, config.batch_size, step, config.seed))
        batch = {k: v[index] for k, v in tensors.items()}
        result = module(batch)
        optimizer.zero_grad(set_to_none=True)
        result.loss.backward()
        if config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(module.parameters(), config.grad_clip)
        optimizer.step()
        scheduler.step()
        step += 1
        run.step_done(step, {"loss": result.loss.detach(), **result.metrics}, tokens_in(batch),
                      extra=lambda: run.throughput_row(scheduler.get_last_lr()[0]))
        if run.checkpoint_due(step):
            saved_seconds = elapsed_seconds(before, run.clock)
            save_checkpoint(out, "dpo", config, module, tokenizer,
                            trainer_state(optimizer, scheduler, step, saved_seconds))
    run.close()
    return TrainResult(out, step, run.last, run.clock.seconds(), run.clock.overall()[0], 0.0,
                       total_seconds=saved_seconds)


__all__ = ["config_pairs", "prepare", "train_dpo"]
