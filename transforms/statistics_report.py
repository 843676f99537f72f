"""The statistics of an RLDS dataset as a value: ``DatasetStatistics``, with its summary, table and histograms.

``transforms.statistics.compute_statistics`` measures a dataset and returns one; this module only holds what was
found (read-only numpy arrays) and presents it: ``summary`` (a flat dict of floats), ``table`` (plain text) and
``plot`` (three histograms in a PNG; matplotlib is imported there, Agg canvas, never at import time).
"""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
from typing import Any

import numpy as np

QUANTITIES = ("return", "episode_length", "action_length", "action_words")
_LABELS = {
    "return": "return",
    "episode_length": "episode length (actions)",
    "action_length": "action length (chars)",
    "action_words": "action length (words)",
}
_COLUMNS = ("count", "mean", "std", "min", "p25", "median", "p75", "max")


def _frozen(values: Any, dtype: Any) -> np.ndarray:
    array = np.array(values, dtype=dtype).reshape(-1)
    array.setflags(write=False)
    return array


def _describe(values: np.ndarray) -> dict[str, float]:
    """count/mean/std (population, ddof=0)/min/p25/median/p75/max; NaN statistics when there is no value."""
    values = np.asarray(values, np.float64)
    if values.size == 0:
        return {"count": 0.0, **{column: math.nan for column in _COLUMNS[1:]}}
    p25, median, p75 = np.quantile(values, [0.25, 0.5, 0.75])
    return {"count": float(values.size), "mean": float(values.mean()), "std": float(values.std()),
            "min": float(values.min()), "p25": float(p25), "median": float(median), "p75": float(p75),
            "max": float(values.max())}


def _format(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.3f}"


@dataclasses.dataclass(frozen=True, eq=False)
class DatasetStatistics:
    """What ``compute_statistics`` found in a dataset (arrays are read-only numpy arrays, in dataset order).

    Attributes:
      episodes: complete episodes (closed by an ``is_last`` step).
      steps: all RLDS steps read, ``is_last`` steps included.
      actions: non-last steps of complete episodes (each holds an action).
      terminated: episodes whose ``is_last`` step has ``is_terminal`` set.
      truncated: the other episodes (ended by a time limit or cut short; ``episodes - terminated``).
      wins: terminated episodes with at least one action whose final action earned ``>= win_reward``.
      win_reward: the threshold ``wins`` used; ``None`` when the task has no win rule (no win rate).
      returns: float64 ``[episodes]``, the sum of each episode's rewards over its non-last steps (NaN when
        the steps have no reward field).
      episode_lengths: int64 ``[episodes]``, actions per episode.
      action_lengths: int64 ``[actions]``, Unicode code points of each action text (an emoji such as
        "🟩" or a CJK character such as "二" counts 1; a ZWJ emoji sequence counts its code points). Empty
        when the steps have no text action.
      action_words: int64 ``[actions]``, whitespace-separated words of each action text.
      action_field: the ``/``-joined path of the text field measured as the action, or ``None``.

    >>> stats = DatasetStatistics(episodes=1, steps=3, actions=2, terminated=1, truncated=0, wins=1,
    ...                           win_reward=0.0, returns=[-1.0], episode_lengths=[2],
    ...                           action_lengths=[5, 5], action_words=[1, 1], action_field="action")
    >>> stats.win_rate, stats.summary()["return_mean"], stats.returns.dtype
    (1.0, -1.0, dtype('float64'))
    """

    episodes: int
    steps: int
    actions: int
    terminated: int
    truncated: int
    wins: int
    win_reward: float | None
    returns: np.ndarray
    episode_lengths: np.ndarray
    action_lengths: np.ndarray
    action_words: np.ndarray
    action_field: str | None = "action"

    def __post_init__(self) -> None:
        object.__setattr__(self, "returns", _frozen(self.returns, np.float64))
        object.__setattr__(self, "episode_lengths", _frozen(self.episode_lengths, np.int64))
        object.__setattr__(self, "action_lengths", _frozen(self.action_lengths, np.int64))
        object.__setattr__(self, "action_words", _frozen(self.action_words, np.int64))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DatasetStatistics):
            return NotImplemented
        for field in dataclasses.fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if isinstance(mine, np.ndarray):
                if not np.array_equal(mine, theirs, equal_nan=True):
                    return False
            elif mine != theirs:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]  # mutable-looking arrays inside: not hashable

    @property
    def win_rate(self) -> float:
        """``wins / episodes`` (NaN without episodes, without rewards or without a win rule).

        >>> DatasetStatistics(2, 6, 4, 2, 0, 1, 0.0, [-1.0, -3.0], [2, 2], [], []).win_rate
        0.5
        """
        if self.win_reward is None or self.episodes == 0 or np.isnan(self.returns).any():
            return math.nan
        return self.wins / self.episodes

    def _values(self, quantity: str) -> np.ndarray:
        return {"return": self.returns, "episode_length": self.episode_lengths,
                "action_length": self.action_lengths, "action_words": self.action_words}[quantity]

    def summary(self) -> dict[str, float]:
        """Counts, win rate, and ``<quantity>_<statistic>`` for every quantity and statistic, as floats.

        Quantities: ``return``, ``episode_length``, ``action_length`` (characters), ``action_words``;
        statistics: ``count``, ``mean``, ``std`` (population), ``min``, ``p25``, ``median``, ``p75``,
        ``max`` (quantiles interpolate linearly). NaN where there is nothing to summarise.

        >>> s = DatasetStatistics(2, 6, 4, 2, 0, 1, 0.0, [-1.0, -3.0], [2, 2], [5, 5, 1, 3], [1, 1, 1, 1])
        >>> s.summary()["return_mean"], s.summary()["action_length_median"], s.summary()["episodes"]
        (-2.0, 4.0, 2.0)
        """
        out = {"episodes": float(self.episodes), "steps": float(self.steps), "actions": float(self.actions),
               "terminated": float(self.terminated), "truncated": float(self.truncated),
               "win_rate": float(self.win_rate)}
        for quantity in QUANTITIES:
            for column, value in _describe(self._values(quantity)).items():
                out[f"{quantity}_{column}"] = value
        return out

    def table(self) -> str:
        """A plain-text table: a line of counts (and the win rate, when there is a win rule), then one row per
        quantity and one column per statistic.

        Integral values print without decimals, others with three.

        >>> s = DatasetStatistics(2, 7, 5, 1, 1, 1, 0.0, [-1.0, -3.0], [2, 3], [5, 5, 3, 1, 0], [1, 1, 1, 1, 0])
        >>> print(s.table())  # doctest: +NORMALIZE_WHITESPACE
        episodes 2  steps 7  actions 5  terminated 1  truncated 1  win rate 0.500 (final reward >= 0)
        quantity                  count   mean    std  min    p25  median    p75  max
        return                        2     -2      1   -3 -2.500     -2 -1.500   -1
        episode length (actions)      2  2.500  0.500    2  2.250  2.500  2.750    3
        action length (chars)         5  2.800  2.040    0      1      3      5    5
        action length (words)         5  0.800  0.400    0      1      1      1    1
        """
        head = (f"episodes {self.episodes}  steps {self.steps}  actions {self.actions}  "
                f"terminated {self.terminated}  truncated {self.truncated}")
        if self.win_reward is not None:
            head += f"  win rate {self.win_rate:.3f} (final reward >= {_format(self.win_reward)})"
        rows = [["quantity", *_COLUMNS]]
        for quantity in QUANTITIES:
            described = _describe(self._values(quantity))
            rows.append([_LABELS[quantity], *(_format(described[column]) for column in _COLUMNS)])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = [head]
        for row in rows:
            cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike, title: str | None = None) -> pathlib.Path:
        """Writes a PNG with three histograms (returns, episode lengths, action lengths); returns its path.

        Each panel has a title with its count and mean, axis labels and the count above every bar (when
        there are at most 40 bars). Integer-valued data get one bar per integer. matplotlib is imported
        here, drawing on an Agg canvas (no display, no change to the global pyplot backend).

        >>> import tempfile
        >>> s = DatasetStatistics(2, 7, 5, 1, 1, 1, 0.0, [-1.0, -3.0], [2, 3], [5, 5, 3, 1, 0], [1, 1, 1, 1, 0])
        >>> out = s.plot(os.path.join(tempfile.mkdtemp(), "stats.png"))
        >>> out.read_bytes()[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
        True
        """
        try:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
        except ImportError as error:  # e.g. the legacy TF 2.15 environment, which has no matplotlib
            raise ImportError("DatasetStatistics.plot needs matplotlib: pip install -c constraints.txt matplotlib"
                              ) from error

        figure = Figure(figsize=(15, 4.5), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots(1, 3)
        panels = [
            (self.returns, "Return distribution", "return (sum of rewards over actions)", "episodes"),
            (self.episode_lengths, "Episode length distribution", "episode length (actions)", "episodes"),
            (self.action_lengths, "Action length distribution",
             f"action length (Unicode characters of {self.action_field!r})", "actions"),
        ]
        for ax, (values, name, xlabel, unit) in zip(axes, panels):
            _histogram(ax, np.asarray(values, np.float64), name, xlabel, unit)
        wins = "" if self.win_reward is None else f"; win rate {self.win_rate:.3f}"
        figure.suptitle(title or (f"{self.episodes} episodes, {self.steps} steps, {self.actions} actions; "
                                  f"{self.terminated} terminated, {self.truncated} truncated{wins}"))
        out = pathlib.Path(path)
        if out.parent and not out.parent.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(out, format="png", dpi=100)
        return out


def _histogram(ax: Any, values: np.ndarray, name: str, xlabel: str, unit: str) -> None:
    from matplotlib.ticker import MaxNLocator

    values = values[np.isfinite(values)]
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"{unit} (count)")
    if values.size == 0:
        ax.set_title(f"{name} (no data)")
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return
    low, high = float(values.min()), float(values.max())
    integral = bool(np.all(values == np.round(values)))
    if integral and high - low <= 60:
        edges = np.arange(low - 0.5, high + 1.5, 1.0)
    else:
        auto = np.histogram_bin_edges(values, bins="auto")
        edges = np.histogram_bin_edges(values, bins=max(1, min(50, len(auto) - 1)))
    counts, _, bars = ax.hist(values, bins=edges, color="#4c72b0", edgecolor="white")
    if len(counts) <= 40:
        ax.bar_label(bars, labels=[str(int(c)) if c else "" for c in counts], fontsize=8)
    if integral and high - low <= 20:
        ax.set_xticks(np.arange(low, high + 1.0))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.margins(y=0.12)
    ax.set_title(f"{name} (n={values.size} {unit}, mean {values.mean():.2f})")


__all__ = ["DatasetStatistics", "QUANTITIES"]
