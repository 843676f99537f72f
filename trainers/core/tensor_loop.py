"""The training loop over tensors held in memory: seeded permutation batches, logs, checkpoints, exact resume.

Some trainers fit a small, fixed set of encoded sequences rather than a stream of token-MDP batches: DPO its
preference pairs (``trainers.algorithms.dpo.trainer``), the multi-agent MALT its agents' own turns
(``trainers.algorithms.malt.team.fit_turns``). ``fit_tensors`` is their one loop: the batch of step ``s`` is the
rows ``batch_indices(n, batch_size, s, seed)`` of every tensor (epochs of seeded permutations, a pure function of
``(s, seed)``), so a run restarted with the same ``out`` resumes exactly from its checkpoint (weights, optimizer,
schedule, RNG) without replaying data. Like ``trainers.core.loop.train`` it logs, checkpoints and draws its curves
through ``trainers.core.logs.RunLog`` and returns a ``TrainResult`` whose ``total_seconds`` is what the last
checkpoint carries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from trainers.core.checkpoint import resume_trainer, save_checkpoint, trainer_state
from trainers.core.device import placement_of
from trainers.core.logs import RunLog, elapsed_seconds
from trainers.core.loop import TrainResult, warmup_schedule

#: what a step's loss function returns for a batch: the loss to minimise, the metrics to log beside it and the
#: batch's non-pad tokens (for the throughput).
StepLoss = Callable[[dict[str, torch.Tensor]], tuple[torch.Tensor, dict[str, Any], int]]


def batch_indices(num_rows: int, batch_size: int, step: int, seed: int) -> np.ndarray:
    """The rows of optimizer step ``step``: epochs of seeded permutations, a pure function of ``(step, seed)``
    (every row once per epoch; all rows each step when there are fewer than ``batch_size``)."""
    per_epoch = max(1, num_rows // batch_size) if num_rows >= batch_size else 1
    epoch, k = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(num_rows)
    if num_rows < batch_size:
        return order
    return order[k * batch_size:(k + 1) * batch_size]


def fit_tensors(config: Any, algorithm: str, module: nn.Module, tokenizer: Any, tensors: dict[str, torch.Tensor],
                step_loss: StepLoss, *, progress: bool = True, title: str = "", **config_extra: Any) -> TrainResult:
    """Trains ``module`` for ``config.steps`` optimizer steps on batches of ``tensors`` (equal first dimensions) and
    writes ``config.out/checkpoint`` as algorithm ``algorithm``. ``config`` is a ``trainers.core.config``
    ``TrainConfig``: its ``out``, ``steps``, ``batch_size``, ``seed``, ``lr``, Adam betas, ``weight_decay``,
    ``warmup_steps`` (a linear warm-up, then a constant rate: ``warmup_schedule``), ``grad_clip``, ``log_every``,
    ``checkpoint_every`` and ``resume`` are used. ``config_extra`` is written beside the config in ``config.json``
    (e.g. how many pairs). The caller seeds torch before it builds ``module``, so dropout
    is a function of the seed too. ``module`` is moved to the config's device (``config.device``,
    ``trainers.core.device``), each batch is cut from ``tensors`` on the CPU and moved there, and ``step_loss`` runs
    in the config's precision."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = {int(v.shape[0]) for v in tensors.values()}
    if len(rows) != 1 or 0 in rows:
        raise ValueError(f"fit_tensors ({out}): the tensors need one non-zero number of rows, got {sorted(rows)}")
    num_rows = rows.pop()
    place = placement_of(config)
    module.to(place.device)
    optimizer = torch.optim.AdamW([p for p in module.parameters() if p.requires_grad], lr=config.lr,
                                  betas=(config.adam_beta1, config.adam_beta2), weight_decay=config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_schedule(config.warmup_steps))
    step, saved_seconds = resume_trainer(config, module, optimizer, scheduler)
    before = saved_seconds
    run = RunLog(out, algorithm, config.steps, step, config.log_every, config.checkpoint_every, progress=progress,
                 title=title or f"{algorithm}: {out.name}")
    run.write_config(config, computed_on=place.facts(), **config_extra)
    module.train()
    while step < config.steps:
        index = torch.from_numpy(batch_indices(num_rows, config.batch_size, step, config.seed))
        batch = place.move({k: v[index.to(v.device)] for k, v in tensors.items()})
        with place.autocast():
            loss, metrics, tokens = step_loss(batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(module.parameters(), config.grad_clip)
        optimizer.step()
        scheduler.step()
        step += 1
        run.step_done(step, {"loss": loss.detach(), **metrics}, tokens,
                      extra=lambda: run.throughput_row(scheduler.get_last_lr()[0]))
        if run.checkpoint_due(step):
            saved_seconds = elapsed_seconds(before, run.clock)
            save_checkpoint(out, algorithm, config, module, tokenizer,
                            trainer_state(optimizer, scheduler, step, saved_seconds))
    run.close()
    return TrainResult(out, step, run.last, run.clock.seconds(), run.clock.overall()[0], 0.0,
                       total_seconds=saved_seconds)


__all__ = ["StepLoss", "batch_indices", "fit_tensors"]
