"""Training curves as a PNG: one panel per logged metric of ``metrics.jsonl`` against the optimizer step.

Example::

    from trainers.core.plots import plot_training_curves

    plot_training_curves("runs/ilql/metrics.jsonl", "runs/ilql/training_curves.png", title="ILQL")
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

#: metrics that describe throughput rather than learning; drawn last.
_SYSTEM = ("lr", "tokens_per_second", "data_wait_share")
#: set to ``0`` to have training runs skip ``training_curves.png`` (matplotlib's layout costs a second or more per
#: run: it dominates sweeps of many short runs, and the test suite sets it); anything else, or unset, draws it.
CURVES_ENV = "RLDS_LANG_TRAINING_CURVES"


def curves_wanted() -> bool:
    """Whether a training run draws ``training_curves.png`` when it closes (``CURVES_ENV`` is not ``0``)."""
    return os.environ.get(CURVES_ENV, "1").strip() != "0"


def read_metrics(path: str | os.PathLike) -> list[dict[str, float]]:
    """The rows of a ``metrics.jsonl``; a malformed line raises ``ValueError`` naming the file and line."""
    rows = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{number}: not a JSON object ({e})") from None
    return rows


def plot_training_curves(metrics_path: str | os.PathLike, png_path: str | os.PathLike, title: str = "") -> Path:
    """Draws every metric of ``metrics_path`` against ``step`` into ``png_path`` (returned)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(metrics_path)
    if not rows:
        raise ValueError(f"{metrics_path}: no metrics to plot")
    keys = sorted({k for row in rows for k in row if k != "step"}, key=lambda k: (k in _SYSTEM, k))
    cols = min(4, len(keys))
    nrows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.6 * cols, 2.6 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        points = [(row["step"], row[key]) for row in rows if key in row]
        ax.plot([p[0] for p in points], [p[1] for p in points], lw=1.2)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    png_path = Path(png_path)
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return png_path


__all__ = ["CURVES_ENV", "curves_wanted", "read_metrics", "plot_training_curves"]
