"""The preference pipeline as separate processes: clips → labelling → routed databases → reward training.

As in the anchor (drlhp's wrapper starts its segment pipe, preference interface and reward-predictor
trainer as processes), the moving parts run apart so that neither a slow labeller nor reward training ever
stalls the agent:

- the environment side (``PreferenceEnv``) hands its clips to ``PreferencePipeline.clip_sink``, which puts
  them on a small queue (``clip_queue_size``) that **drops** a clip when full and counts it
  (``rlds_lang.preferences.queues.DroppingSink``);
- the labelling process keeps the most recent ``max_clips`` clips, selects ``pairs_per_clip`` unasked pairs
  per new clip (``PairSelector``: random, or by the ensemble's disagreement using the newest checkpoint),
  labels them (``SyntheticLabeller``), records every judgement through ``loggers.preferences`` (flushed
  before it goes on) and sends it on a queue that **never drops** (``put_blocking``);
- the training process routes each label into the training or the validation database
  (``RoutedDatabases``), waits for ``n_initial_preferences`` labels (printing ``waiting for preferences:
  n/40``), then trains the reward ensemble (``trainers.algorithms.reward.trainer.RewardModelTrainer``) and writes
  ``out/checkpoint`` atomically every ``checkpoint_every`` steps (at the end, it completes
  ``max_training_steps`` on the labels it holds before the last save); the wrapper's
  ``CheckpointRewardPredictor`` (``PreferencePipeline.predictor()``) reloads it.

Shutdown: ``close()`` (also on leaving ``with``, and on SIGTERM through ``stop_on_sigterm``) puts an end
marker behind the last clip, lets the labeller finish what it holds and pass the end on, lets the trainer
store every label and save a last checkpoint, then joins both; a process that does not end in time is
terminated, so no process outlives the pipeline. The children ignore SIGTERM/SIGINT (a signal to the whole
process group must not cut them off mid-write): the parent decides when they stop. ``out/pipeline.json``
holds the counts (clips sent and dropped, labels recorded and received, database sizes, training steps).

Processes are started with the ``spawn`` method: forking a parent that already runs TensorFlow's and
torch's thread pools can deadlock the child.

Example::

    config = PipelineConfig(out="runs/prefs")
    with stop_on_sigterm(), PreferencePipeline(config) as pipeline:   # SIGTERM: a clean close, no lost label
        env = PreferenceEnv(WordleEnv(), clip_sink=pipeline.clip_sink, predictor=pipeline.predictor())
        for seed in range(1000):
            run_episode(env, policy, seed=seed)
    print(pipeline.summary)
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import multiprocessing as mp
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from rlds_lang.preferences import defaults
from rlds_lang.preferences.queues import DroppingSink, get_or_none, put_blocking
from trainers.algorithms.reward.model import RewardModelConfig

#: end marker sent behind the last clip and the last label.
END = "__end__"
SUMMARY_FILE = "pipeline.json"
LOGS_DIR = "preferences"
CHECKPOINT_DIR = "checkpoint"


@dataclasses.dataclass
class PipelineConfig:
    """Sizes and rates of the preference pipeline; defaults from ``rlds_lang.preferences.defaults`` (the anchor)."""

    #: output folder: ``preferences/`` (RLDS logs of clips and judgements), ``checkpoint/``, ``pipeline.json``.
    out: str = "runs/preferences"
    #: clips the queue to the labeller holds before it drops (ours: small, so the agent never waits).
    clip_queue_size: int = 8
    #: labels in flight to the trainer before the labeller waits (the label queue never drops).
    label_queue_size: int = 64
    #: most recent clips the labeller pairs from (the anchor's preference interface keeps a bounded pool).
    max_clips: int = 1000
    #: pairs asked per clip received.
    pairs_per_clip: int = 1
    #: ``random`` or ``disagreement`` (the ensemble's, from the newest checkpoint; random until one exists).
    selection: str = "random"
    #: labels before reward training starts (anchor ``n_initial_prefs``).
    n_initial_preferences: int = defaults.INITIAL_PREFERENCES
    #: capacity of the circular databases, train + validation (anchor ``max_prefs_in_db``).
    database_capacity: int = defaults.DATABASE_CAPACITY
    #: share of labels routed to validation (anchor ``PREFS_VAL_FRACTION``).
    val_fraction: float = defaults.VALIDATION_FRACTION
    #: reward-training steps between checkpoints the wrapper reloads (anchor ``reward_predictor_refresh_interval``).
    checkpoint_every: int = defaults.RELOAD_EVERY_TRAINING_STEPS
    #: stop training after this many steps (labels are still received and stored); 0 = no limit.
    max_training_steps: int = 0
    #: ``False``: collect only (labels recorded and stored, no reward training).
    train: bool = True
    #: synthetic labeller: returns closer than this are "equal"; rate of random answers.
    tie_tolerance: float = defaults.TIE_TOLERANCE
    label_noise: float = 0.0
    #: seed of pair selection and labelling.
    seed: int = 0
    #: seconds ``close()`` waits for each process before terminating it.
    shutdown_timeout: float = 120.0
    #: the reward model and its training (``validation every`` = ``reward.val_every``).
    reward: RewardModelConfig = dataclasses.field(default_factory=RewardModelConfig)


def _quiet_signals() -> None:
    """In a child: SIGTERM/SIGINT are the parent's to handle (module docstring)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _labelling_process(config: PipelineConfig, clips: Any, labels: Any, counters: Any, ready: Any) -> None:
    """Pairs, labels and records clips until the end marker; then sends the end marker on to the trainer."""
    _quiet_signals()
    from loggers.preferences import PreferenceRecorder
    from rlds_lang.preferences.labellers import SyntheticLabeller, judge
    from rlds_lang.preferences.selection import PairSelector

    out = Path(config.out)
    checkpoint = out / CHECKPOINT_DIR
    selector = PairSelector(config.selection, seed=config.seed)
    labeller = SyntheticLabeller(config.tie_tolerance, config.label_noise, config.seed)
    predictor = None
    pool: list[Any] = []
    recorder = PreferenceRecorder(out / LOGS_DIR, run_name=f"pipeline-{os.getpid()}")
    session = recorder.session(f"session-{os.getpid()}", labeller=labeller.labeller_id,
                               metadata={"selection": config.selection})
    ready.set()
    try:
        while True:
            got, clip = get_or_none(clips, timeout=0.2)
            if not got:
                continue
            if isinstance(clip, str) and clip == END:
                break
            pool = (pool + [clip])[-config.max_clips:]
            if config.selection == "disagreement" and (checkpoint / "config.json").is_file():
                if predictor is None:
                    from trainers.algorithms.reward.predictor import (
                        CheckpointRewardPredictor,
                    )
                    predictor = CheckpointRewardPredictor(checkpoint, update_normalisation=False)
                predictor.reload()
                if predictor.model is not None:
                    selector.disagreement = predictor.model.disagreement
            for pair in selector.select(pool, config.pairs_per_clip):
                judgement = judge(labeller, pair.left, pair.right, pair.selection, pair.disagreement)
                session.write(judgement)  # on disk before it is sent: a label never exists only in a queue
                with counters.get_lock():
                    counters[0] += 1
                put_blocking(labels, judgement)
    finally:
        recorder.close()
        put_blocking(labels, END)


def _training_process(config: PipelineConfig, labels: Any, counters: Any, ready: Any) -> None:
    """Stores every label in the routed databases and trains the reward model (module docstring)."""
    _quiet_signals()
    import torch

    from rlds_lang.preferences.database import RoutedDatabases
    from trainers.algorithms.reward.trainer import RewardTrainerFactory

    torch.set_num_threads(1)
    out = Path(config.out)
    dbs = RoutedDatabases(config.database_capacity, config.val_fraction)
    trainer = RewardTrainerFactory(config.reward)() if config.train else None
    received, steps, last_note, saved_step, metrics = 0, 0, 0.0, -1, {}
    done = False
    ready.set()
    while not done:
        got, item = get_or_none(labels, timeout=0.05)
        while got:  # take everything waiting before the next training step
            if isinstance(item, str) and item == END:
                done = True
                break
            dbs.add(item)
            received += 1
            got, item = get_or_none(labels, timeout=0.0) if received % 256 else (False, None)
        with counters.get_lock():
            counters[1] = received
        if trainer is None or done:
            continue
        limit_reached = config.max_training_steps and steps >= config.max_training_steps
        if len(dbs) < config.n_initial_preferences or not len(dbs.train):
            if time.monotonic() - last_note > 2.0:
                print(f"waiting for preferences: {len(dbs)}/{config.n_initial_preferences}", file=sys.stderr,
                      flush=True)
                last_note = time.monotonic()
            continue
        if limit_reached:
            time.sleep(0.05)
            continue
        metrics = trainer.train_step(dbs.train.judgements(), dbs.validation.judgements())
        steps += 1
        if steps % config.checkpoint_every == 0:
            trainer.save(out / CHECKPOINT_DIR)
            saved_step = steps
    while trainer is not None and config.max_training_steps and steps < config.max_training_steps and \
            len(dbs) >= config.n_initial_preferences and len(dbs.train):  # the labels are in: finish the steps
        metrics = trainer.train_step(dbs.train.judgements(), dbs.validation.judgements())
        steps += 1
    if trainer is not None and steps and saved_step != steps:
        trainer.save(out / CHECKPOINT_DIR)
    summary = {"labels_received": received, "train_labels": len(dbs.train), "validation_labels": len(dbs.validation),
               "evicted": dbs.train.evicted + dbs.validation.evicted, "training_steps": steps,
               "last_metrics": {k: v for k, v in metrics.items() if isinstance(v, (int, float))}}
    (out / "trainer.json").write_text(json.dumps(summary, indent=2, sort_keys=True))


class PreferencePipeline:
    """Starts the labelling and training processes; ``clip_sink`` feeds them (module docstring)."""

    def __init__(self, config: PipelineConfig, wait_ready: bool = True):
        self.config = config
        self.out = Path(config.out)
        stale = [self.out / name for name in (CHECKPOINT_DIR, LOGS_DIR) if (self.out / name).exists()]
        if stale:  # an old checkpoint would be served as if trained now; old logs would mix with new ones
            raise FileExistsError(f"preference pipeline: {stale[0]} exists from an earlier run; give a new --out "
                                  f"(nothing there is overwritten)")
        self.out.mkdir(parents=True, exist_ok=True)
        context = mp.get_context("spawn")
        self._clips = context.Queue(maxsize=config.clip_queue_size)
        self._labels = context.Queue(maxsize=config.label_queue_size)
        self._counters = context.Array("q", 2)  # labels recorded, labels received by the trainer
        self._ready = [context.Event(), context.Event()]
        self.clip_sink = DroppingSink(self._clips)
        self._labeller = context.Process(target=_labelling_process, name="preference-labeller",
                                         args=(config, self._clips, self._labels, self._counters, self._ready[0]))
        self._trainer = context.Process(target=_training_process, name="reward-trainer",
                                        args=(config, self._labels, self._counters, self._ready[1]))
        self._labeller.start()
        self._trainer.start()
        if wait_ready:
            self.wait_ready()
        (self.out / "pids.json").write_text(json.dumps({"labeller": self._labeller.pid, "trainer": self._trainer.pid}))
        self.summary: dict[str, Any] = {}
        self._closed = False

    def wait_ready(self, timeout: float = 300.0) -> None:
        """Waits until both processes have started (imports done, logs open), so early clips are not dropped
        only because nobody reads yet; a process that died on the way is an error."""
        deadline = time.monotonic() + timeout
        for event, process in zip(self._ready, (self._labeller, self._trainer)):
            while not event.wait(0.2):
                if not process.is_alive() or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(f"preference pipeline: the {process.name} process did not start "
                                       f"(exit code {process.exitcode}); see its error above")

    @property
    def labels_recorded(self) -> int:
        """Labels the labelling process has recorded so far."""
        return int(self._counters[0])

    @property
    def labels_received(self) -> int:
        """Labels the training process has stored so far."""
        return int(self._counters[1])

    def predictor(self, update_normalisation: bool = True) -> Any:
        """A ``CheckpointRewardPredictor`` over this pipeline's checkpoint (no weights until the first save)."""
        from trainers.algorithms.reward.predictor import CheckpointRewardPredictor

        return CheckpointRewardPredictor(self.out / CHECKPOINT_DIR, update_normalisation)

    def wait_for_labels(self, n: int, timeout: float = 60.0) -> int:
        """Waits until the trainer has stored ``n`` labels (or ``timeout`` passes); returns how many it has."""
        deadline = time.monotonic() + timeout
        while self.labels_received < n and time.monotonic() < deadline and self._trainer.is_alive():
            time.sleep(0.05)
        return self.labels_received

    def close(self) -> dict[str, Any]:
        """Ends both processes cleanly (module docstring) and returns ``summary`` (also in ``out/pipeline.json``)."""
        if self._closed:
            return self.summary
        self._closed = True
        timeout = self.config.shutdown_timeout
        if self._labeller.is_alive():
            put_blocking(self._clips, END, alive=self._labeller.is_alive)
        terminated = []
        for process in (self._labeller, self._trainer):
            process.join(timeout)
            if process.is_alive():
                terminated.append(process.name)
                process.terminate()
                process.join(5)
                if process.is_alive():
                    process.kill()
                    process.join(5)
        for q in (self._clips, self._labels):
            q.cancel_join_thread()  # whatever is left has no reader any more: never hang on it
            q.close()
        trainer_file = self.out / "trainer.json"
        trainer = json.loads(trainer_file.read_text()) if trainer_file.is_file() else {}
        self.summary = {"clips_sent": self.clip_sink.sent, "clips_dropped": self.clip_sink.dropped,
                        "labels_recorded": self.labels_recorded, "terminated": terminated, **trainer}
        (self.out / SUMMARY_FILE).write_text(json.dumps(self.summary, indent=2, sort_keys=True))
        return self.summary

    def __enter__(self) -> "PreferencePipeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """Turns SIGTERM into ``SystemExit`` inside the block, so ``with PreferencePipeline`` closes cleanly."""
    def handler(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once is enough: finish the shutdown undisturbed
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["PipelineConfig", "PreferencePipeline", "stop_on_sigterm", "END", "SUMMARY_FILE"]
