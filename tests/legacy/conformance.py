"""What the conformance suites share: random RLDS episodes (hypothesis), the comparison of nested outputs, and
the step functions both libraries are called with.

The suites, ``test_conformance_steps.py`` (per-step and per-episode transformations) and
``test_conformance_windows.py`` (batching, realignment, moments), check ``transforms`` (ours) against
``rlds.transformations`` on the same random RLDS episodes.

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

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

tf = pytest.importorskip("tensorflow")
rlds = pytest.importorskip("rlds")
R = rlds.transformations

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
