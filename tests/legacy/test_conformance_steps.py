"""Conformance of the per-step and per-episode transformations (map, apply, sums, length, final step,
concatenation, truncation, zeros) with ``rlds.transformations``, on random episodes
(``tests/legacy/conformance.py``), on text-only steps and on steps whose fields vary in shape."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import transforms as T  # ours (torch-free modules only)
from tests.legacy.conformance import (
    SETTINGS,
    R,
    condition,
    each_episode_steps,
    episode_lists,
    episodes_dataset,
    rlds_kwargs,
    same,
    step_fn,
    tf,
    to_sum,
)

RLDS_NAMES = ["map_steps", "map_nested_steps", "apply_nested_steps", "batch", "sum_dataset", "sum_nested_steps",
              "episode_length", "final_step", "concatenate", "concat_if_terminal", "mean_and_std", "sar_fields_mask",
              "truncate_after_condition", "shift_keys", "zeros_from_spec", "zero_dataset_like"]


@pytest.mark.parametrize("name", RLDS_NAMES)
def test_same_signature_as_rlds(name):
    """rlds' parameters, in order, with rlds' names (keyword calls work) and defaults; ours may add optional ones."""
    theirs = list(inspect.signature(getattr(R, name)).parameters.values())
    ours = list(inspect.signature(getattr(T, name)).parameters.values())
    assert [p.name for p in ours[:len(theirs)]] == [p.name for p in theirs], (
        f"{name}: ours {[p.name for p in ours]} vs rlds {[p.name for p in theirs]}")
    for a, b in zip(ours, theirs):
        assert a.default == b.default, f"{name}({b.name}): default {a.default!r} != rlds' {b.default!r}"
    assert all(p.default is not p.empty for p in ours[len(theirs):]), f"{name}: extra parameters need defaults"


@SETTINGS
@given(episode_lists())
def test_map_steps(data):
    variant = data[0]
    for steps in each_episode_steps(data):
        same(T.map_steps(steps, step_fn(variant)), R.map_steps(steps, step_fn(variant), **rlds_kwargs(variant)))


@SETTINGS
@given(episode_lists())
def test_map_nested_steps(data):
    variant, ds = data[0], episodes_dataset(data)
    same(T.map_nested_steps(ds, step_fn(variant)), R.map_nested_steps(ds, step_fn(variant), **rlds_kwargs(variant)))


@SETTINGS
@given(episode_lists(), st.integers(0, 4))
def test_apply_nested_steps(data, k):
    ds = episodes_dataset(data)
    fn = lambda steps: steps.skip(1).take(k)  # noqa: E731
    same(T.apply_nested_steps(ds, fn), R.apply_nested_steps(ds, fn))
    drop_last = lambda steps: steps.filter(lambda s: tf.logical_not(s["is_last"]))  # noqa: E731
    same(T.apply_nested_steps(ds, drop_last), R.apply_nested_steps(ds, drop_last))


@SETTINGS
@given(episode_lists())
def test_sum_dataset(data):
    variant = data[0]
    for steps in each_episode_steps(data):
        same(T.sum_dataset(steps, to_sum(variant)), R.sum_dataset(steps, to_sum(variant), **rlds_kwargs(variant)))


@SETTINGS
@given(episode_lists())
def test_sum_nested_steps(data):
    variant, ds = data[0], episodes_dataset(data)
    same(T.sum_nested_steps(ds, to_sum(variant)), R.sum_nested_steps(ds, to_sum(variant), **rlds_kwargs(variant)))


@SETTINGS
@given(episode_lists())
def test_episode_length(data):
    variant = data[0]
    for steps in each_episode_steps(data):
        same(T.episode_length(steps), R.episode_length(steps, **rlds_kwargs(variant)))
        # Unknown cardinality: both count by iterating. rlds' batched count (size > 1) does
        # tf.shape(next(iter(step.values()))), which raises TypeError when that first value is a dict
        # (our observation): an rlds bug, so rlds counts one step at a time here.
        unknown = steps.filter(lambda s: True)
        same(T.episode_length(unknown), R.episode_length(unknown, optimization_batch_size=1))
    for ep in episodes_dataset(data):  # steps cut from a flat dataset inside a map
        same(T.episode_length(ep["steps"]), R.episode_length(ep["steps"], **rlds_kwargs(variant)))


@SETTINGS
@given(episode_lists())
def test_final_step(data):
    for steps in each_episode_steps(data):
        same(T.final_step(steps), R.final_step(steps))
        unknown = steps.filter(lambda s: True)
        same(T.final_step(unknown), R.final_step(unknown))


@SETTINGS
@given(episode_lists())
def test_concatenate(data):
    all_steps = each_episode_steps(data)
    first, second = all_steps[0], all_steps[-1]
    same(T.concatenate(first, second), R.concatenate(first, second))
    # fields present in only one side are filled with zeros of their spec on the other side
    extra = second.map(lambda s: {**s, "extra": tf.cast(s["is_last"], tf.float32), "note": tf.constant("n")})
    same(T.concatenate(first, extra), R.concatenate(first, extra))
    fewer = first.map(lambda s: {k: v for k, v in s.items() if k != "observation"})
    same(T.concatenate(fewer, second), R.concatenate(fewer, second))


@SETTINGS
@given(episode_lists())
def test_concat_if_terminal(data):
    def absorbing(final):
        step = {**final, "is_first": tf.constant(False), "is_last": tf.constant(True),
                "is_terminal": tf.constant(True)}
        return tf.data.Dataset.from_tensors(step).repeat(2)

    for steps in each_episode_steps(data):
        same(T.concat_if_terminal(steps, absorbing), R.concat_if_terminal(steps, absorbing))


@SETTINGS
@given(episode_lists())
def test_truncate_after_condition(data):
    variant = data[0]
    for steps in each_episode_steps(data):
        same(T.truncate_after_condition(steps, condition(variant)),
             R.truncate_after_condition(steps, condition(variant)))


@SETTINGS
@given(episode_lists())
def test_zeros_from_spec(data):
    steps = each_episode_steps(data)[0]
    same(T.zeros_from_spec(steps.element_spec), R.zeros_from_spec(steps.element_spec))
    batched = steps.batch(3).element_spec  # leading None dimension -> a batch of one
    same(T.zeros_from_spec(batched), R.zeros_from_spec(batched))


@SETTINGS
@given(episode_lists())
def test_zero_dataset_like(data):
    steps = each_episode_steps(data)[0]
    ours, theirs = T.zero_dataset_like(steps), R.zero_dataset_like(steps)
    assert ours.element_spec == theirs.element_spec
    same(ours, theirs)


def _text_only_steps():
    return tf.data.Dataset.from_tensor_slices({"observation": ["o1", "", "o\x003"], "action": ["a", "b\x00", ""]})


def test_rlds_auto_batch_divides_by_zero_on_string_steps():
    """rlds sizes its automatic batch by step bytes and counts tf.string as 0 bytes; ours does not fail."""
    steps = _text_only_steps()
    fn = lambda s: {"both": tf.strings.join([s["observation"], s["action"]])}  # noqa: E731
    with pytest.raises(ZeroDivisionError):
        R.map_steps(steps, fn)
    with pytest.raises(ZeroDivisionError):
        R.sum_dataset(steps, lambda s: tf.strings.length(s["action"]))
    with pytest.raises(ZeroDivisionError):
        R.episode_length(steps.filter(lambda s: True))
    same(T.map_steps(steps, fn), R.map_steps(steps, fn, optimization_batch_size=2))
    same(T.sum_dataset(steps, lambda s: tf.strings.length(s["action"])),
         R.sum_dataset(steps, lambda s: tf.strings.length(s["action"]), optimization_batch_size=2))
    same(T.episode_length(steps.filter(lambda s: True)),
         R.episode_length(steps.filter(lambda s: True), optimization_batch_size=2))


def _variable_shape_steps(token_lists: list[list[int]]) -> tf.data.Dataset:
    """Steps whose ``tokens`` field varies in shape (``int64[None]``), so they cannot be stacked; known
    cardinality. Built from tensor slices of a ragged tensor, densified per step as a tokenizing map would."""
    n = len(token_lists)
    t = np.arange(n)
    columns = {"observation": {"tokens": tf.ragged.constant(token_lists, dtype=tf.int64, ragged_rank=1),
                               "text": [" ".join(map(str, ids)) for ids in token_lists]},
               "action": [f"a{i}\x00" if i < n - 1 else "" for i in t],
               "reward": np.array([len(ids) - 1.5 for ids in token_lists], np.float32),
               "is_first": t == 0, "is_last": t == n - 1, "is_terminal": t == n - 1}

    def dense(step: dict) -> dict:
        return {**step, "observation": {**step["observation"], "tokens": tf.identity(step["observation"]["tokens"])}}

    return tf.data.Dataset.from_tensor_slices(columns).map(dense)


@pytest.mark.parametrize("token_lists", [[[7], [1, 2, 3], []], [[4, 4], [1]], [[], [9] * 5, [1], [2, 3]]],
                         ids=["three", "two", "four"])
def test_steps_whose_fields_vary_in_shape(token_lists):
    """Steps that cannot be stacked (a field of varying shape): where rlds works on them, ours agrees with
    its defaults; rlds' automatic batch size would stack them, so rlds gets ``optimization_batch_size=1``."""
    steps = _variable_shape_steps(token_lists)
    unknown = steps.filter(lambda s: True)
    episodes = tf.data.Dataset.from_tensors(0).repeat(2).map(lambda _: {"steps": steps})
    tokens = lambda s: s["observation"]["tokens"]  # noqa: E731
    one = {"optimization_batch_size": 1}
    same(T.episode_length(steps), R.episode_length(steps))
    same(T.episode_length(unknown), R.episode_length(unknown, **one))
    same(T.final_step(steps), R.final_step(steps))
    same(T.final_step(unknown), R.final_step(unknown))
    size = lambda s: {"n": tf.size(tokens(s)), "reward": s["reward"]}  # noqa: E731
    same(T.map_steps(steps, size), R.map_steps(steps, size, **one))
    same(T.map_nested_steps(episodes, size), R.map_nested_steps(episodes, size, **one))
    same(T.sum_dataset(steps, size), R.sum_dataset(steps, size, **one))
    same(T.sum_nested_steps(episodes, size), R.sum_nested_steps(episodes, size, **one))
    long = lambda s: tf.size(tokens(s)) > 1  # noqa: E731
    same(T.truncate_after_condition(steps, long), R.truncate_after_condition(steps, long))
    absorbing = lambda final: tf.data.Dataset.from_tensors(final).repeat(2)  # noqa: E731
    same(T.concat_if_terminal(steps, absorbing), R.concat_if_terminal(steps, absorbing))
    extra = steps.map(lambda s: {**s, "note": tf.constant("n")})
    same(T.concatenate(steps, extra), R.concatenate(steps, extra))
    fields = lambda s: ({"n": tf.size(tokens(s)), "reward": s["reward"]},  # noqa: E731
                        {"n": tf.constant(True), "reward": tf.logical_not(s["is_last"])})
    same(T.mean_and_std(episodes, fields), R.mean_and_std(episodes, fields, **one))
