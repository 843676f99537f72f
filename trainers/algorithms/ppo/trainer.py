"""PPO's update loop (``run``) and one PPO update over a rollout batch (``ppo_update``); see ``trainers.algorithms.ppo.config``.

Throughput: rollout tokens/s counts the response tokens sampled per second of rollout (recording
included); update tokens/s counts the sequence tokens (query + response) forwarded and backpropagated per
second of optimisation, every PPO epoch included.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from trainers.algorithms.ppo.config import PPOConfig
from trainers.algorithms.ppo.losses import (
    gae,
    kl_penalized_rewards,
    minibatch_order,
    policy_loss,
    value_loss,
    whiten,
)
from trainers.algorithms.ppo.networks import (
    PolicyWithValue,
    PPOModel,
    frozen_reference,
    score_responses,
)
from trainers.algorithms.ppo.optim import (
    AdaptiveKLController,
    FixedKLController,
    linear_annealing,
    make_optimizer,
)
from trainers.algorithms.ppo.rollout import RolloutPolicy, Rollouts, collect_rollouts
from trainers.core.checkpoint import load_trainer_state, restore_trainer_state
from trainers.core.decoding import PrefixConstraint
from trainers.core.device import (
    Placement,
    chosen,
    ddp_device_ids,
    module_device,
    numbers,
    placement,
    placement_of,
)
from trainers.core.loop import DistInfo, init_distributed
from trainers.core.objective import masked_mean


@dataclasses.dataclass
class PPOResult:
    """What ``train_ppo`` reports: the last update's metrics and the measured throughputs (means over updates)."""

    out: Path
    updates: int
    final_metrics: dict[str, float]
    seconds: float
    rollout_tokens_per_second: float
    update_tokens_per_second: float
    #: the run's training seconds over every call that advanced it (what its checkpoint carries); None for a run
    #: resumed from a checkpoint saved before checkpoints carried them.
    total_seconds: float | None = None

    def time_text(self) -> str:
        """The training time for a page: in all when known, and this call's part."""
        if self.total_seconds is None:
            return f"{self.seconds:.0f} s in this invocation (earlier calls not recorded)"
        return f"{self.total_seconds:.0f} s of training ({self.seconds:.0f} s in this invocation)"


@dataclasses.dataclass
class Batch:
    """A rollout batch with what PPO needs from rollout time (no gradients)."""

    rollouts: Rollouts
    old_logprobs: torch.Tensor
    ref_logprobs: torch.Tensor
    old_values: torch.Tensor
    rewards: torch.Tensor
    non_score: torch.Tensor

    def rows(self, index: torch.Tensor) -> dict[str, torch.Tensor]:
        """The tensors of the rows ``index``."""
        r = self.rollouts
        return {"queries": r.queries[index], "query_mask": r.query_mask[index], "responses": r.responses[index],
                "mask": r.mask[index], "old_logprobs": self.old_logprobs[index], "old_values": self.old_values[index],
                "rewards": self.rewards[index]}


@torch.no_grad()
def prepare_batch(model: nn.Module, reference: nn.Module, rollouts: Rollouts, temperature: float,
                  constraint: PrefixConstraint | None, kl_coef: float, place: Placement | None = None) -> Batch:
    """Log-probs, reference log-probs and values of the rollouts, and the KL-penalised per-token rewards (forward
    passes in ``place``'s precision)."""
    with (place.autocast() if place is not None else contextlib.nullcontext()):
        policy = score_responses(model, rollouts.queries, rollouts.query_mask, rollouts.responses, temperature,
                                 constraint)
        ref = score_responses(reference, rollouts.queries, rollouts.query_mask, rollouts.responses, temperature,
                              constraint)
    rewards, non_score = kl_penalized_rewards(rollouts.scores, policy.logprobs, ref.logprobs, rollouts.mask, kl_coef)
    return Batch(rollouts, policy.logprobs, ref.logprobs, policy.values, rewards, non_score)


def ppo_update(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Batch, config: Any, update: int,
               constraint: PrefixConstraint | None = None, info: DistInfo = DistInfo(),
               place: Placement | None = None) -> dict[str, float]:
    """``config.ppo_epochs`` epochs over ``batch`` (forward passes in ``place``'s precision); returns the mean of
    the per-minibatch metrics.

    Under ``torchrun`` ``model`` is the DistributedDataParallel wrapper: every process shuffles its own rollouts
    with the same permutation, whitens over its own minibatch (as the recipe's MPI ranks did), and the step
    is the token-weighted mean gradient over all processes' micro-batches; metrics are averaged over processes.
    """
    n = len(batch.rollouts)
    sums: dict[str, float] = {}
    steps = 0
    for epoch in range(config.ppo_epochs):
        order = minibatch_order(n, config.seed, update, epoch)
        for minibatch in torch.tensor_split(order, config.nminibatches):
            if len(minibatch) == 0:
                if info.world_size > 1:
                    raise ValueError(f"a process has {n} turns, fewer than nminibatches={config.nminibatches}")
                continue
            rows = batch.rows(minibatch.to(batch.rollouts.mask.device))
            metrics = _minibatch_step(model, optimizer, rows, config, constraint, info, place)
            for key, value in metrics.items():
                sums[key] = sums.get(key, 0.0) + value
            steps += 1
    return _mean_over_processes({key: value / max(steps, 1) for key, value in sums.items()}, info,
                                batch.rollouts.mask.device)


def _mean_over_processes(metrics: dict[str, float], info: DistInfo, device: torch.device) -> dict[str, float]:
    if info.world_size == 1:
        return metrics
    keys = sorted(metrics)
    packed = torch.tensor([metrics[k] for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(packed)
    return dict(zip(keys, (packed / info.world_size).tolist()))


def _minibatch_step(model: nn.Module, optimizer: torch.optim.Optimizer, mb: dict[str, torch.Tensor], config: Any,
                    constraint: PrefixConstraint | None, info: DistInfo, place: Placement | None) -> dict[str, float]:
    """Whitening and GAE over the minibatch, then one optimizer step accumulated over ``grad_accum`` micro-batches."""
    mask = mb["mask"]
    rewards = whiten(mb["rewards"], mask, shift_mean=False) if config.whiten_rewards else mb["rewards"]
    advantages, returns = gae(rewards, mb["old_values"], mask, config.gamma, config.lam)
    advantages = whiten(advantages, mask)
    total = mask.sum().double()
    if info.world_size > 1:
        dist.all_reduce(total)
    total = total.clamp(min=1)
    optimizer.zero_grad(set_to_none=True)
    sums: dict[str, float] = {}
    # every process runs the same number of micro-batches (DDP's backward is collective)
    micros = torch.tensor_split(torch.arange(len(mask), device=mask.device), config.grad_accum)
    autocast = place.autocast if place is not None else contextlib.nullcontext
    for i, micro in enumerate(micros):
        if len(micro) == 0:
            if info.world_size > 1:
                raise ValueError(f"a process has {len(mask)} turns in a minibatch, fewer than grad_accum="
                                 f"{config.grad_accum}: play more episodes per update")
            continue
        m = mask[micro]
        last = i == len(micros) - 1
        sync = contextlib.nullcontext() if last or info.world_size == 1 else model.no_sync()
        with sync:
            with autocast():
                out = score_responses(model, mb["queries"][micro], mb["query_mask"][micro], mb["responses"][micro],
                                      config.temperature, constraint)
            pg, pg_metrics = policy_loss(out.logprobs, mb["old_logprobs"][micro], advantages[micro], m,
                                         config.cliprange)
            vf, vf_metrics = value_loss(out.values, mb["old_values"][micro], returns[micro], m, config.cliprange_value)
            loss = pg + config.vf_coef * vf
            share = float(m.sum().double() / total)
            # DDP averages gradients over processes: scale by world_size so the step is the global token mean
            (loss * share * info.world_size).backward()
        metrics = {"loss/total": loss.detach(), "loss/policy": pg.detach(), "loss/value": vf.detach(),
                   "policy/entropy": masked_mean(out.entropy.detach(), m), **pg_metrics, **vf_metrics}
        for key, value in zip(metrics, numbers(list(metrics.values()))):
            sums[key] = sums.get(key, 0.0) + value * share
    if config.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
    optimizer.step()
    sums["returns/mean"] = float(masked_mean(returns, mask))
    return sums


def _rollout_metrics(batch: Batch, beta: float) -> dict[str, float]:
    r = batch.rollouts
    maskf = r.mask.float()
    kl = ((batch.old_logprobs - batch.ref_logprobs) * maskf).sum(1)
    return {"score": float(r.scores.mean()), "episode_return": sum(r.episode_returns) / max(len(r.episode_returns), 1),
            "true_return": sum(r.true_returns) / max(len(r.true_returns), 1),
            "objective/kl": float(kl.mean()), "objective/kl_coef": beta,
            "objective/entropy": float((-batch.old_logprobs * maskf).sum(1).mean()),
            "objective/non_score_reward": float(batch.non_score.sum(1).mean()),
            "response_tokens": float(maskf.sum(1).mean()), "turns": float(len(r))}


def rollout_policy(config: Any, model: nn.Module, tokenizer: Any, allowed_actions: list[str] | None,
                   precision: str | None = None) -> RolloutPolicy:
    """The sampler of ``run``'s rollouts: ``model``'s policy LM prompting and decoding with ``tokenizer`` (the
    model's own: a character tokenizer, or a pretrained LM's), the config's lengths and temperature."""
    return RolloutPolicy(model.lm, tokenizer, config.query_length, config.response_length, config.temperature,
                         allowed_actions, precision=precision)


def run(config: Any, model: nn.Module, reference: nn.Module, tokenizer: Any, env: Any,
        allowed_actions: list[str] | None, source: Any, state: dict[str, Any] | None, progress: bool) -> PPOResult:
    """The update loop of ``trainers.algorithms.ppo.trainer.train_ppo`` (``state``: a checkpoint's trainer state to
    resume from) on the device ``model`` is on, in the config's precision."""
    from trainers.core.checkpoint import save_checkpoint, trainer_state
    from trainers.core.logs import RunLog, elapsed_seconds

    out = Path(config.out)
    place = placement(module_device(model), getattr(config, "precision", "auto"))
    info = init_distributed(place.device)
    optimizer = make_optimizer(model.parameters(), config.lr, config.adam_eps, config.tf_adam)
    schedule = linear_annealing(config.updates) if config.anneal_lr else (lambda update: 1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    kl_ctl = (AdaptiveKLController(config.kl_coef, config.kl_target, config.kl_horizon) if config.adaptive_kl
              else FixedKLController(config.kl_coef))
    update, saved_seconds = 0, 0.0
    if state is not None:
        restore_trainer_state(state, optimizer, scheduler)
        kl_ctl.load_state_dict(state["kl"])
        update = int(state["update"])
        saved_seconds = state.get("train_seconds")  # None: saved before checkpoints carried it
    before = saved_seconds
    policy = rollout_policy(config, model, tokenizer, allowed_actions, place.precision)
    trained: nn.Module = (nn.parallel.DistributedDataParallel(model, device_ids=ddp_device_ids(place.device))
                          if info.world_size > 1 else model)
    run_log = RunLog(out, "ppo", config.updates, update, checkpoint_every=config.checkpoint_every,
                     enabled=info.is_main, progress=progress, unit="update",
                     title=f"ppo: {config.task}, reward {config.reward}")
    run_log.write_config(config, computed_on=place.facts())
    started = time.perf_counter()
    rollout_rates: list[float] = []
    update_rates: list[float] = []
    metrics: dict[str, float] = {}
    while update < config.updates:
        update += 1
        data_dir = out / "rollouts" / (f"update-{update:05d}" + (f"-rank{info.rank}" if info.world_size > 1 else ""))
        if data_dir.exists():  # recorded after the checkpoint we resumed from; re-recorded identically below
            shutil.rmtree(data_dir)
        t0 = time.perf_counter()
        policy.info = {"ppo_update": update}
        first = ((update - 1) * info.world_size + info.rank) * config.episodes  # every process plays other games
        seeds = [config.seed * 1_000_003 + first + i for i in range(config.episodes)]
        rollouts = collect_rollouts(env, policy, seeds, data_dir, source, config.truncate_after,
                                    config.truncation_penalty, run_name=f"ppo-{update:05d}")
        rollout_seconds = time.perf_counter() - t0
        model.train()
        batch = prepare_batch(model, reference, rollouts, config.temperature, policy.constraint, kl_ctl.value, place)
        t1 = time.perf_counter()
        metrics = ppo_update(trained, optimizer, batch, config, update, policy.constraint, info, place)
        update_seconds = time.perf_counter() - t1
        metrics.update(_mean_over_processes(_rollout_metrics(batch, kl_ctl.value), info, place.device))
        metrics["lr"] = scheduler.get_last_lr()[0]
        scheduler.step()
        kl_ctl.update(metrics["objective/kl"], round(metrics["turns"] * info.world_size))  # the same on every process
        rollout_rates.append(len(rollouts) * config.response_length / rollout_seconds)
        update_rates.append(len(rollouts) * (config.query_length + config.response_length) * config.ppo_epochs
                            / update_seconds)
        metrics.update(rollout_tokens_per_second=rollout_rates[-1], update_tokens_per_second=update_rates[-1])
        run_log.step_done(update, metrics, postfix={"score": f"{metrics['score']:.3f}",
                                                    "kl": f"{metrics['objective/kl']:.3f}"})
        if run_log.checkpoint_due(update):
            saved_seconds = elapsed_seconds(before, run_log.clock)
            if info.is_main:
                # the shared trainer state (what restore_trainer_state puts back) plus PPO's own: the KL controller
                # and the frozen reference
                state = {**trainer_state(optimizer, scheduler, update, saved_seconds), "update": update,
                         "kl": kl_ctl.state_dict(), "reference": reference.state_dict()}
                save_checkpoint(out, "ppo", config, model, tokenizer, state)
            if info.world_size > 1:
                dist.barrier()
    run_log.close()
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    seconds = time.perf_counter() - started
    return PPOResult(out, update, metrics, seconds, mean(rollout_rates), mean(update_rates), saved_seconds)


def initial_model(config: PPOConfig) -> tuple[PPOConfig, PPOModel, Any]:
    """``(config with the init's model, policy + value head, tokenizer)``: from ``config.init``, else from
    ``config.model`` (random, or the pretrained LM of ``model.pretrained`` with its own tokenizer), built on the CPU
    (the caller moves it)."""
    from trainers.algorithms.registry import load_agent_model
    from trainers.core.checkpoint import built_from_checkpoint
    from trainers.core.pretrained import task_tokenizer

    torch.manual_seed(config.seed)
    if not config.init:
        tokenizer = task_tokenizer(config)
        with torch.device("cpu"):
            return config, PPOModel(config, tokenizer), tokenizer
    if config.model.pretrained:
        raise ValueError(f"PPOConfig: init={config.init!r} and model.pretrained={config.model.pretrained!r}: the "
                         f"init checkpoint brings its model and tokenizer; give one or the other")
    loaded = load_agent_model(config.init, "cpu")
    config = dataclasses.replace(config, model=loaded.config.model)
    with torch.device("cpu"):  # a model fine-tuned from a pretrained one is rebuilt from the init's own lm/
        model = PPOModel(built_from_checkpoint(config, config.init), loaded.tokenizer)
    model.lm.load_state_dict(loaded.lm.state_dict())
    if loaded.algorithm == "ppo":
        model.value_head.load_state_dict(loaded.model.value_head.state_dict())
    return config, model.requires_grad_(True), loaded.tokenizer


def make_env(config: PPOConfig) -> tuple[Any, list[str] | None]:
    """``(environment, valid actions or None)`` of ``config.task``."""
    if config.task != "wordle":
        raise ValueError(f"PPOConfig.task {config.task!r}: only 'wordle' is built in; pass env= to train_ppo")
    from rlds_lang.wordle.env import WordleEnv

    env = WordleEnv(answers=config.answers, guesses=config.guesses, rule=config.rule, mode=config.mode)
    return env, (list(env.guesses.words) if config.constrain_actions else None)


def resume_state(config: PPOConfig, model: nn.Module, reference: nn.Module) -> dict[str, Any] | None:
    """The trainer state to resume from (``trainers.core.checkpoint.load_trainer_state``: the policy and value
    head loaded), with the frozen reference put back too; None for a fresh run."""
    state = load_trainer_state(config, model)
    if state is not None:
        reference.load_state_dict(state["reference"])
    return state


def train_ppo(config: PPOConfig, env: Any = None, allowed_actions: list[str] | None = None, source: Any = None,
              init: tuple[nn.Module, Any] | None = None, progress: bool = False) -> Any:
    """Runs PPO (see the module docstring) on the config's device (``trainers.core.device``: the policy, value
    head, reference and rollouts live there; a reward model given as ``model:<dir>`` is loaded there too).
    ``env``/``allowed_actions`` override the task, ``source`` the ``reward`` spec (any reward source of
    ``trainers.algorithms.ppo.rewards``), ``init`` = ``(lm, tokenizer)`` the start.
    Returns a ``trainers.algorithms.ppo.trainer.PPOResult``."""
    with chosen(config.device, config.precision):
        return _train_ppo(config, env, allowed_actions, source, init, progress)


def _train_ppo(config: PPOConfig, env: Any, allowed_actions: list[str] | None, source: Any,
               init: tuple[nn.Module, Any] | None, progress: bool) -> Any:
    """``train_ppo`` inside its device choice."""
    if env is None:
        env, allowed_actions = make_env(config)
    if source is None:
        from trainers.algorithms.ppo.rewards import reward_source

        source = reward_source(config.reward)
    if init is not None:
        lm, tokenizer = init
        torch.manual_seed(config.seed)
        model = PolicyWithValue(lm, zero_init_value=config.zero_init_value)
    else:
        config, model, tokenizer = initial_model(config)
    place = placement_of(config)
    model.to(place.device)
    reference = frozen_reference(model.lm)
    state = resume_state(config, model, reference)
    out = Path(config.out)
    info = init_distributed(place.device)
    if state is None and any((out / "rollouts").glob("update-*/*")):
        raise FileExistsError(f"{out / 'rollouts'} holds rollouts of another run and there is no checkpoint to "
                              f"resume: give a new --out (recorded data is never overwritten)")
    if info.world_size > 1:  # every process checked the folder before any records into it
        torch.distributed.barrier()
    return run(config, model, reference, tokenizer, env, allowed_actions, source, state, progress)


__all__ = ["PPOResult", "Batch", "prepare_batch", "ppo_update", "rollout_policy", "run", "initial_model", "make_env", "resume_state", "train_ppo"]
