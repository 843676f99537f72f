"""The order in which ``tf.data``'s ``shuffle(buffer, seed).repeat()`` hands out a dataset's elements, in numpy.

A training run reads its token sequences as ``sequences.shuffle(buffer_size, seed=seed,
reshuffle_each_iteration=True).repeat()`` (``transforms.token_mdp.token_batches``). The order that gives is a
function of the number of elements, the buffer size and the seed alone, and ``ShuffledRepeat`` computes it
without TensorFlow, so that the data-source reader (``transforms.data_source``) hands out the same episodes in
the same order as the ``tf.data`` reader. What it reproduces, as TensorFlow 2.21's kernels do it (checked
against ``tf.data`` by ``tests/test_data_source.py`` for many sizes, buffers and seeds):

* the op's seeds: ``tf.random`` gives an op seed ``s`` without a global seed the pair ``(87654321, s mod
  (2**31 - 1))`` (``random_seed.get_seed``);
* the random numbers: TensorFlow's ``PhiloxRandom(seed, seed2)`` (Philox4x32-10, the 64-bit ``seed`` as its key,
  ``seed2`` as the high half of its 128-bit counter), read one 32-bit sample at a time;
* reshuffling: each epoch (each iterator of the shuffle made by ``repeat``) draws two samples from a generator
  seeded with the op's seeds and uses them as the seeds of that epoch's generator;
* the buffer: filled with the first ``buffer`` elements; each output picks slot ``start + sample % size`` of the
  filled part, swaps the slot at ``start`` into its place, advances ``start`` and refills at the end.

A global seed (``tf.random.set_seed``) changes ``tf.data``'s seeds; the trainers never set one.

Example::

    from transforms.shuffle_order import ShuffledRepeat

    order = ShuffledRepeat(10, buffer_size=4, seed=0)
    order.epoch(0)                       # the positions of the first epoch, as tf.data gives them
    next(order.batches(3))               # the first batch of three
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

#: ``tensorflow.python.framework.random_seed.DEFAULT_GRAPH_SEED``: the graph-level seed of an op seeded alone.
DEFAULT_GRAPH_SEED = 87654321
#: op seeds are taken modulo this (``random_seed._truncate_seed``).
_MAXINT32 = 2**31 - 1
_MASK = np.uint64(0xFFFFFFFF)
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85


def philox_samples(seed: int, seed2: int, count: int, skip: int = 0) -> np.ndarray:
    """``count`` 32-bit samples (uint32) of TensorFlow's ``PhiloxRandom(seed, seed2)`` read one at a time, after
    ``skip`` of them: the stream a ``SingleSampleAdapter`` over that generator gives.

    >>> philox_samples(0, 0, 4).tolist()  # Philox4x32-10 of counter 0 and key 0 (Random123's known answer)
    [1713891541, 3781805453, 3159862348, 2600524760]
    """
    first_block, offset = divmod(skip, 4)
    blocks = (offset + count + 3) // 4
    counter = np.arange(first_block, first_block + blocks, dtype=np.uint64)
    c0, c1 = counter & _MASK, counter >> np.uint64(32)
    c2 = np.full(blocks, np.uint64(seed2) & _MASK, np.uint64)
    c3 = np.full(blocks, (np.uint64(seed2) >> np.uint64(32)) & _MASK, np.uint64)
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    for _ in range(10):
        p0, p1 = _M0 * c0, _M1 * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & _MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & _MASK)
        k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
    samples = np.stack([c0, c1, c2, c3], axis=1).reshape(-1).astype(np.uint32)
    return samples[offset:offset + count]


def op_seeds(seed: int) -> tuple[int, int]:
    """The ``(seed, seed2)`` pair ``tf.data`` gives an op seeded with ``seed`` when no global seed is set.

    >>> op_seeds(3)
    (87654321, 3)
    """
    return DEFAULT_GRAPH_SEED, int(seed) % _MAXINT32


def buffer_order(samples: np.ndarray, size: int, buffer_size: int) -> np.ndarray:
    """The positions ``0..size-1`` in the order a shuffle buffer of ``buffer_size`` hands them out, drawing one of
    ``samples`` (uint32) per output.

    >>> buffer_order(np.array([1, 0, 5, 0], np.uint32), 4, 2).tolist()
    [1, 0, 3, 2]
    """
    buffer = list(range(min(buffer_size, size)))   # ring buffer: slot j % buffer_size holds the j-th element read
    start, end = 0, len(buffer)
    order = np.empty(size, np.int64)
    draws = samples.tolist()
    for out in range(size):
        index = (start + draws[out] % (end - start)) % buffer_size
        first = start % buffer_size
        order[out] = buffer[index]
        buffer[index] = buffer[first]
        start += 1
        if end < size:
            buffer[first] = end
            end += 1
    return order


class ShuffledRepeat:
    """The element order of ``shuffle(buffer_size, seed=seed, reshuffle_each_iteration=True).repeat()`` over
    ``size`` elements (module docstring); ``buffer_size`` 0 keeps the dataset's order.

    >>> order = ShuffledRepeat(5, buffer_size=0, seed=0)
    >>> batches = order.batches(2, start=2)   # endless: batch 2 spans the first two epochs
    >>> order.epoch(1).tolist(), next(batches).tolist(), next(batches).tolist()
    ([0, 1, 2, 3, 4], [4, 0], [1, 2])
    """

    def __init__(self, size: int, buffer_size: int, seed: int):
        if size < 1:
            raise ValueError(f"ShuffledRepeat: no elements to repeat (size {size})")
        if buffer_size < 0:
            raise ValueError(f"ShuffledRepeat: buffer_size must be >= 0, got {buffer_size}")
        self.size, self.buffer_size, self.seed = size, buffer_size, seed

    def epoch(self, epoch: int) -> np.ndarray:
        """The positions of epoch ``epoch`` (0-based) in the order they are handed out."""
        if self.buffer_size == 0:
            return np.arange(self.size, dtype=np.int64)
        seed, seed2 = philox_samples(*op_seeds(self.seed), 2, skip=2 * epoch).tolist()
        return buffer_order(philox_samples(seed, seed2, self.size), self.size, self.buffer_size)

    def batches(self, batch_size: int, start: int = 0) -> Iterator[np.ndarray]:
        """Batch after batch of ``batch_size`` positions (the stream cut in consecutive pieces, across epochs;
        endless), from batch number ``start`` on; skipping costs one epoch's order, not the batches before."""
        if batch_size < 1:
            raise ValueError(f"ShuffledRepeat: batch_size must be >= 1, got {batch_size}")
        position = start * batch_size
        epoch, offset = divmod(position, self.size)
        pending = self.epoch(epoch)[offset:]
        while True:
            while len(pending) < batch_size:
                epoch += 1
                pending = np.concatenate([pending, self.epoch(epoch)])
            yield pending[:batch_size]
            pending = pending[batch_size:]


__all__ = ["DEFAULT_GRAPH_SEED", "philox_samples", "op_seeds", "buffer_order", "ShuffledRepeat"]
