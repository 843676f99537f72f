"""The preference pipeline as separate processes: clips → labelling → routed databases → reward training.

As in the anchor (drlhp's wrapper starts its segment pipe, preference interface and reward-predictor
trainer as processes), the moving parts run apart so that neither a slow labeller nor reward training ever
stalls the agent:

- the environment side (``PreferenceEnv``) hands its clips to ``PreferencePipeline.clip_sink``, which puts
  them on a small queue (``clip_queue_size``) that **drops** a clip when full and counts it
  (``rlds_lang.preferences.queues.DroppingSink``);
- the labelling process puts each clip on the training or the validation side by its episode
  (``rlds_lang.preferences.database.EpisodeSplit``: validation holds out whole episodes), keeps the most
  recent ``max_clips`` clips of each side, and asks as many queries as the decaying query rate says are
  due (``rlds_lang.preferences.selection.QuerySchedule``: ``pairs_per_clip`` per clip at first, falling as
  ``T0 / (T0 + clips)`` with ``T0 = query_timescale`` clips; a query no pair can serve yet waits for the
  next clip). Each query is an unasked pair of clips **of one side** (``PairSelector``: random, or by the
  ensemble's disagreement using the newest checkpoint), so no judgement straddles the two; it is labelled
  (``SyntheticLabeller``), recorded through ``loggers.preferences`` (flushed before it goes on) and sent on
  a queue that **never drops** (``put_blocking``);
- the training process routes each label into the training or the validation database
  (``RoutedDatabases``), waits for ``n_initial_preferences`` labels (printing ``waiting for preferences:
  n/40``), then trains the reward ensemble (``trainers.algorithms.reward.trainer.RewardModelTrainer``) and writes
  ``out/checkpoint`` atomically every ``checkpoint_every_epochs`` epochs over the training database (the
  anchor's unit; ``checkpoint_every`` counts optimizer steps instead when given; at the end, it completes
  ``max_training_steps`` on the labels it holds before the last save); the wrapper's
  ``CheckpointRewardPredictor`` (``PreferencePipeline.predictor()``) reloads it, and switches to it after
  ``n_initial_training_epochs`` epochs.

Shutdown: ``close()`` (also on leaving ``with``, and on SIGTERM through ``stop_on_sigterm``) puts an end
marker behind the last clip, lets the labeller finish what it holds and pass the end on, lets the trainer
store every label and save a last checkpoint, then joins both. The whole shutdown takes at most
``shutdown_timeout`` seconds: a process still running then is killed, so no process outlives the pipeline.
The children ignore SIGTERM/SIGINT (a signal to the whole process group must not cut them off mid-write):
the parent decides when they stop, and a child whose parent is gone stops by itself, or is ended within a
second if it is busy
(``trainers.algorithms.reward.supervision``). ``out/pipeline.json`` holds the counts (clips sent and
dropped, labels recorded and received, database sizes, training steps) and any child failure.

Failures: a child that dies (an exception, a signal) stops the pipeline with the child's error. The next
clip the environment hands over, ``wait_for_labels`` and ``close()`` raise ``PipelineError`` naming the
child, its exit code and the last line of its traceback (the whole traceback is in ``details`` and in
``pipeline.json``); the other child is told to stop and is killed if it does not within the shutdown
timeout. The predicted reward is never served from a pipeline whose trainer is gone, and no clip is dropped
silently on the floor of a dead labeller. Every label the labeller counted (``labels_recorded``) was
flushed to the RLDS log before it was counted, so it is on disk whatever happens afterwards.

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

import atexit
import contextlib
import json
import math
import multiprocessing as mp
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from rlds_lang.preferences.queues import DroppingSink, get_or_none, put_blocking
from trainers.algorithms.reward.config import PipelineConfig
from trainers.algorithms.reward.supervision import ChildSet, ChildWatch, PipelineError

#: end marker sent behind the last clip and the last label.
END = "__end__"
SUMMARY_FILE = "pipeline.json"
#: names of the child processes (in errors, ``pipeline.json`` and ``ps``).
LABELLER, TRAINER = "preference-labeller", "reward-trainer"
LOGS_DIR = "preferences"
CHECKPOINT_DIR = "checkpoint"


def _labelling_process(watch: ChildWatch, config: PipelineConfig, clips: Any, labels: Any, counters: Any,
                       ready: Any) -> None:
    """Pairs, labels and records clips until the end marker (or until ``watch`` says stop); then sends the end
    marker on to the trainer."""
    from loggers.preferences import PreferenceRecorder
    from rlds_lang.preferences.database import TRAIN, VALIDATION, EpisodeSplit
    from rlds_lang.preferences.labellers import SyntheticLabeller, judge
    from rlds_lang.preferences.selection import PairSelector, QuerySchedule

    out = Path(config.out)
    checkpoint = out / CHECKPOINT_DIR
    selector = PairSelector(config.selection, seed=config.seed)
    labeller = SyntheticLabeller(config.tie_tolerance, config.label_noise, config.seed)
    splitter = EpisodeSplit(config.val_fraction)
    schedule = QuerySchedule(config.pairs_per_clip, config.query_timescale)
    most_owed = 4 * max(1, math.ceil(config.pairs_per_clip))  # queries waiting for pairs, at most
    predictor = None
    pools: dict[str, list[Any]] = {TRAIN: [], VALIDATION: []}
    owed = 0
    recorder = PreferenceRecorder(out / LOGS_DIR, run_name=f"pipeline-{os.getpid()}")
    session = recorder.session(f"session-{os.getpid()}", labeller=labeller.labeller_id,
                               metadata={"selection": config.selection})
    ready.set()
    delivering = lambda: not watch.stopped()  # noqa: E731 -- a trainer that is gone never frees room
    try:
        while not watch.stopped():
            got, clip = get_or_none(clips, timeout=0.2)
            if not got:
                continue
            if isinstance(clip, str) and clip == END:
                break
            side = splitter.side(clip)
            pools[side] = (pools[side] + [clip])[-config.max_clips:]
            owed = min(owed + schedule.advance(1), most_owed)
            if config.selection == "disagreement" and (checkpoint / "config.json").is_file():
                if predictor is None:
                    from trainers.algorithms.reward.predictor import (
                        CheckpointRewardPredictor,
                    )
                    predictor = CheckpointRewardPredictor(checkpoint, update_normalisation=False)
                predictor.reload()
                if predictor.model is not None:
                    selector.disagreement = predictor.model.disagreement
            chosen: list[Any] = []
            for pool in (pools[side], pools[VALIDATION if side == TRAIN else TRAIN]):  # its own side first
                chosen += selector.select(pool, owed - len(chosen))
            owed -= len(chosen)
            for pair in chosen:
                judgement = judge(labeller, pair.left, pair.right, pair.selection, pair.disagreement)
                session.write(judgement)  # on disk before it is sent: a label never exists only in a queue
                with counters.get_lock():
                    counters[0] += 1
                if not put_blocking(labels, judgement, alive=delivering, poll=0.2):
                    return  # stopped while the trainer did not take it: it is on disk, the pipeline is failing
    finally:
        recorder.close()
        (out / "labeller.json").write_text(json.dumps({"queries_due": schedule.issued, "queries_waiting": owed,
                                                       "clips": {k: len(v) for k, v in pools.items()}}))
        put_blocking(labels, END, alive=delivering, poll=0.2)
        if watch.stopped():
            labels.cancel_join_thread()  # labels still buffered for a trainer that is gone: exit without them


def _training_process(watch: ChildWatch, config: PipelineConfig, labels: Any, counters: Any, ready: Any) -> None:
    """Stores every label in the routed databases and trains the reward model (module docstring); when ``watch``
    says stop, it stores what is queued, writes its summary and ends without training further."""
    import torch

    from rlds_lang.preferences.database import RoutedDatabases
    from trainers.algorithms.reward.trainer import RewardTrainerFactory

    torch.set_num_threads(1)
    out = Path(config.out)
    dbs = RoutedDatabases(config.database_capacity, config.val_fraction)
    trainer = RewardTrainerFactory(config.reward)() if config.train else None
    received, steps, last_note, saved_step, saved_epochs, metrics = 0, 0, 0.0, -1, 0.0, {}
    done = stopped = False
    ready.set()
    while not done:
        stopped = watch.stopped()
        got, item = get_or_none(labels, timeout=0.0 if stopped else 0.05)
        took = 0
        while got:  # take everything waiting before the next training step
            if isinstance(item, str) and item == END:
                done = True
                break
            dbs.add(item)
            received += 1
            took += 1
            got, item = get_or_none(labels, timeout=0.0) if took % 256 else (False, None)
        with counters.get_lock():
            counters[1] = received
        if stopped and not took:
            break  # told to stop and nothing more is queued
        if trainer is None or done or stopped:
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
        if checkpoint_due(config, steps, trainer.epochs, saved_epochs):
            trainer.save(out / CHECKPOINT_DIR)
            saved_step, saved_epochs = steps, trainer.epochs
    while trainer is not None and not stopped and config.max_training_steps and steps < config.max_training_steps and \
            len(dbs) >= config.n_initial_preferences and len(dbs.train):  # the labels are in: finish the steps
        metrics = trainer.train_step(dbs.train.judgements(), dbs.validation.judgements())
        steps += 1
    if trainer is not None and steps and saved_step != steps:
        trainer.save(out / CHECKPOINT_DIR)
    summary = {"stopped_early": stopped, "labels_received": received, "train_labels": len(dbs.train),
               "validation_labels": len(dbs.validation), "evicted": dbs.train.evicted + dbs.validation.evicted,
               "straddling": dbs.straddling, "training_steps": steps,
               "training_epochs": trainer.epochs if trainer is not None else 0.0,
               "last_metrics": {k: v for k, v in metrics.items() if isinstance(v, (int, float))}}
    (out / "trainer.json").write_text(json.dumps(summary, indent=2, sort_keys=True))


def checkpoint_due(config: PipelineConfig, steps: int, epochs: float, saved_epochs: float) -> bool:
    """Whether the trainer saves after optimizer step ``steps``: every ``checkpoint_every`` steps when given,
    else whenever ``epochs`` enters a new block of ``checkpoint_every_epochs`` epochs since ``saved_epochs``."""
    if config.checkpoint_every is not None:
        return steps % config.checkpoint_every == 0
    every = config.checkpoint_every_epochs
    return math.floor(epochs / every + 1e-9) > math.floor(saved_epochs / every + 1e-9)


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
        self.summary: dict[str, Any] = {}
        self._closed = False
        self.clip_sink = DroppingSink(self._clips, check=self.check)
        self._children = ChildSet(context)
        self._labeller = self._children.start(LABELLER, _labelling_process,
                                              (config, self._clips, self._labels, self._counters, self._ready[0]))
        self._trainer = self._children.start(TRAINER, _training_process,
                                             (config, self._labels, self._counters, self._ready[1]))
        (self.out / "pids.json").write_text(json.dumps({"labeller": self._labeller.pid, "trainer": self._trainer.pid}))
        atexit.register(self._close_at_exit)  # a program that never closes must not hang at exit on its children
        if wait_ready:
            self.wait_ready()

    def wait_ready(self, timeout: float = 300.0) -> None:
        """Waits until both processes have started (imports done, logs open), so early clips are not dropped
        only because nobody reads yet; a process that died on the way raises its ``PipelineError``."""
        deadline = time.monotonic() + timeout
        for event, process in zip(self._ready, (self._labeller, self._trainer)):
            while not event.wait(0.2):
                failure = self._children.failure()
                if failure is not None or time.monotonic() > deadline:
                    self.close(raise_on_failure=False)
                    raise failure or PipelineError(f"preference pipeline: the {process.name} process did not "
                                                   f"start within {timeout} s")

    def check(self) -> None:
        """Raises ``PipelineError`` (the child's name, exit code and error) if a child process has ended while
        the pipeline is open: the environment side calls it with every clip and every checkpoint reload."""
        if not self._closed:
            self._children.check()

    @property
    def labels_recorded(self) -> int:
        """Labels the labelling process has recorded (flushed to disk) so far."""
        return int(self._counters[0])

    @property
    def labels_received(self) -> int:
        """Labels the training process has stored so far."""
        return int(self._counters[1])

    def predictor(self, update_normalisation: bool = True) -> Any:
        """A ``CheckpointRewardPredictor`` over this pipeline's checkpoint (no weights until the first save); its
        ``reload`` raises ``PipelineError`` once a child has failed, so a stale reward is never served on."""
        from trainers.algorithms.reward.predictor import CheckpointRewardPredictor

        return CheckpointRewardPredictor(self.out / CHECKPOINT_DIR, update_normalisation, guard=self.check)

    def wait_for_labels(self, n: int, timeout: float = 60.0) -> int:
        """Waits until the trainer has stored ``n`` labels (or ``timeout`` passes); returns how many it has.
        Raises ``PipelineError`` if a child fails meanwhile."""
        deadline = time.monotonic() + timeout
        while self.labels_received < n and time.monotonic() < deadline:
            self.check()
            time.sleep(0.05)
        return self.labels_received

    def close(self, raise_on_failure: bool = True) -> dict[str, Any]:
        """Ends both processes within ``shutdown_timeout`` seconds (module docstring) and returns ``summary``
        (also in ``out/pipeline.json``). Raises ``PipelineError`` if a child failed or had to be killed (unless
        ``raise_on_failure`` is false: the caller is already raising)."""
        if self._closed:
            return self.summary
        self._closed = True
        atexit.unregister(self._close_at_exit)
        deadline = time.monotonic() + self.config.shutdown_timeout
        if self._children.failure() is not None:
            self._children.stop.set()   # a child is gone: the other one must not wait for it
        elif self._labeller.is_alive():
            put_blocking(self._clips, END, alive=lambda: self._labeller.is_alive() and time.monotonic() < deadline,
                         poll=0.1)
        report = self._children.join(deadline)
        for q in (self._clips, self._labels):
            q.cancel_join_thread()  # whatever is left has no reader any more: never hang on it
            q.close()
        written = {}  # what each child wrote when it ended
        for name in ("labeller.json", "trainer.json"):
            if (self.out / name).is_file():
                written.update(json.loads((self.out / name).read_text()))
        self.summary = {"clips_sent": self.clip_sink.sent, "clips_dropped": self.clip_sink.dropped,
                        "labels_recorded": self.labels_recorded, "terminated": report.killed,
                        "exit_codes": report.exit_codes, "failures": report.failures(), **written}
        (self.out / SUMMARY_FILE).write_text(json.dumps(self.summary, indent=2, sort_keys=True))
        if raise_on_failure:
            self._children.raise_for(report)
        return self.summary

    def _close_at_exit(self) -> None:
        try:
            self.close(raise_on_failure=False)
        except Exception as error:  # noqa: BLE001 -- at exit, report and let the interpreter finish
            print(f"preference pipeline: closing at exit failed: {error}", file=sys.stderr)

    def __enter__(self) -> "PreferencePipeline":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.close(raise_on_failure=exc_type is None)  # an error already on its way is not masked


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


__all__ = ["PipelineConfig", "PipelineError", "PreferencePipeline", "checkpoint_due", "stop_on_sigterm", "END", "LABELLER",
           "SUMMARY_FILE", "TRAINER"]
