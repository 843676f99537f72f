"""The DPO training run: pairs from a response-tree dataset, reference log-probs once, then optimizer steps.

``train_dpo(config)`` loads the starting policy from ``config.init`` (its model size and tokenizer come
with it), reads the pairs (``trainers.dpo_data``), computes every pair's reference log-probabilities once
with the reference model (``config.reference``, default the starting policy) and drops that model, then
trains the policy with the DPO loss (``trainers.dpo``) on seeded batches of pairs. Like every trainer it
writes ``metrics.jsonl``, TensorBoard scalars and ``out/checkpoint`` (algorithm ``dpo``, loadable by
``trainers.checkpoint.load_policy``), and a run restarted with the same ``out`` resumes from its checkpoint
(the batch of step ``s`` is a pure function of ``(s, seed)``). ``rlds-lang train dpo`` runs it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from trainers.checkpoint import checkpoint_dir, load_agent_model, save_checkpoint
from trainers.dpo import DPOConfig, DPOModel, batch_indices, reference_logps, tokens_in
from trainers.dpo_data import PreferencePair, encode_pairs, load_tree_episodes, tree_pairs
from trainers.loop import TrainResult, _Logs, _lr_lambda, _Throughput, _truncate_metrics_after


def config_pairs(config: DPOConfig) -> list[PreferencePair]:
    """The pairs ``config`` trains on (recorded flags, or re-selected with ``config.pair_method``)."""
    if not config.dataset:
        raise ValueError("DPOConfig.dataset is empty: give a response-tree log folder or a built tree dataset")
    episodes = load_tree_episodes(config.dataset, config.split)
    return tree_pairs(episodes, config.pair_method, (config.reward_min, config.reward_max), config.pair_threshold,
                      config.interval_threshold_proportion, config.seed)


def prepare(config: DPOConfig, pairs: list[PreferencePair] | None = None):
    """``(config with init's model, tokenizer, policy module at init's weights, pair tensors with reference log-probs)``."""
    if not config.init:
        raise ValueError("DPOConfig.init is empty: give the checkpoint folder of the starting policy")
    start = load_agent_model(config.init)
    config = dataclasses.replace(config, model=start.config.model, tokenizer=start.config.tokenizer)
    pairs = config_pairs(config) if pairs is None else pairs
    if not pairs:
        raise ValueError(f"{config.dataset}: no preference pairs (pair_method={config.pair_method!r})")
    tensors = encode_pairs(pairs, start.tokenizer, config.max_length)
    reference = load_agent_model(config.reference).lm if config.reference else start.lm
    tensors.update(reference_logps(reference, tensors))
    del reference
    module = DPOModel(config, start.tokenizer)
    module.lm.load_state_dict(start.lm.state_dict())
    return config, start.tokenizer, module, tensors


def train_dpo(config: DPOConfig, progress: bool = True, pairs: list[PreferencePair] | None = None) -> TrainResult:
    """Trains the policy of ``config.init`` with DPO on the pairs of ``config.dataset`` (or ``pairs``)."""
    torch.manual_seed(config.seed)
    config, tokenizer, module, tensors = prepare(config, pairs)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    optimizer = torch.optim.AdamW([p for p in module.parameters() if p.requires_grad], lr=config.lr,
                                  weight_decay=config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(config.warmup_steps))
    step = 0
    state_file = checkpoint_dir(out) / "trainer_state.pt"
    if config.resume and state_file.exists():
        module.load_state_dict(torch.load(checkpoint_dir(out) / "model.pt", map_location="cpu", weights_only=True))
        state = torch.load(state_file, map_location="cpu", weights_only=False)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = int(state["step"])
    logs = _Logs(out, True)
    _truncate_metrics_after(logs.path, step)
    num_pairs = int(tensors["chosen_input_ids"].shape[0])
    (out / "config.json").write_text(json.dumps({"algorithm": "dpo", "config": dataclasses.asdict(config),
                                                 "pairs": num_pairs}, indent=2))
    clock, window, last = _Throughput(), {}, {}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=config.steps, initial=step, desc="train dpo", unit="step")
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
        clock.step_done(tokens_in(batch))
        for key, value in {"loss": result.loss.detach(), **result.metrics}.items():
            window[key] = window.get(key, 0.0) + float(value)
        if bar is not None:
            bar.update(1)
        if step % config.log_every == 0 or step == config.steps:
            n = config.log_every if step % config.log_every == 0 else step % config.log_every
            last = {k: v / n for k, v in window.items()}
            last.update(lr=scheduler.get_last_lr()[0], **clock.window())
            logs.write(step, last)
            window = {}
        if step % config.checkpoint_every == 0 or step == config.steps:
            save_checkpoint(out, "dpo", config, module, tokenizer, {
                "step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "torch_rng": torch.get_rng_state()})
    if bar is not None:
        bar.close()
    logs.close()
    return TrainResult(out, step, last, clock.seconds(), *clock.overall()[:1], 0.0)


__all__ = ["config_pairs", "prepare", "train_dpo"]
