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
change what the agent's actions earned). Everything is vectorised: each episode's steps are read as one
batch, then ``EPISODES_PER_CALL`` episodes at a time are tokenised in one ``tf_encode`` call per text
field and laid out with offset arithmetic and one scatter per field (no per-token or per-step work).

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

import dataclasses
import math
from typing import Any, Mapping

import numpy as np
import tensorflow as tf

from rlds_lang.char_tokenizer import CharTokenizer, ragged_positions
from transforms.selection import filter_top_p
from transforms.specs import collect

#: Per-token fields of a sequence, in output order.
TOKEN_KEYS = ("input_ids", "action_mask", "turn_index", "turn_end", "rewards", "dones", "returns_to_go")
#: Per-episode (scalar) fields of a sequence.
EPISODE_KEYS = ("length", "truncated", "episode_return", "episode_id")
#: Role codes of tokens while the layout is assembled.
_ENV, _ACTION, _END_OF_ACTION = 0, 1, 2
#: Above this exponent range (``n_action_tokens * -ln(gamma)``) the cumsum formula's ``gamma**k`` could
#: underflow float64 (e**-708), so returns-to-go fall back to the exact recurrence.
_MAX_LOG_RANGE = 600.0
#: Episodes laid out per call of the vectorised layout (amortises per-call overhead; order is kept).
EPISODES_PER_CALL = 64


@dataclasses.dataclass(frozen=True)
class TokenMDPConfig:
    """How episodes become token sequences (see the module docstring for the layout and fields).

    >>> TokenMDPConfig(max_length=64, gamma=0.99).max_length
    64
    """

    #: tokens per sequence after truncation (the first ``max_length`` are kept).
    max_length: int = 128
    #: ``/``-path of the observation text inside a step; ``"observation"`` when it is plain text.
    observation_key: str = "observation/text"
    #: ``/``-path of the action text inside a step.
    action_key: str = "action"
    #: ``/``-path of the environment reward inside a step.
    reward_key: str = "reward"
    #: added to the reward of every action token (e.g. a per-character cost).
    token_reward: float = 0.0
    #: discount per action token for ``returns_to_go`` (environment tokens are not counted).
    gamma: float = 1.0

    def __post_init__(self) -> None:
        if self.max_length < 1:
            raise ValueError(f"TokenMDPConfig.max_length must be >= 1, got {self.max_length}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"TokenMDPConfig.gamma must be in [0, 1], got {self.gamma}")
        if not math.isfinite(self.token_reward):
            raise ValueError(f"TokenMDPConfig.token_reward must be finite, got {self.token_reward}")


def _field_spec(spec: Any, path: str, what: str) -> Any:
    """The spec at ``/``-path ``path`` of a step spec; a missing field raises ``KeyError`` naming it."""
    value = spec
    for part in path.split("/"):
        if not isinstance(value, Mapping) or part not in value:
            fields = sorted(value) if isinstance(value, Mapping) else f"none ({path!r} stops at a {value.dtype.name} tensor)"
            raise KeyError(f"token_mdp: {what}={path!r}: no field {part!r} in the steps; fields there: {fields}")
        value = value[part]
    return value


def _check_steps_spec(episodes: tf.data.Dataset, config: TokenMDPConfig) -> None:
    """Fails early, naming the field, when the episodes lack a field the layout needs or hold the wrong type."""
    if not isinstance(episodes.element_spec, Mapping) or "steps" not in episodes.element_spec:
        raise KeyError(f"token_mdp: episodes need a 'steps' dataset; got {episodes.element_spec}")
    steps = episodes.element_spec["steps"].element_spec
    for what, path, kind in (("observation_key", config.observation_key, "text"),
                             ("action_key", config.action_key, "text"),
                             ("reward_key", config.reward_key, "number"),
                             ("is_last", "is_last", "flag"), ("is_terminal", "is_terminal", "flag")):
        spec = _field_spec(steps, path, what)
        if not isinstance(spec, tf.TensorSpec) or spec.shape.rank != 0:
            raise ValueError(f"token_mdp: step field {path!r} ({what}) must be a scalar {kind}, got {spec}")
        if (kind == "text") != (spec.dtype == tf.string):
            raise ValueError(f"token_mdp: step field {path!r} ({what}) must be {kind}, got dtype {spec.dtype.name}")


def _field(steps: Mapping[str, Any], path: str) -> tf.Tensor:
    for part in path.split("/"):
        steps = steps[part]
    return steps


def _returns_to_go(rewards: tf.Tensor, gamma: float) -> tf.Tensor:
    """Discounted returns-to-go along the last axis: ``G_k = sum_{j >= k} gamma^(j-k) r_j``, float64, vectorised.

    Rows are independent sequences (zero padding at their ends changes nothing). ``gamma == 1`` is an
    exact reverse cumulative sum; otherwise ``cumsum(r * gamma^j) / gamma^k``, or the exact reverse
    recurrence (``tf.scan`` over positions, all rows at once) when ``gamma^n`` could underflow float64.

    >>> _returns_to_go(tf.constant([[1.0, 1.0, 1.0], [2.0, 0.0, 0.0]], tf.float64), 0.5).numpy().tolist()
    [[1.75, 1.5, 1.0], [2.0, 0.0, 0.0]]
    """
    if gamma == 1.0:
        return tf.cumsum(rewards, axis=-1, reverse=True)
    if gamma == 0.0:
        return rewards
    log_gamma = math.log(gamma)
    width = tf.shape(rewards)[-1]

    def closed_form() -> tf.Tensor:
        scale = tf.exp(tf.cast(tf.range(width), tf.float64) * log_gamma)
        return tf.cumsum(rewards * scale, axis=-1, reverse=True) / scale

    def recurrence() -> tf.Tensor:
        by_position = tf.transpose(rewards)
        returns = tf.scan(lambda following, r: r + gamma * following, by_position,
                          initializer=tf.zeros_like(by_position[0]), reverse=True)
        return tf.transpose(returns)

    return tf.cond(tf.cast(width, tf.float64) * -log_gamma < _MAX_LOG_RANGE, closed_form, recurrence)


def _episode_steps(episode: Mapping[str, Any], config: TokenMDPConfig) -> dict[str, tf.Tensor]:
    """The fields the layout needs, for all steps of one episode at once (``[S]`` each) and its id."""
    steps = collect(episode["steps"])
    return {"observation": _field(steps, config.observation_key), "action": _field(steps, config.action_key),
            "reward": tf.cast(_field(steps, config.reward_key), tf.float64),
            "is_last": tf.cast(steps["is_last"], tf.bool), "is_terminal": tf.cast(steps["is_terminal"], tf.bool),
            "episode_id": tf.convert_to_tensor(episode.get("episode_id", ""), tf.string)}


def _encode_observations(batch: Mapping[str, tf.RaggedTensor], tokenizer: Any, local_step: tf.Tensor) -> tf.RaggedTensor:
    """Every step's observation ids: ``tokenizer.tf_encode``, or, for a tokenizer that writes an observation
    with the action before it (``tf_encode_observations``, e.g. ``rlds_lang.wordle.board_tokenizer``), that."""
    texts = batch["observation"].flat_values
    with_previous = getattr(tokenizer, "tf_encode_observations", None)
    if with_previous is None:
        return tokenizer.tf_encode(texts)
    previous = tf.where(local_step > 0, tf.roll(batch["action"].flat_values, 1, 0), "")  # a_{i-1}, "" at i = 0
    return with_previous(texts, previous)


def _sequences_of_batch(batch: Mapping[str, tf.RaggedTensor], tokenizer: CharTokenizer,
                        config: TokenMDPConfig) -> dict[str, Any]:
    """Token sequences of a batch of episodes (``[E, (S)]`` ragged steps): ragged ``[E, (L)]`` token fields
    and ``[E]`` episode fields.

    Everything is flat vectors and offsets: each token's position in the batch's concatenated sequences
    is computed from the lengths of the texts, and every field is written with one scatter.
    """
    step_splits = batch["observation"].row_splits                        # [E + 1] first step of each episode
    step_episode, local_step = ragged_positions(batch["observation"])    # [N] episode / index within it
    n_episodes = batch["observation"].nrows()
    has_action = tf.logical_not(batch["is_last"].flat_values)
    step_rewards = tf.where(has_action, batch["reward"].flat_values, 0.0)
    same_episode_next = tf.concat([step_episode[1:] == step_episode[:-1], [False]], 0)
    following_terminal = same_episode_next & tf.concat([batch["is_terminal"].flat_values[1:], [False]], 0)
    observations = _encode_observations(batch, tokenizer, local_step)      # [N, (ids)]
    actions = tokenizer.tf_encode(tf.where(has_action, batch["action"].flat_values, ""))

    # Step i's tokens are o_i [EOO] a_i [EOA] (no action part on an is_last step); each episode's steps
    # follow its BOS and are followed by its EOS.
    n_obs, n_act, n_eoa = observations.row_lengths(), actions.row_lengths(), tf.cast(has_action, tf.int64)
    step_tokens = n_obs + 1 + n_act + n_eoa
    body_splits = tf.gather(tf.concat([[0], tf.cumsum(step_tokens)], 0), step_splits)
    splits = body_splits + 2 * tf.range(n_episodes + 1, dtype=tf.int64)   # [E + 1] episode offsets
    step_start = tf.cumsum(step_tokens, exclusive=True) + 2 * step_episode + 1
    obs_step, obs_offset = ragged_positions(observations)
    act_step, act_offset = ragged_positions(actions)
    action_steps = tf.where(has_action)[:, 0]
    eoo_at = step_start + n_obs
    parts = [  # (positions, token ids, role, step): role 0 environment, 1 action, 2 end of action; step -1 = none
        (splits[:-1], tokenizer.bos_id, _ENV, -1),
        (tf.gather(step_start, obs_step) + obs_offset, observations.values, _ENV, obs_step),
        (eoo_at, tokenizer.eoo_id, _ENV, tf.range(tf.size(step_start, out_type=tf.int64))),
        (tf.gather(eoo_at + 1, act_step) + act_offset, actions.values, _ACTION, act_step),
        (tf.gather(eoo_at + 1 + n_act, action_steps), tokenizer.eoa_id, _END_OF_ACTION, action_steps),
        (splits[1:] - 1, tokenizer.eos_id, _ENV, -1),
    ]
    positions = tf.concat([p for p, _, _, _ in parts], 0)[:, None]
    total = tf.reshape(splits[-1], [1])  # static shape [1]: the scatters below have a known rank

    def scatter(values: list[Any], dtype: tf.DType) -> tf.Tensor:
        full = [tf.broadcast_to(tf.cast(v, dtype), tf.shape(p)) for v, (p, _, _, _) in zip(values, parts)]
        return tf.scatter_nd(positions, tf.concat(full, 0), total)

    input_ids = scatter([ids for _, ids, _, _ in parts], tf.int32)
    roles = scatter([role for _, _, role, _ in parts], tf.int32)
    token_step = scatter([step for _, _, _, step in parts], tf.int64)
    step_of_token = tf.maximum(token_step, 0)
    action_mask = roles != _ENV
    turn_end = roles == _END_OF_ACTION
    rewards = (tf.where(turn_end, tf.gather(step_rewards, step_of_token), 0.0)
               + tf.where(action_mask, tf.constant(config.token_reward, tf.float64), 0.0))

    # Returns-to-go along each episode's action tokens: a dense [E, most action tokens] block.
    full_lengths = splits[1:] - splits[:-1]
    token_episode = tf.repeat(tf.range(n_episodes), full_lengths)
    action_at = tf.where(action_mask)[:, 0]
    action_episode = tf.gather(token_episode, action_at)
    action_splits = tf.concat([[0], tf.cumsum(tf.math.bincount(action_episode, minlength=n_episodes,
                                                               dtype=tf.int64))], 0)
    action_index = tf.stack([action_episode, tf.range(tf.size(action_at, out_type=tf.int64))
                             - tf.gather(action_splits, action_episode)], 1)
    most_actions = tf.reduce_max(tf.concat([action_splits[1:] - action_splits[:-1], [0]], 0))
    block = tf.scatter_nd(action_index, tf.gather(rewards, action_at), tf.stack([n_episodes, most_actions]))
    returns_to_go = tf.scatter_nd(action_at[:, None], tf.gather_nd(_returns_to_go(block, config.gamma), action_index),
                                  total)

    tokens = {"input_ids": input_ids, "action_mask": action_mask,
              "turn_index": tf.cast(tf.where(token_step >= 0, tf.gather(local_step, step_of_token), -1), tf.int32),
              "turn_end": turn_end, "rewards": tf.cast(rewards, tf.float32),
              "dones": turn_end & tf.gather(following_terminal, step_of_token),
              "returns_to_go": tf.cast(returns_to_go, tf.float32)}
    # Truncation: keep each episode's first max_length tokens.
    lengths = tf.minimum(full_lengths, config.max_length)
    kept = tf.where(tf.range(total[0]) - tf.gather(splits, token_episode) < config.max_length)[:, 0]
    kept_splits = tf.concat([[0], tf.cumsum(lengths)], 0)
    out: dict[str, Any] = {
        key: tf.RaggedTensor.from_row_splits(tf.gather(tokens[key], kept), kept_splits, validate=False)
        for key in TOKEN_KEYS}
    out["length"] = tf.cast(lengths, tf.int32)
    out["truncated"] = full_lengths > config.max_length
    out["episode_return"] = tf.cast(tf.math.unsorted_segment_sum(step_rewards, step_episode, n_episodes), tf.float32)
    out["episode_id"] = batch["episode_id"]
    return out


def token_mdp(episodes: tf.data.Dataset, tokenizer: CharTokenizer,
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


def token_batches(episodes: tf.data.Dataset, tokenizer: CharTokenizer, config: TokenMDPConfig, batch_size: int,
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
