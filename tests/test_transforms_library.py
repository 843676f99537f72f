"""The transforms library on the main stack: windows against a Python reference, returns by hand,
top-p and splits, text-only steps, and a runnable example in every public docstring.

Agreement with ``rlds.transformations`` itself is checked on the legacy stack (``tests/legacy``).
"""

from __future__ import annotations

import doctest
import importlib
import math

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

import transforms
from transforms import (
    add_episode_return,
    add_returns_to_go,
    batch,
    batch_nested_steps,
    concat_if_terminal,
    episode_length,
    episode_returns,
    filter_top_p,
    final_step,
    map_nested_steps,
    mean_and_std,
    n_step_windows,
    sar_fields_mask,
    shift_keys,
    split_by_episode_id,
    sum_nested_steps,
    truncate_after_condition,
)

MODULES = ["specs", "windows", "steps", "alignment", "moments", "returns", "selection", "statistics", "loading", "torch_bridge"]


def reference_windows(items: list, size: int, shift: int, stride: int, drop_remainder: bool) -> list[list]:
    """tf.data.Dataset.window's semantics, written out in Python."""
    out = []
    for start in range(0, len(items), shift):
        window = items[start::stride][:size]
        if len(window) == size or not drop_remainder:
            out.append(window)
    return out


def episodes_of(lengths: list[int], text_only: bool = False) -> tf.data.Dataset:
    """Episodes whose step t of episode e holds the number 100*e + t (and its text)."""
    def gen():
        for e, n in enumerate(lengths):
            yield e, n

    def make(e, n):
        t = tf.range(n, dtype=tf.int64)
        value = 100 * e + t
        steps = {"text": tf.strings.as_string(value), "is_last": t == n - 1}
        if not text_only:
            steps["value"] = value
        return {"steps": tf.data.Dataset.from_tensor_slices(steps), "episode_id": tf.strings.as_string(e)}

    sig = (tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int64))
    return tf.data.Dataset.from_generator(gen, output_signature=sig).map(make)


@settings(max_examples=25, deadline=None)
@given(lengths=st.lists(st.integers(0, 9), min_size=1, max_size=5), size=st.integers(1, 4),
       shift=st.integers(1, 4), stride=st.integers(1, 3), drop=st.booleans())
def test_windows_match_reference_and_never_cross_episodes(lengths, size, shift, stride, drop):
    episodes = episodes_of(lengths, text_only=True)
    got = [[x.decode() for x in w["text"]]
           for w in batch_nested_steps(episodes, size, shift, stride, drop).as_numpy_iterator()]
    expected = []
    for e, n in enumerate(lengths):
        expected += reference_windows([str(100 * e + t) for t in range(n)], size, shift, stride, drop)
    assert got == expected
    flat = [str(100 * e + t) for e, n in enumerate(lengths) for t in range(n)]
    crossing = [[x.decode() for x in w["text"]]
                for w in batch_nested_steps(episodes, size, shift, stride, drop, cross_episodes=True)
                .as_numpy_iterator()]
    assert crossing == reference_windows(flat, size, shift, stride, drop)


def test_batch_across_block_boundaries():
    """Streams longer than one internal block (4096 steps) keep the window arithmetic exact."""
    n = 9000
    got = [w.tolist() for w in batch(tf.data.Dataset.range(n), size=5, shift=3, stride=4).as_numpy_iterator()]
    assert got == reference_windows(list(range(n)), 5, 3, 4, False)


def test_batch_rejects_bad_arguments():
    with pytest.raises(ValueError, match="size must be >= 1"):
        batch(tf.data.Dataset.range(3), size=0)
    with pytest.raises(ValueError, match="shift and stride"):
        batch(tf.data.Dataset.range(3), size=2, shift=0)


def test_text_only_steps_everywhere():
    """rlds sizes batches by bytes and divides by zero on string-only steps; every transform here works."""
    episodes = episodes_of([3, 1, 4], text_only=True)
    assert int(sum_nested_steps(episodes, lambda s: tf.strings.length(s["text"]))) == 1 + 1 + 1 + 3 + 4 * 3
    lengths = [int(episode_length(e["steps"])) for e in episodes]
    assert lengths == [3, 1, 4]
    mapped = map_nested_steps(episodes, lambda s: tf.strings.join([s["text"], "!"]))
    assert [x.decode() for x in next(iter(mapped))["steps"].as_numpy_iterator()] == ["0!", "1!", "2!"]
    last = final_step(next(iter(episodes.skip(2)))["steps"])
    assert last["text"].numpy().decode() == "203" and bool(last["is_last"])
    shifted = list(shift_keys(next(iter(episodes))["steps"], ["text"], 1).as_numpy_iterator())
    assert [(s["text"].decode(), bool(s["is_last"])) for s in shifted] == [("1", False), ("2", False)]
    windows = list(n_step_windows(episodes, 2).as_numpy_iterator())
    assert len(windows) == 8 and windows[3]["text"].tolist() == [b"100", b""]


def test_episode_length_with_unknown_cardinality():
    steps = tf.data.Dataset.range(10).filter(lambda x: x % 3 == 0)
    assert steps.cardinality() == tf.data.UNKNOWN_CARDINALITY
    assert int(episode_length(steps, optimization_batch_size=2)) == 4


def test_truncate_and_concat_if_terminal():
    steps = tf.data.Dataset.from_tensor_slices({"r": [1.0, 2.0, 3.0], "is_terminal": [False, True, False]})
    cut = list(truncate_after_condition(steps, lambda s: s["is_terminal"]).as_numpy_iterator())
    assert [s["r"] for s in cut] == [1.0, 2.0]
    absorbing = lambda last: tf.data.Dataset.from_tensors({"r": 0.0, "is_terminal": True, "absorbing": True})  # noqa: E731
    terminal = truncate_after_condition(steps, lambda s: s["is_terminal"])
    out = list(concat_if_terminal(terminal, absorbing).as_numpy_iterator())
    assert [(s["r"], bool(s["absorbing"])) for s in out] == [(1.0, False), (2.0, False), (0.0, True)]
    not_terminal = steps.take(1)
    assert len(list(concat_if_terminal(not_terminal, absorbing).as_numpy_iterator())) == 1


def wordle_like_episode(rewards: list[float], discounts: list[float]) -> tf.data.Dataset:
    n = len(rewards)
    steps = {"reward": tf.constant(rewards, tf.float32), "discount": tf.constant(discounts, tf.float32),
             "is_last": tf.constant([False] * (n - 1) + [True]),
             "action": tf.constant(["crane", "slate", "abide", ""][:n])}
    return tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})


def test_returns_to_go_by_hand():
    # Three guesses, the third wins; the is_last step's reward (99) carries no information and is ignored.
    episodes = wordle_like_episode([-1.0, -1.0, 0.0, 99.0], [1.0, 1.0, 0.0, 0.0])
    steps = list(next(iter(add_returns_to_go(episodes)))["steps"].as_numpy_iterator())
    assert [s["return_to_go"] for s in steps] == [-2.0, -1.0, 0.0, 0.0]
    discounted = next(iter(add_returns_to_go(episodes, gamma=0.5, output_key="g")))["steps"]
    assert [s["g"] for s in discounted.as_numpy_iterator()] == [-1.5, -1.0, 0.0, 0.0]
    # The recorded discount (0 at the terminal step) cuts the recurrence there.
    with_discount = add_returns_to_go(wordle_like_episode([1.0, 1.0, 1.0, 5.0], [1.0, 0.0, 1.0, 0.0]),
                                      use_discount=True)
    assert [s["return_to_go"] for s in next(iter(with_discount))["steps"].as_numpy_iterator()] == [2.0, 1.0, 1.0, 0.0]
    assert [float(e["episode_return"]) for e in add_episode_return(episodes, gamma=0.5)] == [-1.5]


def test_filter_top_p_exact_count_ties_and_order_check():
    returns = [-3.0, -1.0, -1.0, -5.0, -2.0, -1.0]
    episodes = tf.data.Dataset.from_tensor_slices((tf.constant(returns), tf.range(6))).map(
        lambda r, i: {"steps": tf.data.Dataset.from_tensor_slices({"reward": tf.stack([r, 0.0]),
                                                                   "is_last": tf.constant([False, True])}),
                      "i": i})
    assert episode_returns(episodes).tolist() == returns
    assert [int(e["i"]) for e in filter_top_p(episodes, 0.3)] == [1, 2]  # ceil(1.8) = 2 of three tied -1s
    assert [int(e["i"]) for e in filter_top_p(episodes, 0.6)] == [1, 2, 4, 5]  # ceil(3.6) = 4, in order
    assert len(list(filter_top_p(episodes, 1.0))) == 6
    with pytest.raises(ValueError, match="p must be in"):
        filter_top_p(episodes, 0.0)
    # A dataset whose order changes between reads is refused loudly, not silently mis-filtered.
    shuffled = episodes.shuffle(6, reshuffle_each_iteration=True, seed=None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="order changed"):
        for _ in range(20):  # one reshuffle equal to the first order is possible; twenty are not
            list(filter_top_p(shuffled, 0.5))


def test_cached_returns_are_read_back_by_key_and_a_stale_cache_is_refused(tmp_path):
    from transforms.selection import cached_episode_returns

    def episodes(returns):
        return tf.data.Dataset.from_tensor_slices((tf.constant(returns), tf.range(len(returns)))).map(
            lambda r, i: {"steps": tf.data.Dataset.from_tensors({"reward": r}), "i": i})

    path = tmp_path / "run" / "returns.npz"
    first = episodes([-3.0, -1.0, -2.0, -5.0])
    assert cached_episode_returns(first, path, {"dataset": "a"}).tolist() == [-3.0, -1.0, -2.0, -5.0]
    # the same key reads the file: the returns of the first dataset come back for another one, without a pass
    other = episodes([0.0, 0.0, 0.0, 0.0])
    assert cached_episode_returns(other, path, {"dataset": "a"}).tolist() == [-3.0, -1.0, -2.0, -5.0]
    assert cached_episode_returns(other, path, {"dataset": "b"}).tolist() == [0.0] * 4  # another key: recomputed
    assert sorted(p.name for p in path.parent.iterdir()) == ["returns.npz"]  # no temporary file left
    # given returns save the first pass of filter_top_p, and returns that are not the dataset's are refused
    assert [int(e["i"]) for e in filter_top_p(first, 0.5, returns=np.array([-3.0, -1.0, -2.0, -5.0]))] == [1, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="order changed"):
        list(filter_top_p(first, 0.5, returns=np.array([-1.0, -3.0, -2.0, -5.0])))


def test_split_by_episode_id_is_deterministic_and_stable_under_growth():
    def ids(n):
        return tf.data.Dataset.range(n).map(lambda i: {"episode_id": tf.strings.join(["ep-", tf.strings.as_string(i)])})

    def names(ds):
        return {e["episode_id"].decode() for e in ds.as_numpy_iterator()}

    train, evaluation = split_by_episode_id(ids(400), 0.2)
    small_train, small_eval = split_by_episode_id(ids(200), 0.2)
    assert names(train) | names(evaluation) == names(ids(400)) and not names(train) & names(evaluation)
    assert 40 < len(names(evaluation)) < 120  # 80 expected, a standard deviation of 8
    assert names(small_eval) == {n for n in names(evaluation) if int(n[3:]) < 200}
    assert names(split_by_episode_id(ids(400), 0.2, salt="other")[1]) != names(evaluation)
    with pytest.raises(KeyError, match="no 'episode_key' field"):
        split_by_episode_id(ids(10), 0.1, id_key="episode_key")


def test_mean_and_std_sar_mask_and_vectors():
    steps = {"observation": tf.constant([[1.0, 10.0], [3.0, 30.0], [5.0, 50.0]]), "action": [2.0, 4.0, 1000.0],
             "reward": [1.0, 3.0, 1000.0], "is_last": [False, False, True]}
    episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)}).repeat(2)
    for size in (1, 2, 1024):
        mean, std = mean_and_std(episodes, sar_fields_mask, optimization_batch_size=size)
        np.testing.assert_allclose(mean["observation"], [3.0, 30.0])
        np.testing.assert_allclose(mean["action"], 3.0)
        obs = np.array([1.0, 3.0, 5.0, 1.0, 3.0, 5.0])
        np.testing.assert_allclose(std["observation"], [obs.std(ddof=1), 10 * obs.std(ddof=1)])
        np.testing.assert_allclose(std["reward"], np.array([1.0, 3.0, 1.0, 3.0]).std(ddof=1))


def test_n_step_windows_padding_and_mask():
    episodes = wordle_like_episode([-1.0, -1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0])
    windows = list(n_step_windows(episodes, 3).as_numpy_iterator())
    assert len(windows) == 4
    assert windows[0]["action"].tolist() == [b"crane", b"slate", b"abide"] and windows[0]["mask"].all()
    assert windows[2]["reward"].tolist() == [0.0, 0.0, 0.0] and windows[2]["mask"].tolist() == [True, True, False]
    assert windows[3]["action"].tolist() == [b"", b"", b""] and windows[3]["mask"].tolist() == [True, False, False]
    with pytest.raises(ValueError, match="n must be"):
        n_step_windows(episodes, 0)


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module):
    mod = importlib.import_module(f"transforms.{module}")
    result = doctest.testmod(mod, extraglobs={"tf": tf, "np": np}, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


def test_every_public_function_has_an_example_and_type_hints():
    for name in transforms.__all__:
        obj = getattr(transforms, name)
        if callable(obj) and not isinstance(obj, type):
            assert obj.__doc__ and ">>>" in obj.__doc__, f"transforms.{name} has no runnable example"
            assert obj.__annotations__.get("return") is not None, f"transforms.{name} has no return type hint"
    assert math.isclose(float(sum_nested_steps(episodes_of([2]), lambda s: tf.cast(s["value"], tf.float64))), 1.0)


def test_realign_between_sar_ars_rsa():
    from transforms import AlignmentType as A
    from transforms import realign

    sar = tf.data.Dataset.from_tensor_slices({"observation": ["o0", "o1", "o2", "o3"], "action": ["a0", "a1", "a2", ""],
                                              "reward": [1.0, 2.0, 3.0, 0.0]})

    def rows(ds):
        return [(s["observation"].decode(), s["action"].decode(), float(s["reward"])) for s in ds.as_numpy_iterator()]

    assert rows(realign(sar, A.SAR, A.ARS)) == [("o1", "a0", 1.0), ("o2", "a1", 2.0), ("o3", "a2", 3.0)]
    assert rows(realign(sar, A.SAR, A.RSA)) == [("o1", "a1", 1.0), ("o2", "a2", 2.0), ("o3", "", 3.0)]
    # ARS -> SAR undoes the move (one more step is lost at the other end)
    assert rows(realign(realign(sar, A.SAR, A.ARS), A.ARS, A.SAR)) == [("o1", "a1", 2.0), ("o2", "a2", 3.0)]
    # RSA -> ARS goes through SAR: two more moves, each dropping a step at one end of the episode
    assert rows(realign(realign(sar, A.SAR, A.RSA), A.RSA, A.ARS)) == [("o2", "a1", 2.0)]
    assert rows(realign(sar, A.SAR, A.SAR)) == rows(sar)
    with pytest.raises(ValueError, match="supports SAR, ARS and RSA"):
        realign(sar, A.SAR, A.UNKNOWN)


def variable_shape_episodes() -> tf.data.Dataset:
    """Two episodes (ids ``a``, ``b``) whose ``tokens`` observation varies in length between steps
    (``int64[None]``, as ``tfds.load`` gives a variable-length feature): such steps cannot be stacked."""
    tokens = tf.ragged.constant([[[7], [1, 2, 3], []], [[4, 4], [5]]], dtype=tf.int64)
    rewards = tf.ragged.constant([[-1.0, 2.0, 9.0], [0.5, 7.0]], dtype=tf.float32)

    def episode(e: dict) -> dict:
        t = tf.range(tf.size(e["reward"]))
        last = t == tf.size(e["reward"]) - 1
        steps = {"observation": {"text": tf.strings.reduce_join(tf.strings.as_string(e["tokens"]), 1, separator=" "),
                                 "tokens": e["tokens"]},
                 "action": tf.where(last, "", tf.strings.join(["a", tf.strings.as_string(t)])),
                 "reward": e["reward"], "is_last": last, "is_terminal": last}
        dense = lambda s: {**s, "observation": {**s["observation"], "tokens": tf.identity(s["observation"]["tokens"])}}  # noqa: E731
        return {"steps": tf.data.Dataset.from_tensor_slices(steps).map(dense), "episode_id": e["episode_id"]}

    return tf.data.Dataset.from_tensor_slices({"tokens": tokens, "reward": rewards, "episode_id": ["a", "b"]}).map(episode)


def test_steps_whose_fields_vary_in_shape():
    """rlds' per-step functions work on steps that cannot be stacked (a field of varying shape), and so must
    ours: they read such steps one at a time where they would otherwise stack whole episodes."""
    episodes = variable_shape_episodes()
    first, second = [e["steps"] for e in episodes]
    ids = lambda s: s["observation"]["tokens"]  # noqa: E731
    assert [int(episode_length(e["steps"])) for e in episodes] == [3, 2]
    assert int(episode_length(first.filter(lambda s: True))) == 3
    assert ids(final_step(first)).numpy().tolist() == [] and ids(final_step(second)).numpy().tolist() == [5]
    assert ids(final_step(first.filter(lambda s: s["reward"] < 0))).numpy().tolist() == [7]
    sizes = map_nested_steps(episodes, lambda s: tf.size(ids(s)))
    assert [list(e["steps"].as_numpy_iterator()) for e in sizes] == [[1, 3, 0], [2, 1]]
    assert int(sum_nested_steps(episodes, lambda s: tf.reduce_sum(ids(s)))) == 7 + 6 + 8 + 5
    cut = truncate_after_condition(first, lambda s: tf.size(ids(s)) > 2)
    assert [ids(s).tolist() for s in cut.as_numpy_iterator()] == [[7], [1, 2, 3]]
    absorbed = concat_if_terminal(first, lambda last: tf.data.Dataset.from_tensors(last))
    assert [ids(s).tolist() for s in absorbed.as_numpy_iterator()] == [[7], [1, 2, 3], [], []]
    with_rtg = add_returns_to_go(episodes, gamma=0.5)
    got = [[(ids(s).tolist(), s["return_to_go"]) for s in e["steps"].as_numpy_iterator()] for e in with_rtg]
    assert got == [[([7], 0.0), ([1, 2, 3], 2.0), ([], 0.0)], [([4, 4], 0.5), ([5], 0.0)]]
    assert episode_returns(episodes).tolist() == [1.0, 0.5]
    mean, std = mean_and_std(episodes, lambda s: ({"n": tf.size(ids(s))}, {"n": tf.constant(True)}))
    np.testing.assert_allclose([mean["n"], std["n"]], [1.4, np.std([1, 3, 0, 2, 1], ddof=1)])
    turns = [(t["observation"].decode(), t["action"].decode(), t["reward"], t["episode_id"].decode())
             for t in transforms.to_turns(episodes).as_numpy_iterator()]
    assert turns == [("7", "a0", -1.0, "a"), ("1 2 3", "a1", 2.0, "a"), ("4 4", "a0", 0.5, "b")]


def test_whole_episode_reads_of_steps_that_end_in_a_map():
    """Steps produced by a ``map`` (a tokenization, a projection) are read whole without the map+batch fusion
    trap (``specs.batch_whole``): ``MapAndBatch`` would allocate 2**30 rows up front and hang."""
    episodes = tf.data.Dataset.range(1, 4).map(lambda n: {"steps": tf.data.Dataset.range(n).map(
        lambda t: {"reward": tf.cast(t + 1, tf.float32), "is_last": t == n - 1})})  # the last reward is ignored (SAR)
    assert episode_returns(episodes).tolist() == [0.0, 1.0, 3.0]
    rtg = [[s["return_to_go"] for s in e["steps"].as_numpy_iterator()] for e in add_returns_to_go(episodes)]
    assert rtg == [[0.0], [1.0, 0.0], [3.0, 2.0, 0.0]]
    assert [int(episode_length(e["steps"])) for e in episodes] == [1, 2, 3]
    windows = [w["reward"].tolist() for w in batch_nested_steps(episodes, 2, shift=1, drop_remainder=True).as_numpy_iterator()]
    assert windows == [[1.0, 2.0], [1.0, 2.0], [2.0, 3.0]]
