"""Choosing episodes by return in plain numpy: the top ``p`` fraction, a return cutoff, and the on-disk cache
of a dataset's episode returns; shared by the ``tf.data`` reader (``transforms.selection``) and the data-source
reader (``transforms.data_source``), so both keep the same episodes. No TensorFlow here.

Example::

    import numpy as np
    from transforms.top_p import top_p_mask

    top_p_mask(np.array([1.0, 3.0, 3.0, 2.0]), 0.5)        # [False, True, True, False]
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Callable, Mapping

import numpy as np


def top_p_mask(returns: np.ndarray, p: float) -> np.ndarray:
    """Which episodes are among the best ``ceil(p * n)`` by return; ties go to the earlier episode.

    >>> top_p_mask(np.array([1.0, 3.0, 3.0, 2.0]), 0.5).tolist()
    [False, True, True, False]
    """
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p must be in (0, 1], got {p}")
    keep = np.zeros(len(returns), bool)
    count = math.ceil(p * len(returns))
    order = np.lexsort((np.arange(len(returns)), -np.asarray(returns, np.float64)))
    keep[order[:count]] = True
    return keep


def cached_returns(path: str | os.PathLike, key: Mapping[str, Any], compute: Callable[[], np.ndarray]) -> np.ndarray:
    """``compute()`` (every episode's return, float64, in dataset order), kept in ``path`` (``.npz``) under ``key``
    (what identifies the dataset, the split and how returns are computed): a resumed filtered-BC run reads them
    back instead of passing over every episode again. A file with another key is recomputed and replaced; the
    write is atomic.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "returns.npz")
    >>> cached_returns(path, {"dataset": "d"}, lambda: np.array([1.0, 2.0])).tolist()
    [1.0, 2.0]
    >>> cached_returns(path, {"dataset": "d"}, lambda: np.array([9.0])).tolist()  # read back, not recomputed
    [1.0, 2.0]
    """
    text = json.dumps(dict(key), sort_keys=True, default=str)
    if os.path.exists(path):
        with np.load(path) as stored:
            if str(stored["key"]) == text:
                return stored["returns"]
    returns = np.asarray(compute(), np.float64)
    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    tmp = f"{os.fspath(path)}.{os.getpid()}.tmp.npz"  # processes of one run may write it at once
    np.savez(tmp, returns=returns, key=np.array(text))
    os.replace(tmp, path)
    return returns


__all__ = ["top_p_mask", "cached_returns"]
