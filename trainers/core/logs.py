"""What every training loop writes while it runs, whatever it trains: ``RunLog`` gathers it for one run (the
output folder's ``config.json``, ``metrics.jsonl`` and TensorBoard scalars cut back to the step a run resumes from,
the progress bar, windowed metric means, throughput, the checkpoint cadence and ``training_curves.png`` at the end).
Its parts: ``MetricsLog`` (the sinks), ``MetricWindow`` (means of each logging window), ``Throughput`` (tokens per
second and the share of time spent waiting for data), ``truncate_metrics_after`` and ``elapsed_seconds``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Callable


def elapsed_seconds(before: float | None, clock: "Throughput") -> float | None:
    """A run's training seconds so far, for the checkpoint about to be saved: those recorded in the checkpoint
    it resumed from (``before``; None when that checkpoint did not record them) plus this call's loop."""
    return None if before is None else before + clock.seconds()


class Throughput:
    """Tokens and data-wait time, per logging window and overall (both from the end of the first step)."""

    def __init__(self):
        self.started = time.perf_counter()
        self.steady_start: float | None = None
        self.total_tokens = self.total_wait = 0.0
        self.window_start = self.started
        self.window_tokens = self.window_wait = 0.0
        self._pending_wait = 0.0
        self.steady_steps = 0

    def waited(self, seconds: float) -> None:
        """Records how long the coming step waited for its data."""
        self._pending_wait = seconds

    def step_done(self, tokens: int) -> None:
        """Counts a finished step of ``tokens`` tokens (the first one starts the clock instead)."""
        now = time.perf_counter()
        if self.steady_start is None:  # the first step: start-up, not throughput
            self.steady_start = self.window_start = now
            return
        self.steady_steps += 1
        self.total_tokens += tokens
        self.total_wait += self._pending_wait
        self.window_tokens += tokens
        self.window_wait += self._pending_wait

    def window(self) -> dict[str, float]:
        """``tokens_per_second`` and ``data_wait_share`` since the last call (resets the window)."""
        now = time.perf_counter()
        span = now - self.window_start
        out = {"tokens_per_second": self.window_tokens / span if span > 0 else 0.0,
               "data_wait_share": self.window_wait / span if span > 0 else 0.0}
        self.window_start, self.window_tokens, self.window_wait = now, 0.0, 0.0
        return out

    def seconds(self) -> float:
        """Seconds since this clock started (the loop's wall time)."""
        return time.perf_counter() - self.started

    def overall(self) -> tuple[float, float]:
        """``(tokens_per_second, data_wait_share)`` from the end of the first step to now."""
        if self.steady_start is None:
            return 0.0, 0.0
        span = time.perf_counter() - self.steady_start
        return (self.total_tokens / span, self.total_wait / span) if span > 0 else (0.0, 0.0)

    def steps_per_second(self) -> float:
        """Steps per second from the end of the first step to now (0 before a second step)."""
        if self.steady_start is None or self.steady_steps == 0:
            return 0.0
        return self.steady_steps / (time.perf_counter() - self.steady_start)


class MetricsLog:
    """Process 0's sinks: metrics.jsonl and TensorBoard (opened lazily, closed by ``close``)."""

    def __init__(self, out: Path, enabled: bool):
        self.enabled = enabled
        self.path = out / "metrics.jsonl"
        self._tb = None
        if enabled:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(out / "tb"))

    def write(self, step: int, metrics: dict[str, float]) -> None:
        """Appends one row ``{"step": step, **metrics}`` to metrics.jsonl and the same scalars to TensorBoard."""
        if not self.enabled:
            return
        with self.path.open("a") as f:
            f.write(json.dumps({"step": step, **metrics}) + "\n")
        for key, value in metrics.items():
            self._tb.add_scalar(key, value, step)
        self._tb.flush()

    def close(self) -> None:
        """Closes the TensorBoard writer."""
        if self._tb is not None:
            self._tb.close()


def truncate_metrics_after(path: Path, step: int) -> None:
    """Drops logged rows past ``step`` (written after the checkpoint a run resumes from)."""
    if not path.exists():
        return
    rows = [line for line in path.read_text().splitlines() if line and json.loads(line)["step"] <= step]
    path.write_text("".join(row + "\n" for row in rows))


class MetricWindow:
    """Sums each step's metrics; every ``log_every`` steps (and at the last) writes their means to ``logs``."""

    def __init__(self, logs: MetricsLog, log_every: int, last_step: int):
        self.logs, self.log_every, self.last_step = logs, log_every, last_step
        self.sums: dict[str, float] = {}
        self.count = 0
        self.last: dict[str, float] = {}

    def add(self, step: int, metrics: dict, extra: Callable[[], dict[str, float]] | None = None) -> None:
        """Adds one step's metrics; ``extra()`` supplies what a written row adds (learning rate, throughput)."""
        for key, value in metrics.items():
            self.sums[key] = self.sums.get(key, 0.0) + float(value)
        self.count += 1
        if step % self.log_every and step != self.last_step:
            return
        self.last = {**{k: v / self.count for k, v in self.sums.items()}, **(extra() if extra else {})}
        self.logs.write(step, self.last)
        self.sums, self.count = {}, 0


class RunLog:
    """The bookkeeping of one training run, the same for every algorithm's loop.

    On creation (process 0 only, ``enabled``): makes ``out``, cuts ``metrics.jsonl`` back to ``start`` (rows
    written after the checkpoint a run resumes from) and opens the progress bar at ``start`` of ``total``. Each
    ``step_done`` feeds the throughput clock, the metric window (a row of means every ``log_every`` steps and at the
    last; with ``snapshot``, that step's own metrics) and the bar; ``checkpoint_due`` says when the loop saves; ``close`` closes the sinks and draws
    ``training_curves.png`` from ``metrics.jsonl`` (unless ``trainers.core.plots.CURVES_ENV`` is ``0``).
    """

    def __init__(self, out: str | Path, algorithm: str, total: int, start: int = 0, log_every: int = 1,
                 checkpoint_every: int = 1, enabled: bool = True, progress: bool = True, unit: str = "step",
                 title: str | None = None, snapshot: bool = False):
        self.out = Path(out)
        self.algorithm = algorithm
        self.total, self.checkpoint_every = total, checkpoint_every
        self.enabled = enabled
        self.title = title or algorithm
        if enabled:
            self.out.mkdir(parents=True, exist_ok=True)
        self.metrics = MetricsLog(self.out, enabled)
        if enabled:
            truncate_metrics_after(self.metrics.path, start)
        self.window = MetricWindow(self.metrics, log_every, total)
        #: write a row step's own metrics instead of the window's means (for metrics that are already summaries
        #: or that only some steps have, such as a validation every few steps)
        self.snapshot = snapshot
        # throughput is measured from the end of the first step: that one also pays for start-up (opening the
        # data, filling a shuffle buffer, the first forward pass)
        self.clock = Throughput()
        self.bar = None
        if progress and enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, initial=start, desc=f"train {algorithm}", unit=unit)

    def write_config(self, config: Any, **extra: Any) -> None:
        """Writes ``config.json``: the algorithm, its config dataclass and ``extra`` facts of the run."""
        if self.enabled:
            (self.out / "config.json").write_text(json.dumps(
                {"algorithm": self.algorithm, "config": dataclasses.asdict(config), **extra}, indent=2))

    def step_done(self, step: int, metrics: dict[str, Any], tokens: int = 0,
                  extra: Callable[[], dict[str, float]] | None = None, postfix: dict[str, str] | None = None) -> None:
        """Records finished step ``step``: its ``tokens`` for the throughput, its ``metrics`` for the window (a
        written row adds ``extra()``), and the bar (with ``postfix``)."""
        self.clock.step_done(tokens)
        if not self.snapshot:
            self.window.add(step, metrics, extra)
        elif step % self.window.log_every == 0 or step == self.total:
            self.window.last = {**metrics, **(extra() if extra else {})}
            self.metrics.write(step, self.window.last)
        if self.bar is not None:
            self.bar.update(1)
            if postfix:
                self.bar.set_postfix(**postfix)

    def throughput_row(self, lr: float) -> dict[str, float]:
        """What a written row of a token-batch loop adds: the learning rate and the window's throughput."""
        return {"lr": lr, **self.clock.window()}

    def checkpoint_due(self, step: int) -> bool:
        """Whether the loop saves its checkpoint after ``step`` (every ``checkpoint_every`` steps and at the last)."""
        return step % self.checkpoint_every == 0 or step == self.total

    @property
    def last(self) -> dict[str, float]:
        """The metrics of the last written row."""
        return self.window.last

    def close(self) -> None:
        """Closes the bar and the sinks and draws ``training_curves.png`` (process 0, when rows were written, unless
        ``trainers.core.plots.CURVES_ENV`` is ``0``)."""
        if self.bar is not None:
            self.bar.close()
        self.metrics.close()
        if self.enabled and self.metrics.path.exists():
            from trainers.core.plots import curves_wanted, plot_training_curves

            if curves_wanted():
                plot_training_curves(self.metrics.path, self.out / "training_curves.png", title=self.title)


__all__ = ["RunLog", "MetricsLog", "MetricWindow", "Throughput", "truncate_metrics_after", "elapsed_seconds"]
