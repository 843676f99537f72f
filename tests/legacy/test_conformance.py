"""Conformance: ``transforms`` (ours) against ``rlds.transformations`` on the same random RLDS episodes.

Legacy stack only (TF 2.15 + rlds 0.1.8; ``tests/legacy/run.sh``). Each test calls the function of the
same name in both libraries on the same data and compares the outputs as nested numpy structures (same
keys, dtypes and shapes; texts byte for byte; floats with rtol 1e-6).

Episodes (``episodes()``): 1-6 episodes of 1-12 steps, consistent ``is_first``/``is_last``/``is_terminal``,
in two variants:

* ``numeric``: observation ``{"text": tf.string, "vec": float32[3]}``, reward and discount float32,
  action ``tf.string`` or ``int32``;
* ``strings``: every step field is ``tf.string`` except the three flags (observation, action, reward,
  discount).

rlds' automatic batch size divides by the step size in bytes and counts ``tf.string`` as 0 bytes, so rlds
is called with an explicit ``optimization_batch_size`` on the ``strings`` variant; ours is called with its
defaults (it must not need the hint). ``test_rlds_auto_batch_divides_by_zero_on_string_steps`` shows the
rlds failure.
"""

from __future__ import annotations

import inspect
import itertools
import os
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

tf = pytest.importorskip("tensorflow")
rlds = pytest.importorskip("rlds")
R = rlds.transformations

import transforms as T  # noqa: E402  (ours; torch-free modules only)

# 2 CPUs: most of the time is tf.function tracing (every example is new data), so examples stay few.
EXAMPLES = int(os.environ.get("RLDS_LANG_CONFORMANCE_EXAMPLES", "10"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
RLDS_BATCH = 4  # explicit optimization_batch_size for rlds on string steps

NASTY = ["", "\x00", "a\x00b", "end\x00", "🟩🟨⬛", "👩‍👩‍👧 é ✓", "\u200b\ufeff", "中文", "x" * 300]
TEXT = st.one_of(st.text(max_size=8), st.sampled_from(NASTY))
F32 = st.floats(-1e3, 1e3, allow_nan=False, width=32)


# ----------------------------------------------------------------------------- data

@st.composite
def episode_lists(draw, variant: str | None = None, action: str | None = None):
    """(variant, action kind, [episode as list of python step dicts])."""
    variant = variant or draw(st.sampled_from(["numeric", "strings"]))
    action = "string" if variant == "strings" else (action or draw(st.sampled_from(["string", "int32"])))
    episodes = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 12))
        terminal = draw(st.booleans())
        steps = []
        for t in range(n):
            last = t == n - 1
            if variant == "numeric":
                step = {"observation": {"text": draw(TEXT), "vec": [draw(F32) for _ in range(3)]},
                        "action": draw(TEXT) if action == "string" else draw(st.integers(-1000, 1000)),
                        "reward": draw(F32), "discount": draw(st.sampled_from([0.0, 0.5, 0.99, 1.0]))}
            else:
                step = {"observation": draw(TEXT), "action": draw(TEXT), "reward": draw(TEXT), "discount": draw(TEXT)}
            step.update(is_first=t == 0, is_last=last, is_terminal=last and terminal)
            steps.append(step)
        episodes.append(steps)
    return variant, action, episodes


def _column(values: list, kind: str) -> np.ndarray:
    if kind == "text":
        return np.array([v.encode("utf-8") for v in values], dtype=object)
    return np.asarray(values, dtype=kind)


def steps_tensors(steps: list[dict], variant: str, action: str) -> dict[str, Any]:
    """Column tensors of a list of steps (leading dimension = steps)."""
    col = lambda key, kind: _column([s[key] for s in steps], kind)  # noqa: E731
    if variant == "numeric":
        observation = {"text": _column([s["observation"]["text"] for s in steps], "text"),
                       "vec": np.asarray([s["observation"]["vec"] for s in steps], np.float32).reshape(-1, 3)}
        out = {"observation": observation, "action": col("action", "text" if action == "string" else "int32"),
               "reward": col("reward", "float32"), "discount": col("discount", "float32")}
    else:
        out = {k: col(k, "text") for k in ("observation", "action", "reward", "discount")}
    out.update({k: col(k, "bool") for k in ("is_first", "is_last", "is_terminal")})
    return tf.nest.map_structure(tf.constant, out)


def steps_dataset(steps: list[dict], variant: str, action: str) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(steps_tensors(steps, variant, action))


def episodes_dataset(data) -> tf.data.Dataset:
    """``{"steps": Dataset, "episode_id": tf.string}`` episodes: one flat steps dataset cut by skip/take."""
    variant, action, episodes = data
    flat = steps_dataset([s for ep in episodes for s in ep], variant, action)
    lengths = [len(ep) for ep in episodes]
    starts = np.cumsum([0] + lengths[:-1]).astype(np.int64)
    index = tf.data.Dataset.from_tensor_slices({
        "start": starts, "length": np.asarray(lengths, np.int64),
        "episode_id": np.array([f"ep-{i}".encode() for i in range(len(episodes))], dtype=object)})
    return index.map(lambda e: {"steps": flat.skip(e["start"]).take(e["length"]), "episode_id": e["episode_id"]})


def numeric_view(data):
    """The same episodes with numeric fields only (for mean_and_std): observation vec, action as int32."""
    variant, action, episodes = data
    assert variant == "numeric"
    out = []
    for ep in episodes:
        out.append([{**s, "observation": {"vec": s["observation"]["vec"]},
                     "action": s["action"] if action == "int32" else len(s["action"])} for s in ep])
    flat = [s for ep in out for s in ep]
    tensors = {"observation": {"vec": np.asarray([s["observation"]["vec"] for s in flat], np.float32).reshape(-1, 3)},
               "action": np.asarray([s["action"] for s in flat], np.int32),
               "reward": np.asarray([s["reward"] for s in flat], np.float32),
               "discount": np.asarray([s["discount"] for s in flat], np.float32),
               **{k: np.asarray([s[k] for s in flat], bool) for k in ("is_first", "is_last", "is_terminal")}}
    ds = tf.data.Dataset.from_tensor_slices(tensors)
    lengths = [len(ep) for ep in out]
    starts = np.cumsum([0] + lengths[:-1]).astype(np.int64)
    index = tf.data.Dataset.from_tensor_slices({"start": starts, "length": np.asarray(lengths, np.int64)})
    return index.map(lambda e: {"steps": ds.skip(e["start"]).take(e["length"])})


def rlds_kwargs(variant: str, name: str = "optimization_batch_size") -> dict[str, int]:
    return {name: RLDS_BATCH} if variant == "strings" else {}


# ----------------------------------------------------------------------------- comparison

def to_numpy(value: Any) -> Any:
    """Datasets become lists (nested episode datasets too), tensors numpy arrays, dicts stay dicts."""
    if isinstance(value, tf.data.Dataset):
        return [to_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_numpy(v) for v in value)
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return value.numpy()
    return value


def assert_same(ours: Any, theirs: Any, path: str = "", atol: float = 0.0) -> None:
    """Equal nested structures: same keys, lengths, dtypes and shapes; floats with rtol 1e-6 (+ ``atol``)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{path}: ours is {type(ours).__name__}, rlds' a dict"
        assert sorted(ours) == sorted(theirs), f"{path}: keys {sorted(ours)} != rlds' {sorted(theirs)}"
        for k in theirs:
            assert_same(ours[k], theirs[k], f"{path}/{k}", atol)
        return
    if isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)), f"{path}: ours is {type(ours).__name__}, rlds' a sequence"
        assert len(ours) == len(theirs), f"{path}: {len(ours)} elements != rlds' {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{path}[{i}]", atol)
        return
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} != rlds' {b.dtype}"
    assert a.shape == b.shape, f"{path}: shape {a.shape} != rlds' {b.shape}"
    if np.issubdtype(b.dtype, np.floating):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=atol, equal_nan=True, err_msg=path)
    else:
        assert np.array_equal(a, b), f"{path}: {a!r} != rlds' {b!r}"


def same(ours: Any, theirs: Any, atol: float = 0.0) -> None:
    assert_same(to_numpy(ours), to_numpy(theirs), atol=atol)


def each_episode_steps(data):
    """Steps datasets of the first, a middle and the last episode (at most 3: per-call tracing is slow)."""
    variant, action, episodes = data
    picked = sorted({0, len(episodes) // 2, len(episodes) - 1})
    return [steps_dataset(episodes[i], variant, action) for i in picked]


# ----------------------------------------------------------------------------- step functions

def numeric_step_fn(step):
    return {**step, "reward": step["reward"] * 2.0 + 1.0,
            "observation": {**step["observation"], "vec": step["observation"]["vec"] - step["reward"]},
            "marker": tf.strings.join([step["observation"]["text"], "|"])}


def string_step_fn(step):
    return {"observation": tf.strings.join([step["observation"], step["action"]], separator="\x00"),
            "length": tf.strings.length(step["reward"]), "is_last": step["is_last"]}


def step_fn(variant):
    return numeric_step_fn if variant == "numeric" else string_step_fn


def to_sum(variant):
    if variant == "numeric":
        return lambda s: {"reward": s["reward"], "vec": s["observation"]["vec"], "n": tf.cast(s["is_last"], tf.int32)}
    return lambda s: {"chars": tf.strings.length(s["observation"]), "n": tf.cast(s["is_first"], tf.int64)}


def condition(variant):
    if variant == "numeric":
        return lambda s: s["reward"] > 0.0
    return lambda s: tf.strings.length(s["observation"]) > 2


# ----------------------------------------------------------------------------- tests

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
    variant = data[0]
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
@given(episode_lists())
def test_truncate_after_condition(data):
    variant = data[0]
    for steps in each_episode_steps(data):
        same(T.truncate_after_condition(steps, condition(variant)),
             R.truncate_after_condition(steps, condition(variant)))


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
