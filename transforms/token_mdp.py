"""The token-level MDP view of language episodes (the ILQL paper's), padded batches and a PyTorch collate.

One episode (SAR steps o_0, a_0, r_0, ..., o_T with a_T == "" on the ``is_last`` step) becomes one token
sequence laid out as

    [BOS] o_0 [EOO] a_0 [EOA] o_1 [EOO] a_1 [EOA] ... o_T [EOO] [EOS]

with per-token fields:

* ``action_mask``: the agent's tokens, i.e. the characters of every action a_i (i < T) and its ``[EOA]``
  (deciding to stop is an action too); everything else (BOS, observation characters, EOO, EOS) is the
  environment's.
* ``turn_index``: the step each token belongs to (-1 for BOS and EOS); ``turn_end``: each action's ``[EOA]``.
* ``rewards``: the environment reward r_i on a_i's ``[EOA]``, plus ``TokenMDPConfig.token_reward`` on
  every action token.
* ``dones``: true on the final action's ``[EOA]`` when the episode ended in a terminal state (false when it
  was truncated: the value of what follows is unknown, not zero).
* ``returns_to_go``: on action tokens, ``sum_k gamma^k * rewards`` over this and the later action tokens of
  the whole episode (``gamma`` per action token, environment tokens skipped); 0 on environment tokens.

Sequences longer than ``max_length`` keep their first ``max_length`` tokens and set ``truncated``;
``returns_to_go``, ``dones`` and ``episode_return`` still describe the whole episode (a cut does not
change what the agent's actions earned). Each episode's steps are read as one batch, then
``EPISODES_PER_CALL`` episodes at a time are laid out by ``transforms.token_layout.layout`` (plain numpy,
vectorised, in one ``tf.numpy_function`` call): the same code lays out the episodes that
``transforms.data_source`` reads without TensorFlow, so both readers give the same tensors.

Example::

    import tensorflow as tf
    from torch.utils.data import DataLoader
    from rlds_lang.tokenizers import wordle_tokenizer
    from transforms.token_mdp import TokenMDPConfig, token_batches
    from transforms.torch_bridge import TensorBatches

    steps = {"observation": ["", "⬛🟨⬛⬛🟩", "🟩🟩🟩🟩🟩"], "action": ["crane", "abide", ""],
             "reward": [-1.0, 0.0, 0.0], "is_last": [False, False, True], "is_terminal": [False, False, True]}
    episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    config = TokenMDPConfig(max_length=32, observation_key="observation")
    for batch in DataLoader(TensorBatches(token_batches(episodes, wordle_tokenizer(), config, batch_size=8)),
                            batch_size=None):
        print(batch["input_ids"].shape, batch["returns_to_go"][0, batch["action_mask"][0]])
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import tensorflow as tf

from transforms.selection import filter_top_p
from transforms.specs import collect
from transforms.token_layout import (EPISODE_KEYS, TOKEN_KEYS, StepsBatch, TokenMDPConfig,
                                     for_plain_text_observation, layout, step_field, step_fields)

#: Episodes laid out per call of the vectorised layout (amortises per-call overhead; order is kept).
EPISODES_PER_CALL = 64
#: What ``_sequences_of_batch`` reads back from ``layout``: the token fields, their row splits, the episode fields.
_LAID_OUT = TOKEN_KEYS + ("splits", "length", "truncated", "episode_return")
_TF_DTYPES = {"input_ids": tf.int32, "action_mask": tf.bool, "turn_index": tf.int32, "turn_end": tf.bool,
              "rewards": tf.float32, "dones": tf.bool, "returns_to_go": tf.float32, "splits": tf.int64,
              "length": tf.int32, "truncated": tf.bool, "episode_return": tf.float32}


def resolved_config(episodes: tf.data.Dataset, config: TokenMDPConfig) -> TokenMDPConfig:
    """``config`` with the default ``observation_key`` (``observation/text``) read as ``observation`` when the
    episodes' observation is one string (a dataset of a plain ``dm_env`` text environment), not a dict."""
    spec = episodes.element_spec
    steps = spec["steps"].element_spec if isinstance(spec, Mapping) and "steps" in spec else {}
    return for_plain_text_observation(config, isinstance(steps, Mapping)
                                      and steps.get("observation") == tf.TensorSpec((), tf.string))


def _check_steps_spec(episodes: tf.data.Dataset, config: TokenMDPConfig) -> None:
    """Fails early, naming the field, when the episodes lack a field the layout needs or hold the wrong type."""
    if not isinstance(episodes.element_spec, Mapping) or "steps" not in episodes.element_spec:
        raise KeyError(f"token_mdp: episodes need a 'steps' dataset; got {episodes.element_spec}")
    steps = episodes.element_spec["steps"].element_spec
    for what, path, kind in step_fields(config):
        spec = step_field(steps, path, what)
        if not isinstance(spec, tf.TensorSpec) or spec.shape.rank != 0:
            raise ValueError(f"token_mdp: step field {path!r} ({what}) must be a scalar {kind}, got {spec}")
        if (kind == "text") != (spec.dtype == tf.string):
            raise ValueError(f"token_mdp: step field {path!r} ({what}) must be {kind}, got dtype {spec.dtype.name}")


def _episode_steps(episode: Mapping[str, Any], config: TokenMDPConfig) -> dict[str, tf.Tensor]:
    """The fields the layout needs, for all steps of one episode at once (``[S]`` each) and its id."""
    steps = collect(episode["steps"])
    return {"observation": step_field(steps, config.observation_key), "action": step_field(steps, config.action_key),
            "reward": tf.cast(step_field(steps, config.reward_key), tf.float64),
            "is_last": tf.cast(steps["is_last"], tf.bool), "is_terminal": tf.cast(steps["is_terminal"], tf.bool),
            "episode_id": tf.convert_to_tensor(episode.get("episode_id", ""), tf.string)}


def _sequences_of_batch(batch: Mapping[str, tf.RaggedTensor], tokenizer: Any, config: TokenMDPConfig) -> dict[str, Any]:
    """Token sequences of a batch of episodes (``[E, (S)]`` ragged steps): ragged ``[E, (L)]`` token fields and
    ``[E]`` episode fields, laid out by ``transforms.token_layout.layout`` in one ``tf.numpy_function`` call."""

    def run(observation, action, reward, is_last, is_terminal, step_splits, episode_id):
        steps = StepsBatch(observation, action, reward, is_last, is_terminal, step_splits, episode_id)
        out = layout(steps, tokenizer, config)
        return tuple(out[key] for key in _LAID_OUT)

    inputs = [batch["observation"].flat_values, batch["action"].flat_values, batch["reward"].flat_values,
              batch["is_last"].flat_values, batch["is_terminal"].flat_values, batch["observation"].row_splits,
              batch["episode_id"]]
    results = tf.numpy_function(run, inputs, [_TF_DTYPES[key] for key in _LAID_OUT], stateful=False)
    laid_out = dict(zip(_LAID_OUT, results))
    for key in _LAID_OUT:
        laid_out[key].set_shape([None])
    out: dict[str, Any] = {key: tf.RaggedTensor.from_row_splits(laid_out[key], laid_out["splits"], validate=False)
                           for key in TOKEN_KEYS}
    out.update({key: laid_out[key] for key in EPISODE_KEYS if key != "episode_id"})
    out["episode_id"] = batch["episode_id"]
    return out


def token_mdp(episodes: tf.data.Dataset, tokenizer: Any,
              config: TokenMDPConfig = TokenMDPConfig()) -> tf.data.Dataset:
    """One token sequence per episode (variable length ``L <= max_length``), fields as in the module docstring.

    Element: ``input_ids`` int32[L], ``action_mask`` bool[L], ``turn_index`` int32[L], ``turn_end`` bool[L],
    ``rewards`` float32[L], ``dones`` bool[L], ``returns_to_go`` float32[L], ``length`` int32,
    ``truncated`` bool, ``episode_return`` float32 (sum of the environment rewards), ``episode_id`` string
    (``""`` when episodes have none). Text outside the tokenizer's alphabet becomes ``unk_id``.
    Episodes are read one by one (their steps as one batch each), laid out ``EPISODES_PER_CALL`` at a time
    with vectorised offset arithmetic, and handed out one by one again, in their original order.

    >>> from rlds_lang.tokenizers import CharTokenizer
    >>> steps = {"observation": ["a", "b"], "action": ["ab", ""], "reward": [2.0, 0.0],
    ...          "is_last": [False, True], "is_terminal": [False, True]}
    >>> eps = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    >>> seq = next(token_mdp(eps, CharTokenizer("ab"), TokenMDPConfig(observation_key="observation")).as_numpy_iterator())
    >>> seq["input_ids"].tolist(), seq["rewards"].tolist(), seq["dones"].astype(int).tolist()
    ([1, 6, 3, 6, 7, 4, 7, 3, 2], [0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0], [0, 0, 0, 0, 0, 1, 0, 0, 0])
    """
    config = resolved_config(episodes, config)
    _check_steps_spec(episodes, config)
    # No Python control flow on tensors in these functions: skipping autograph's conversion saves tracing time.
    plain = tf.autograph.experimental.do_not_convert
    steps = episodes.map(plain(lambda episode: _episode_steps(episode, config)), num_parallel_calls=tf.data.AUTOTUNE)
    batches = steps.ragged_batch(EPISODES_PER_CALL).map(
        plain(lambda batch: _sequences_of_batch(batch, tokenizer, config)), num_parallel_calls=tf.data.AUTOTUNE)
    # unbatch gives ragged-rank-0 RaggedTensors; the identity map turns them into plain tensors.
    return batches.unbatch().map(plain(lambda sequence: {key: tf.identity(value) for key, value in sequence.items()}))


def _padding_value(key: str, dtype: tf.DType, pad_id: int) -> tf.Tensor:
    if key == "input_ids":
        return tf.constant(pad_id, dtype)
    if dtype == tf.string:
        return tf.constant("", tf.string)
    return tf.zeros([], dtype)


def _widen_integers(batch: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """int32 fields as int64 (torch embeddings and indexing want long), others unchanged."""
    return {key: tf.cast(value, tf.int64) if value.dtype == tf.int32 else value for key, value in batch.items()}


def pad_batches(sequences: tf.data.Dataset, batch_size: int, max_length: int, pad_id: int,
                drop_remainder: bool = False) -> tf.data.Dataset:
    """Batches of ``token_mdp`` sequences padded to exactly ``max_length``, with an ``attention_mask``.

    ``input_ids`` are padded with ``pad_id`` (give ``tokenizer.pad_id``, never EOS), other per-token
    fields with ``False``/``0``; ``attention_mask`` is 1 on real tokens. Integer fields come out as int64
    (``input_ids``, ``turn_index``, ``attention_mask``, ``length``), ready for ``TensorBatches``.
    A sequence longer than ``max_length`` fails with an error naming ``max_length``.

    >>> seqs = tf.data.Dataset.from_tensors({"input_ids": tf.constant([1, 7, 2], tf.int32), "length": 3})
    >>> batch = next(pad_batches(seqs, 4, 5, pad_id=0).as_numpy_iterator())
    >>> batch["input_ids"].tolist(), batch["attention_mask"].tolist()
    ([[1, 7, 2, 0, 0]], [[1, 1, 1, 0, 0]])
    """
    if not isinstance(pad_id, (int, np.integer)):
        raise ValueError(f"pad_batches: pad_id must be an int (tokenizer.pad_id), got {pad_id!r}")
    if "attention_mask" in sequences.element_spec:
        raise ValueError("pad_batches: sequences already have an 'attention_mask' field")

    spec = sequences.element_spec
    per_token = [key for key, s in spec.items() if s.shape.rank == 1]

    def pad(batch: dict[str, Any]) -> dict[str, tf.Tensor]:
        # ragged_batch gives a dense batch when the spec fixes the length: make every per-token field ragged.
        batch = {key: tf.RaggedTensor.from_tensor(value) if key in per_token and isinstance(value, tf.Tensor) else value
                 for key, value in batch.items()}
        lengths = batch["input_ids"].row_lengths()
        check_length = tf.debugging.assert_less_equal(
            tf.reduce_max(tf.concat([lengths, [0]], 0)), tf.constant(max_length, tf.int64),
            message=f"pad_batches: a sequence is longer than max_length={max_length} (use token_mdp's max_length)")
        with tf.control_dependencies([check_length]):
            out = {key: batch[key].to_tensor(_padding_value(key, spec[key].dtype, pad_id), shape=[None, max_length])
                   if key in per_token else tf.identity(batch[key]) for key in batch}
        out["attention_mask"] = tf.sequence_mask(lengths, max_length, tf.int64)
        return _widen_integers(out)

    return sequences.ragged_batch(batch_size, drop_remainder=drop_remainder).map(
        tf.autograph.experimental.do_not_convert(pad), num_parallel_calls=tf.data.AUTOTUNE)


def token_batches(episodes: tf.data.Dataset, tokenizer: Any, config: TokenMDPConfig, batch_size: int,
                  top_p: float | None = None, shuffle_buffer: int = 0, seed: int = 0, repeat: bool = False,
                  drop_remainder: bool = False, cache: bool = False) -> tf.data.Dataset:
    """The whole pipeline from RLDS episodes to padded token batches, for ``TensorBatches``.

    Optional ``filter_top_p`` (filtered BC: the best ``top_p`` fraction of episodes by undiscounted
    return) -> ``token_mdp`` -> optional in-memory ``cache`` of the sequences (worth it for several
    epochs over a dataset that fits in memory) -> optional ``shuffle`` (``shuffle_buffer`` sequences,
    ``seed``; a new order each epoch) -> optional ``repeat`` -> ``pad_batches`` to ``config.max_length``
    -> ``prefetch``.

    >>> from rlds_lang.tokenizers import CharTokenizer
    >>> steps = {"observation": ["a", "b"], "action": ["ab", ""], "reward": [2.0, 0.0],
    ...          "is_last": [False, True], "is_terminal": [False, True]}
    >>> eps = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    >>> config = TokenMDPConfig(max_length=12, observation_key="observation")
    >>> batch = next(token_batches(eps, CharTokenizer("ab"), config, batch_size=2).as_numpy_iterator())
    >>> batch["input_ids"].shape, batch["input_ids"].dtype, batch["attention_mask"].sum()
    ((1, 12), dtype('int64'), 9)
    """
    if batch_size < 1:
        raise ValueError(f"token_batches: batch_size must be >= 1, got {batch_size}")
    if top_p is not None:
        episodes = filter_top_p(episodes, top_p, reward_key=config.reward_key)
    sequences = token_mdp(episodes, tokenizer, config)
    if cache:
        sequences = sequences.cache()
    if shuffle_buffer > 0:
        sequences = sequences.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        sequences = sequences.repeat()
    return pad_batches(sequences, batch_size, config.max_length, tokenizer.pad_id,
                       drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


__all__ = ["TokenMDPConfig", "token_mdp", "pad_batches", "token_batches", "TOKEN_KEYS",
           "EPISODE_KEYS"]
