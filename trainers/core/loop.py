"""The training loop every algorithm shares: data, exact gradient accumulation, DDP, logs and checkpoints.

``train(algorithm, config)`` reads the episodes with ``transforms.loading.load`` (any RLDS dataset of
ours), keeps the top ``p`` by return for %BC, turns them into padded token-MDP batches in ``tf.data``
(``transforms.token_mdp.token_batches``, prefetched in TensorFlow's threads) and hands them to PyTorch
through ``transforms.torch_bridge.ResumableBatches``; a dataset built as ArrayRecord is read instead without
TensorFlow, through ``tfds.data_source`` and a torch ``DataLoader``, into the same batches
(``trainers.core.data``). The model is built on the CPU and moved to the config's device (``config.device``,
``trainers.core.device``), each batch is moved there as it is used, and the forward passes run in the config's
precision. Each optimizer step takes ``grad_accum`` micro-batches
and weights each micro-batch's mean loss by its share of the step's tokens, so the step does not depend
on how the batch was cut; under ``torchrun`` (``WORLD_SIZE > 1``) each process reads its own shard of
episodes and DistributedDataParallel (NCCL between CUDA processes, gloo on the CPU) averages gradients, the token
counts summed over all processes first. Process 0 writes a tqdm bar, ``metrics.jsonl``, TensorBoard scalars (``tb/``), the
checkpoint (``trainers.core.checkpoint``) and ``training_curves.png``. A run restarted with the same ``out``
resumes from the checkpoint exactly: same weights, optimizer, learning-rate schedule, RNG and position in
the (seeded, deterministic) data stream; that position is restored from the checkpoint (``DATA_STATE``)
rather than replayed, except under ``torchrun`` and for checkpoints saved before it was kept.

Example::

    from trainers.algorithms.bc import BCConfig
    from trainers.algorithms.registry import train

    result = train("bc", BCConfig(dataset="/tmp/tfds/wordle_synthetic/branch/1.1.0", steps=100, out="/tmp/bc"))
    print(result.final_metrics, result.data_wait_share)
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.distributed as dist
from torch import nn

from trainers.core.checkpoint import (
    DATA_STATE,
    checkpoint_dir,
    keep_snapshot,
    resume_trainer,
    save_checkpoint,
    trainer_state,
)
from trainers.core.device import (
    Placement,
    chosen,
    ddp_device_ids,
    distributed_backend,
    numbers,
    placement_of,
)
from trainers.core.logs import RunLog, elapsed_seconds
from trainers.core.pretrained import task_tokenizer

if TYPE_CHECKING:  # pragma: no cover - type hints only
    import tensorflow as tf

    from transforms.data_source import SourceBatches
    from transforms.torch_bridge import ResumableBatches

from trainers.core.config import config_from_dict


@dataclasses.dataclass(frozen=True)
class DistInfo:
    """This process' place in a ``torchrun`` job (``world_size == 1`` when run alone)."""

    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        """Whether this process writes logs and checkpoints."""
        return self.rank == 0


def init_distributed(device: torch.device | None = None) -> DistInfo:
    """Joins the ``torchrun`` process group when ``WORLD_SIZE > 1`` (NCCL when this process computes on CUDA
    ``device``, which becomes its current device; gloo on the CPU); alone otherwise.

    The group it creates is destroyed when the process exits (``atexit``): a gloo group left to the interpreter's
    final teardown aborts the process ("terminate called without an active exception") in most runs, which
    ``torchrun`` reports as a failed job even though training finished.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    if not dist.is_initialized():
        device = device if device is not None else torch.device("cpu")
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group(distributed_backend(device))
        atexit.register(_destroy_process_group)
    return DistInfo(dist.get_rank(), dist.get_world_size())


def _destroy_process_group() -> None:
    """Leaves the process group if it is still joined (``init_distributed``'s exit hook)."""
    if dist.is_initialized():
        dist.destroy_process_group()


def training_batches(config: Any, tokenizer: Any, info: DistInfo, skip: int = 0,
                     restore: Path | None = None) -> ResumableBatches | SourceBatches:
    """Torch batches for this process, each cut to its longest sequence (``transforms.torch_bridge.trim_padding``);
    their ``save(folder)`` keeps the stream's position. The reader is ``trainers.core.data.chosen_reader``'s: the
    data-source reader (``trainers.core.data.source_batches``, no TensorFlow) for an ArrayRecord build, else
    ``training_dataset`` in ``tf.data``; both give the same batches.

    A resumed run continues where it stopped: from the position saved in ``restore`` if given, else by dropping
    ``skip`` micro-batches first (the stream is a pure function of the dataset, the config and the seed, so
    both give the same batches; replaying costs minutes per thousand steps). A saved position that cannot be
    read (say, written by another TensorFlow version) falls back to replaying, with a warning.
    """
    from trainers.core.data import chosen_reader, require_tensorflow, source_batches

    if chosen_reader(config) == "data_source":
        return source_batches(config, tokenizer, info, skip, restore)
    require_tensorflow(config)
    import tensorflow as tf

    from transforms.torch_bridge import ResumableBatches, trim_padding

    if restore is not None:
        try:
            return ResumableBatches(training_dataset(config, tokenizer, info), restore=restore, then=trim_padding)
        except (tf.errors.OpError, AssertionError, ValueError) as error:
            warnings.warn(f"{restore}: the data stream's saved position could not be read ({error}); "
                          f"replaying {skip} batches instead")
    # a new dataset: the failed attempt's iterator has drawn the reshuffling seeds of the one it was made from
    return ResumableBatches(training_dataset(config, tokenizer, info), then=trim_padding, skip=skip)


def training_dataset(config: Any, tokenizer: Any, info: DistInfo) -> tf.data.Dataset:
    """The ``tf.data`` pipeline of a run's training batches: load -> (top-p) -> shard -> token MDP -> shuffled
    padded batches, repeated. Each iterator of one such dataset draws its own reshuffling seeds, so a stream is
    reproduced only by the first iterator of a freshly built dataset."""
    from trainers.core.data import RETURNS_CACHE, dataset_key
    from transforms.loading import load
    from transforms.selection import (
        cached_episode_returns,
        filter_min_return,
        filter_top_p,
    )
    from transforms.token_mdp import TokenMDPConfig, token_batches

    if not config.dataset:
        raise ValueError("config.dataset is empty: give a folder written by `tfds build` or a dataset name")
    episodes = load(config.dataset, split=config.split, config=config.config, data_dir=config.data_dir)
    if config.top_p is not None:
        returns = cached_episode_returns(episodes, Path(config.out) / RETURNS_CACHE, dataset_key(config))
        episodes = filter_top_p(episodes, config.top_p, returns=returns)
    if getattr(config, "min_return", None) is not None:
        episodes = filter_min_return(episodes, config.min_return)
    if info.world_size > 1:
        episodes = episodes.shard(info.world_size, info.rank)
    # returns-to-go discounted per action token by the config's gamma, if it has one (the MC-returns trainer's targets)
    mdp = TokenMDPConfig(max_length=config.max_length, token_reward=config.token_reward,
                         gamma=getattr(config, "gamma", 1.0))
    return token_batches(episodes, tokenizer, mdp, config.batch_size, shuffle_buffer=config.shuffle_buffer,
                         seed=config.seed, repeat=True, drop_remainder=True)


@dataclasses.dataclass
class TrainResult:
    """What a finished ``train`` call reports (process 0's view).

    ``tokens_per_second`` and ``data_wait_share`` (time blocked on the next batch / wall time) are measured
    from the end of the first step on, excluding pipeline start-up; ``seconds`` is this call's whole loop.
    ``total_seconds`` is the run's training time over every call, as its checkpoint carries it (``elapsed_seconds``):
    a call stopped by a kill counts up to its last checkpoint, a finished run reloaded adds nothing; None for a
    run resumed from a checkpoint saved before checkpoints carried it.
    """

    out: Path
    steps: int
    final_metrics: dict[str, float]
    seconds: float
    tokens_per_second: float
    data_wait_share: float
    total_seconds: float | None = None
    #: steps per second from the end of the first step on (start-up excluded, like ``tokens_per_second``).
    steps_per_second: float = 0.0


def warmup_schedule(warmup: int) -> Callable[[int], float]:
    """The learning-rate factor of step ``step``: linear warm-up over ``warmup`` steps, then 1 (for ``LambdaLR``)."""
    return lambda step: min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0


def train(spec: AlgorithmSpec, config: Any, progress: bool = True) -> TrainResult:
    """Trains the algorithm of ``spec`` with ``config`` (its config dataclass) on the config's device
    (``trainers.core.device``); see the module doc. An algorithm with its own loop (``spec.fit``: DPO trains on
    pairs, not token batches) is handed its config instead, with ``auto`` meaning the config's device."""
    if not isinstance(config, spec.config_class):
        raise TypeError(f"{spec.name} needs a {spec.config_class.__name__}, got {type(config).__name__}")
    with chosen(config.device, config.precision):
        if spec.fit is not None:
            return spec.fit(config, progress)
        return _train(spec, config, placement_of(config), progress)


def build_module(spec: AlgorithmSpec, config: Any, tokenizer: Any, place: Placement) -> nn.Module:
    """The algorithm's module built on the CPU (a seed gives the same initial weights on every device), then
    moved to the placement's device."""
    with torch.device("cpu"):
        module = spec.model_class(config, tokenizer)
    return module.to(place.device)


def _train(spec: AlgorithmSpec, config: Any, place: Placement, progress: bool) -> TrainResult:
    """``train``'s shared token-batch loop on ``place``."""
    algorithm = spec.name
    if config.keep_every and config.keep_every % config.checkpoint_every:
        raise ValueError(f"keep_every ({config.keep_every}) must be a multiple of checkpoint_every "
                         f"({config.checkpoint_every}): snapshots copy the checkpoint written at that step")
    info = init_distributed(place.device)
    out = Path(config.out)
    if info.is_main:
        out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    tokenizer = task_tokenizer(config)
    module = build_module(spec, config, tokenizer, place)
    optimizer = torch.optim.AdamW([p for p in module.parameters() if p.requires_grad], lr=config.lr,
                                  betas=(config.adam_beta1, config.adam_beta2), weight_decay=config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_schedule(config.warmup_steps))
    step, saved_seconds = resume_trainer(config, module, optimizer, scheduler)
    before = saved_seconds
    model: nn.Module = (nn.parallel.DistributedDataParallel(module, device_ids=ddp_device_ids(place.device))
                        if info.world_size > 1 else module)
    # a finished run (reloaded to regenerate a document) reads no data: %BC's top-p pass alone over a 1M-episode
    # dataset takes most of an hour
    batches = training_batches(config, tokenizer, info, skip=step * config.grad_accum,
                               restore=_saved_data_state(config, info, step)) if step < config.steps else None
    run = RunLog(out, algorithm, config.steps, step, config.log_every, config.checkpoint_every, enabled=info.is_main,
                 progress=progress, title=f"{algorithm}: {config.dataset}")
    run.write_config(config, computed_on=place.facts())
    module.train()
    while step < config.steps:
        t0 = time.perf_counter()
        micro = [next(batches) for _ in range(config.grad_accum)]
        run.clock.waited(time.perf_counter() - t0)
        tokens = sum(int(b["attention_mask"].sum()) for b in micro) * info.world_size  # counted on the CPU
        metrics = optimizer_step(model, module, optimizer, micro, config.grad_clip, info, place)
        scheduler.step()
        step += 1
        run.step_done(step, metrics, tokens, extra=lambda: run.throughput_row(scheduler.get_last_lr()[0]),
                      postfix={"loss": f"{metrics.get('loss', float('nan')):.4f}"})
        if run.checkpoint_due(step):
            saved_seconds = elapsed_seconds(before, run.clock)
            _save(config, algorithm, module, tokenizer, optimizer, scheduler, step, saved_seconds, info, batches)
            if info.is_main and config.keep_every and step % config.keep_every == 0:
                keep_snapshot(config.out, step)
    run.close()
    return TrainResult(out, step, run.last, run.clock.seconds(), *run.clock.overall(), total_seconds=saved_seconds,
                       steps_per_second=run.clock.steps_per_second())


def accumulate_gradients(model: nn.Module, micro: list[dict[str, Any]], info: DistInfo = DistInfo(),
                         place: Placement | None = None) -> dict[str, float]:
    """Zeroes the gradients, then backpropagates every micro-batch of one optimizer step.

    Each micro-batch's mean loss is weighted by its share of the step's tokens (summed over processes), so
    the accumulated gradient is the gradient of the token mean over the whole step, however it was cut.
    The micro-batches are moved to ``place``'s device (when given) and the forward passes run in its
    ``autocast``. Returns the step's token-weighted mean metrics (``loss`` included); ``{}`` when it has no tokens.
    """
    from trainers.core.model import action_targets

    # the step's tokens, counted where the batches are (the CPU, as the loop reads them: no wait for the device)
    total = torch.stack([action_targets(b)[1].sum() for b in micro]).sum().double()
    if place is not None:
        micro = [place.move(batch) for batch in micro]
    device = place.device if place is not None else total.device
    if info.world_size > 1:
        total = total.to(device)
        dist.all_reduce(total)
    empty = bool(total == 0)
    total = total.to(device)
    autocast = place.autocast if place is not None else contextlib.nullcontext
    model.zero_grad(set_to_none=True)
    sums: dict[str, float] = {}
    if empty:
        return sums
    for i, batch in enumerate(micro):
        last = i == len(micro) - 1
        sync = contextlib.nullcontext() if last or info.world_size == 1 else model.no_sync()
        with sync:
            with autocast():
                out = model(batch)
            share = out.count.double() / total
            # DDP averages gradients over processes: scale by world_size so the step is the global token mean
            (out.loss * (share * info.world_size).float()).backward()
        keys = ["loss", *out.metrics]
        share_value, *values = numbers([share, out.loss.detach(), *out.metrics.values()])
        for key, value in zip(keys, values):
            sums[key] = sums.get(key, 0.0) + value * share_value
    if info.world_size > 1:  # every process reports the global mean
        keys = sorted(sums)
        packed = torch.tensor([sums[k] for k in keys], dtype=torch.float64, device=total.device)
        dist.all_reduce(packed)
        sums = dict(zip(keys, packed.tolist()))
    return sums


def optimizer_step(model: nn.Module, module: nn.Module, optimizer: torch.optim.Optimizer,
                   micro: list[dict[str, Any]], grad_clip: float, info: DistInfo = DistInfo(),
                   place: Placement | None = None) -> dict[str, float]:
    """One optimizer step of the shared loop over ``micro`` (see ``accumulate_gradients``; ``model`` is ``module``
    or its DDP wrapper), then the module's ``after_optimizer_step`` (ILQL's target update)."""
    metrics = accumulate_gradients(model, micro, info, place)
    if metrics:
        if grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(module.parameters(), grad_clip)
        optimizer.step()
        module.after_optimizer_step()
    return metrics


def _save(config, algorithm, module, tokenizer, optimizer, scheduler, step: int, train_seconds: float | None,
          info: DistInfo, batches: ResumableBatches | SourceBatches) -> None:
    """Process 0 writes the checkpoint; alone, it keeps the data stream's position in it too (under ``torchrun``
    only process 0 writes, so the other processes' positions are not kept and a resume replays the stream)."""
    if info.is_main:
        save_checkpoint(config.out, algorithm, config, module, tokenizer,
                        trainer_state(optimizer, scheduler, step, train_seconds),
                        data_state=batches.save if info.world_size == 1 else None)
    if info.world_size > 1:
        dist.barrier()


def _saved_data_state(config, info: DistInfo, step: int) -> Path | None:
    """The data stream's position saved with the checkpoint a run resumes from at ``step`` (None: start at the
    beginning, or replay ``step`` steps' batches, for a fresh run, under ``torchrun`` or for an older checkpoint)."""
    path = checkpoint_dir(config.out) / DATA_STATE
    return path if step > 0 and info.world_size == 1 and path.is_dir() else None


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """An algorithm: its name, its config dataclass and its ``nn.Module`` (whose ``forward`` is the loss)."""

    name: str
    config_class: type
    model_class: type
    description: str
    #: ``fit(config, progress) -> TrainResult`` for an algorithm that runs its own steps over other data than
    #: token-MDP batches (DPO's pairs); None: ``train`` runs the shared token-batch loop.
    fit: Callable[[Any, bool], Any] | None = None

    def config_from_dict(self, data: dict[str, Any]) -> Any:
        """The algorithm's config from its JSON form (as stored in checkpoints)."""
        return config_from_dict(self.config_class, data)


__all__ = ["DistInfo", "init_distributed", "training_batches", "training_dataset", "accumulate_gradients",
           "optimizer_step", "build_module", "TrainResult", "train", "AlgorithmSpec"]
