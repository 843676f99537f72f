"""The paths of ``transforms.windows`` against a Python reference: episodes of unknown length, long windows
(every tail length), several blocks, empty episodes, text byte for byte, the element spec, and steps whose
fields vary in shape.

``tests/test_transforms_library.py`` checks the window arithmetic on small random cases and
``tests/legacy/test_conformance_windows.py`` checks ``batch`` and ``batch_nested_steps`` against rlds; these
cover the branches they miss.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tests.test_transforms_library import reference_windows
from transforms.windows import (
    EPISODES_PER_BLOCK,
    batch,
    batch_nested_steps,
    episode_blocks,
    n_step_windows,
)

TEXTS = ["", "\x00", "a\x00b", "🟩🟨⬛", "👩‍👩‍👧 é", "中文", "x" * 40]


def steps_of(e: int, n: int) -> list[dict]:
    """Step t of episode e: its number 1000*e + t, a text, an int8[5] vector and a float, nested."""
    return [{"observation": {"text": TEXTS[(e + t) % len(TEXTS)] + str(t), "vec": np.full(5, (e + t) % 100, np.int8)},
             "value": np.int64(1000 * e + t), "reward": np.float32(t / 2)} for t in range(n)]


def columns(steps: list[dict]) -> dict:
    """Step dicts as column arrays (empty lists keep their dtypes and shapes)."""
    return {"observation": {"text": np.array([s["observation"]["text"].encode() for s in steps], dtype=object),
                            "vec": np.array([s["observation"]["vec"] for s in steps], np.int8).reshape(-1, 5)},
            "value": np.array([s["value"] for s in steps], np.int64),
            "reward": np.array([s["reward"] for s in steps], np.float32)}


def episodes_of(lengths: list[int], unknown: tuple[int, ...] = ()) -> tf.data.Dataset:
    """Episodes with the given step counts; those in ``unknown`` hide their length behind a ``filter``."""
    flat = [s for e, n in enumerate(lengths) for s in steps_of(e, n)]
    ragged = tf.nest.map_structure(lambda c: tf.RaggedTensor.from_row_lengths(c, lengths), columns(flat))
    hidden = np.isin(np.arange(len(lengths)), list(unknown))

    def episode(steps: dict, hide: tf.Tensor) -> dict:
        known = tf.data.Dataset.from_tensor_slices(steps)
        return {"steps": tf.cond(hide, lambda: known.filter(lambda s: True), lambda: known)}

    if not unknown:
        return tf.data.Dataset.from_tensor_slices(ragged).map(lambda s: {"steps": tf.data.Dataset.from_tensor_slices(s)})
    return tf.data.Dataset.from_tensor_slices((ragged, hidden)).map(episode)


def as_lists(window: dict) -> dict:
    """A window as plain Python lists (texts decoded), for comparison with the reference."""
    return tf.nest.map_structure(lambda v: [x.decode() if isinstance(x, bytes) else x for x in v.tolist()], window)


def expected(lengths: list[int], size: int, shift: int, stride: int, drop: bool) -> list[dict]:
    """The windows of each episode on its own, from ``reference_windows``, stacked field by field."""
    out = []
    for e, n in enumerate(lengths):
        for window in reference_windows(steps_of(e, n), size, shift, stride, drop):
            out.append(as_lists(tf.nest.map_structure(lambda *v: np.stack(v), *window)))
    return out


def windows_of(episodes: tf.data.Dataset, *args, **kwargs) -> list[dict]:
    return [as_lists(w) for w in batch_nested_steps(episodes, *args, **kwargs).as_numpy_iterator()]


def test_cardinality_is_hidden_in_the_test_episodes():
    """The premise of the unknown-length tests: a filtered episode does not know its length."""
    cards = [int(e["steps"].cardinality()) for e in episodes_of([2, 3], unknown=(1,))]
    assert cards[0] == 2 and cards[1] == tf.data.UNKNOWN_CARDINALITY


@pytest.mark.parametrize("unknown", [(), (1,), (0, 1, 2, 3, 4, 5)], ids=["known", "one-unknown", "all-unknown"])
@pytest.mark.parametrize("size,shift,stride,drop", [(3, 1, 1, False), (2, 3, 2, False), (3, 2, 1, True)])
def test_windows_with_known_and_unknown_lengths(unknown, size, shift, stride, drop):
    lengths = [4, 0, 7, 1, 3, 5]
    assert windows_of(episodes_of(lengths, unknown), size, shift, stride, drop) == expected(lengths, size, shift, stride, drop)


@pytest.mark.parametrize("size", [9, 11])
def test_long_windows_with_tails_of_every_length(size):
    """Windows of every length 1..size, in order, within episodes of known and unknown length."""
    lengths = [size + 3, 2, size - 1, 0, size]
    assert windows_of(episodes_of(lengths), size, 1) == expected(lengths, size, 1, 1, False)
    assert windows_of(episodes_of(lengths, unknown=(0,)), size, 2, 2) == expected(lengths, size, 2, 2, False)


def test_many_blocks_and_empty_episodes():
    """More episodes than one block holds, many of them empty, one block with no steps at all."""
    lengths = [0] * 20 + [(e * 7) % 6 for e in range(EPISODES_PER_BLOCK + 40)]
    assert windows_of(episodes_of(lengths), 3, 1) == expected(lengths, 3, 1, 1, False)
    blocks = [(s["value"].tolist(), n.tolist()) for s, n in episode_blocks(episodes_of([0, 0, 2, 0, 1]), episodes_per_block=2)
              .as_numpy_iterator()]
    assert blocks == [([2000, 2001], [2]), ([4000], [1])]


def test_texts_come_back_byte_for_byte_and_the_spec_is_unchanged():
    lengths = [len(TEXTS) + 2, 3]
    windows = list(batch_nested_steps(episodes_of(lengths), 4, 1).as_numpy_iterator())
    texts = [t for w in windows for t in w["observation"]["text"][:1]]
    assert texts == [s["observation"]["text"].encode() for e, n in enumerate(lengths) for s in steps_of(e, n)]
    spec = batch_nested_steps(episodes_of(lengths), 4, 1).element_spec
    assert spec["observation"]["vec"] == tf.TensorSpec([None, 5], tf.int8)
    assert spec["value"] == tf.TensorSpec([None], tf.int64)
    assert batch_nested_steps(episodes_of(lengths), 4, 1, drop_remainder=True).element_spec["reward"].shape == [4]


def test_n_step_windows_with_unknown_lengths():
    lengths = [3, 0, 2]
    got = [(w["value"].tolist(), w["mask"].tolist()) for w in n_step_windows(episodes_of(lengths, unknown=(2,)), 2)
           .as_numpy_iterator()]
    assert got == [([0, 1], [True, True]), ([1, 2], [True, True]), ([2, 0], [True, False]),
                   ([2000, 2001], [True, True]), ([2001, 0], [True, False])]


def test_flat_batch_with_long_windows():
    """``batch`` over a stream: full windows, then the tail windows of every length at the end."""
    size = 10
    got = [w.tolist() for w in batch(tf.data.Dataset.range(30), size, 3, 1).as_numpy_iterator()]
    assert got == reference_windows(list(range(30)), size, 3, 1, False)


def variable_episodes(token_lists: list[list[list[int]]]) -> tf.data.Dataset:
    """Episodes whose ``tokens`` field is ``int64[None]`` (its shape may vary from step to step)."""
    tokens = tf.ragged.constant(token_lists, dtype=tf.int64)
    return tf.data.Dataset.from_tensor_slices(tokens).map(
        lambda t: {"steps": tf.data.Dataset.from_tensor_slices(t).map(lambda x: {"tokens": tf.identity(x)})})


def test_steps_whose_shape_varies_between_episodes_only():
    """Fields of varying shape stack within an episode of equal shapes, as before the vectorised paths."""
    episodes = variable_episodes([[[1, 2], [3, 4], [5, 6]], [[7, 7, 7], [8, 8, 8]]])
    got = [w["tokens"].tolist() for w in batch_nested_steps(episodes, 2, 1).as_numpy_iterator()]
    assert got == [[[1, 2], [3, 4]], [[3, 4], [5, 6]], [[5, 6]], [[7, 7, 7], [8, 8, 8]], [[8, 8, 8]]]


def test_steps_whose_shape_varies_within_an_episode_cannot_be_stacked():
    """As in rlds (whose ``batch`` stacks too), windows of steps of different shapes fail, and say why."""
    episodes = variable_episodes([[[1], [2, 3]]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot batch tensors with different shapes"):
        list(batch_nested_steps(episodes, 2, 1).as_numpy_iterator())


def test_ragged_fields_are_windowed_by_dataset_window():
    """Elements with a ``tf.RaggedTensor`` field (no native kernel for them) are windowed through
    ``Dataset.window``, with the same semantics; the dense fields beside them stack as usual."""
    values = [[[1]], [[2, 3]], [[4]], [[5, 6], [7]]]
    ds = tf.data.Dataset.from_tensor_slices({"r": tf.ragged.constant(values, ragged_rank=2), "x": tf.range(4)})
    got = [(w["r"].to_list(), w["x"].numpy().tolist()) for w in batch(ds, 2, 1, 2)]
    assert got == [([[[1]], [[4]]], [0, 2]), ([[[2, 3]], [[5, 6], [7]]], [1, 3]), ([[[4]]], [2]), ([[[5, 6], [7]]], [3])]
    assert isinstance(batch(ds, 2, 1).element_spec["r"], tf.RaggedTensorSpec)
