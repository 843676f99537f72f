"""Conformance of the batching, realignment and moment transformations (``batch`` and its per-episode form,
``shift_keys``, ``mean_and_std`` with ``sar_fields_mask``) with ``rlds.transformations``, on random episodes
(``tests/legacy/conformance.py``) and on every size/shift/stride/drop_remainder combination of one episode."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import transforms as T  # ours (torch-free modules only)
from tests.legacy.conformance import (
    RLDS_BATCH,
    SETTINGS,
    R,
    assert_same,
    each_episode_steps,
    episode_lists,
    episodes_dataset,
    numeric_view,
    same,
    steps_dataset,
    tf,
    to_numpy,
)


@SETTINGS
@given(episode_lists(), st.integers(1, 5), st.sampled_from([None, 1, 2, 3, 5]), st.integers(1, 3), st.booleans())
def test_batch(data, size, shift, stride, drop_remainder):
    steps = each_episode_steps(data)[0]
    same(T.batch(steps, size, shift, stride, drop_remainder), R.batch(steps, size, shift, stride, drop_remainder))


BATCH_GRID = list(itertools.product([1, 2, 3, 5], [None, 1, 2, 4], [1, 2], [False, True]))  # 64 combinations


@pytest.mark.parametrize("variant", ["numeric", "strings"])
def test_batch_full_grid_on_one_episode(variant):  # ~30 s each on 2 CPUs
    """Every size/shift/stride/drop_remainder combination on a fixed 7-step episode."""
    steps = []
    for t in range(7):
        base = {"is_first": t == 0, "is_last": t == 6, "is_terminal": t == 6}
        if variant == "numeric":
            steps.append({"observation": {"text": f"o{t}\x00", "vec": [t, -t, 0.5 * t]}, "action": f"a{t}",
                          "reward": float(t), "discount": 1.0, **base})
        else:
            steps.append({"observation": f"o{t}", "action": f"a{t}", "reward": str(t), "discount": "1", **base})
    ds = steps_dataset(steps, variant, "string")
    failures = []
    for size, shift, stride, drop in BATCH_GRID:
        try:
            same(T.batch(ds, size, shift, stride, drop), R.batch(ds, size, shift, stride, drop))
        except Exception as e:  # collect every failing combination, then fail once
            failures.append(f"size={size} shift={shift} stride={stride} drop_remainder={drop}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)


def _reference_moments(data) -> tuple[dict, dict]:
    """float64 numpy mean and sample std of the numeric view's SAR fields (action/reward without is_last)."""
    steps = [s for ep in data[2] for s in ep]
    action = [s["action"] if data[1] == "int32" else len(s["action"]) for s in steps if not s["is_last"]]
    fields = {"observation": {"vec": np.asarray([s["observation"]["vec"] for s in steps], np.float32)},
              "action": np.asarray(action, np.int32),
              "reward": np.asarray([s["reward"] for s in steps if not s["is_last"]], np.float32)}

    def moment(values: np.ndarray, fn) -> np.ndarray:
        values = values.astype(np.float64)
        if len(values) < (1 if fn is np.mean else 2):
            return np.full(values.shape[1:], np.nan)
        return fn(values, axis=0) if fn is np.mean else np.std(values, axis=0, ddof=1)

    return (tf.nest.map_structure(lambda v: moment(v, np.mean), fields),
            tf.nest.map_structure(lambda v: moment(v, np.std), fields))


@SETTINGS
@given(episode_lists(variant="numeric"))
def test_mean_and_std_with_sar_fields_mask(data):
    """Same as rlds within float32 summation error: rlds sums each batch in the field's dtype (float32)
    before casting to float64, we accumulate in float64 — so ours also matches a float64 numpy reference
    to 1e-9, which rlds' does not always (mean of [374.1, -965.7, ...] off by 7e-6)."""
    ds = numeric_view(data)
    steps = [s for ep in data[2] for s in ep]
    magnitude = max([abs(x) for s in steps for x in s["observation"]["vec"]] + [abs(s["reward"]) for s in steps]
                    + [abs(s["action"]) if data[1] == "int32" else len(s["action"]) for s in steps])
    atol = len(steps) * float(np.finfo(np.float32).eps) * magnitude  # bound of float32 summation error
    theirs = R.mean_and_std(ds, R.sar_fields_mask)
    ours = T.mean_and_std(ds, T.sar_fields_mask)
    same(ours, theirs, atol)
    assert_same(to_numpy(ours), _reference_moments(data), atol=1e-9 * max(magnitude, 1.0))
    same(T.mean_and_std(ds, R.sar_fields_mask), theirs, atol)  # rlds' mask function works with ours
    same(T.mean_and_std(ds, T.sar_fields_mask, optimization_batch_size=3),
         R.mean_and_std(ds, R.sar_fields_mask, optimization_batch_size=3), atol)


@SETTINGS
@given(episode_lists())
def test_sar_fields_mask(data):
    for step in each_episode_steps(data)[0]:
        same(T.sar_fields_mask(step), R.sar_fields_mask(step))


@SETTINGS
@given(episode_lists(), st.sampled_from([["action"], ["reward"], ["action", "reward"]]), st.sampled_from([1, -1]),
       st.sampled_from([2, 3, 5]))
def test_shift_keys(data, keys, shift, batch_size):
    """SAR -> ARS style realignment (action/reward moved by one step either way), same explicit batch size."""
    for steps in each_episode_steps(data):
        same(T.shift_keys(steps, keys, shift, batch_size), R.shift_keys(steps, keys, shift, batch_size))


def _fixed_episode(variant: str, n: int = 6):
    steps = []
    for t in range(n):
        flags = {"is_first": t == 0, "is_last": t == n - 1, "is_terminal": t == n - 1}
        if variant == "numeric":
            steps.append({"observation": {"text": f"o{t}\x00", "vec": [t, 1.5 * t, -t]}, "action": t * 7,
                          "reward": 0.25 * t, "discount": 1.0, **flags})
        else:
            steps.append({"observation": f"o{t}\x00", "action": f"a{t}", "reward": str(t), "discount": "1", **flags})
    return steps_dataset(steps, variant, "int32" if variant == "numeric" else "string")


@pytest.mark.parametrize("variant", ["numeric", "strings"])
@pytest.mark.parametrize("keys,shift", [(["action"], 1), (["action", "reward"], -1)])
def test_shift_keys_default_batch_size(variant, keys, shift):
    """Ours with its default batch size; rlds with its own default on numeric steps, an explicit one on strings."""
    steps = _fixed_episode(variant)
    theirs = R.shift_keys(steps, keys, shift) if variant == "numeric" else R.shift_keys(steps, keys, shift, RLDS_BATCH)
    same(T.shift_keys(steps, keys, shift), theirs)


def test_batch_cost_does_not_grow_with_window_size():
    """A 6-step episode windowed with a large size must stay cheap (shift_keys' default uses size >= 1024)."""
    steps = _fixed_episode("strings")
    start = time.perf_counter()
    same(T.batch(steps, 1024, 1023), R.batch(steps, 1024, 1023))
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0, f"transforms.batch(6 steps, size=1024, shift=1023) took {elapsed:.1f} s"


@SETTINGS
@given(episode_lists(), st.integers(1, 5), st.sampled_from([None, 1, 2]), st.integers(1, 2), st.booleans())
def test_batch_nested_steps_is_rlds_batch_of_each_episode(data, size, shift, stride, drop_remainder):
    """Our per-episode windows are rlds' ``batch`` applied to each episode's steps, in episode order."""
    ds = episodes_dataset(data)
    theirs = ds.flat_map(lambda e: R.batch(e["steps"], size, shift, stride, drop_remainder))
    same(T.batch_nested_steps(ds, size, shift, stride, drop_remainder), theirs)
