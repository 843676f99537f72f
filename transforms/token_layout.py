"""The token-level MDP layout in plain numpy: episodes -> token sequences, for both readers of a built dataset.

One episode (SAR steps o_0, a_0, r_0, ..., o_T with a_T == "" on the ``is_last`` step) becomes one token
sequence laid out as

    [BOS] o_0 [EOO] a_0 [EOA] o_1 [EOO] a_1 [EOA] ... o_T [EOO] [EOS]

with the per-token fields ``input_ids``, ``action_mask``, ``turn_index``, ``turn_end``, ``rewards``, ``dones``
and ``returns_to_go`` and the per-episode ``length``, ``truncated``, ``episode_return`` and ``episode_id``
(``transforms.token_mdp``'s docstring says what each one holds). This module is the one implementation of that
layout: ``transforms.token_mdp`` runs it inside ``tf.data`` (one ``tf.numpy_function`` call per
``EPISODES_PER_CALL`` episodes) and ``transforms.data_source`` runs it on episodes that TFDS decoded without
TensorFlow, so both readers give the same tensors. It imports neither TensorFlow nor torch.

Everything is vectorised over a batch of episodes: the texts of all steps are tokenised in one call per field
(``encode_texts``), and every token's position is computed from the lengths of the texts with offset
arithmetic; no Python work per token.

Example::

    from rlds_lang.tokenizers import wordle_tokenizer
    from transforms.token_layout import TokenMDPConfig, StepsBatch, layout, sequences

    steps = StepsBatch.of_episodes([{"steps": [
        {"observation": "", "action": "crane", "reward": -1.0, "is_last": False, "is_terminal": False},
        {"observation": "⬛🟨⬛⬛🟩", "action": "", "reward": 0.0, "is_last": True, "is_terminal": True}]}],
        TokenMDPConfig(observation_key="observation"))
    [sequence] = sequences(layout(steps, wordle_tokenizer(), TokenMDPConfig(observation_key="observation")))
    print(sequence["input_ids"], sequence["returns_to_go"])
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

#: Per-token fields of a sequence, in output order.
TOKEN_KEYS = ("input_ids", "action_mask", "turn_index", "turn_end", "rewards", "dones", "returns_to_go")
#: Per-episode (scalar) fields of a sequence.
EPISODE_KEYS = ("length", "truncated", "episode_return", "episode_id")
#: The numpy dtype of every field (``episode_id`` is ``bytes``).
DTYPES = {"input_ids": np.int32, "action_mask": np.bool_, "turn_index": np.int32, "turn_end": np.bool_,
          "rewards": np.float32, "dones": np.bool_, "returns_to_go": np.float32, "length": np.int32,
          "truncated": np.bool_, "episode_return": np.float32, "episode_id": np.object_}
#: Role codes of tokens while the layout is assembled.
_ENV, _ACTION, _END_OF_ACTION = 0, 1, 2
#: Above this exponent range (``n_action_tokens * -ln(gamma)``) the cumsum formula's ``gamma**k`` could
#: underflow float64 (e**-708), so an episode's returns-to-go use the exact recurrence instead.
_MAX_LOG_RANGE = 600.0


@dataclasses.dataclass(frozen=True)
class TokenMDPConfig:
    """How episodes become token sequences (see ``transforms.token_mdp`` for the layout and fields).

    >>> TokenMDPConfig(max_length=64, gamma=0.99).max_length
    64
    """

    #: tokens per sequence after truncation (the first ``max_length`` are kept).
    max_length: int = 128
    #: ``/``-path of the observation text inside a step; ``"observation"`` when it is plain text (which the default
    #: also reads: ``for_plain_text_observation``).
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


def for_plain_text_observation(config: TokenMDPConfig, plain: bool) -> TokenMDPConfig:
    """``config`` with the default ``observation_key`` (``observation/text``) read as ``observation`` when the
    episodes' observation is one string (``plain``: a dataset of a plain ``dm_env`` text environment); a key
    given explicitly is kept. Both readers apply it (``transforms.token_mdp.resolved_config``,
    ``transforms.array_record.resolved_source_config``).

    >>> for_plain_text_observation(TokenMDPConfig(), plain=True).observation_key
    'observation'
    >>> for_plain_text_observation(TokenMDPConfig(), plain=False).observation_key
    'observation/text'
    """
    default = config.observation_key == TokenMDPConfig.observation_key
    return dataclasses.replace(config, observation_key="observation") if plain and default else config


def step_fields(config: TokenMDPConfig) -> tuple[tuple[str, str, str], ...]:
    """``(what, /-path, kind)`` of every step field the layout reads: kind ``text``, ``number`` or ``flag``.

    >>> step_fields(TokenMDPConfig())[0]
    ('observation_key', 'observation/text', 'text')
    """
    return (("observation_key", config.observation_key, "text"), ("action_key", config.action_key, "text"),
            ("reward_key", config.reward_key, "number"), ("is_last", "is_last", "flag"),
            ("is_terminal", "is_terminal", "flag"))


def step_field(step: Any, path: str, what: str = "field") -> Any:
    """The value at ``/``-path ``path`` of a step, or of a description of steps with ``keys()`` (a ``tf.data``
    element spec, TFDS features); a ``KeyError`` naming the path and the fields there otherwise.

    >>> step_field({"observation": {"text": "⬛"}}, "observation/text")
    '⬛'
    >>> step_field({"observation": "⬛"}, "observation/text", "observation_key")
    Traceback (most recent call last):
    KeyError: "token_mdp: observation_key='observation/text': no field 'text' in the steps; fields there: none ('observation/text' stops at str)"
    """
    value = step
    for part in path.split("/"):
        if not hasattr(value, "keys") or part not in value.keys():
            fields = sorted(value.keys()) if hasattr(value, "keys") else f"none ({path!r} stops at {type(value).__name__})"
            raise KeyError(f"token_mdp: {what}={path!r}: no field {part!r} in the steps; fields there: {fields}")
        value = value[part]
    return value


def _text(value: Any) -> str:
    """A text field as ``str``: bytes are UTF-8 (invalid bytes become U+FFFD, as ``tf.strings.unicode_decode``)."""
    if isinstance(value, np.ndarray):
        value = value.item()
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@dataclasses.dataclass
class StepsBatch:
    """The fields the layout reads, for the steps of ``E`` episodes laid end to end (``N`` steps in all).

    ``step_splits[e]:step_splits[e + 1]`` are episode ``e``'s steps. Texts are ``str`` (or UTF-8 ``bytes``,
    decoded on use); ``reward`` is float64; ``episode_id`` holds one ``bytes`` per episode.
    """

    observation: Sequence[Any]
    action: Sequence[Any]
    reward: np.ndarray
    is_last: np.ndarray
    is_terminal: np.ndarray
    step_splits: np.ndarray
    episode_id: np.ndarray

    @classmethod
    def of_episodes(cls, episodes: Iterable[Mapping[str, Any]], config: TokenMDPConfig) -> "StepsBatch":
        """The steps of episodes decoded into Python (``tfds.data_source`` items, or plain dicts): each a mapping
        with an iterable ``steps`` of step mappings and optionally an ``episode_id``."""
        observation: list[Any] = []
        action: list[Any] = []
        reward: list[float] = []
        is_last: list[bool] = []
        is_terminal: list[bool] = []
        lengths: list[int] = []
        ids: list[bytes] = []
        for episode in episodes:
            steps = list(episode["steps"])
            for step in steps:
                observation.append(step_field(step, config.observation_key))
                action.append(step_field(step, config.action_key))
                reward.append(step_field(step, config.reward_key))
                is_last.append(step_field(step, "is_last"))
                is_terminal.append(step_field(step, "is_terminal"))
            lengths.append(len(steps))
            episode_id = episode.get("episode_id", b"")
            ids.append(episode_id.encode("utf-8") if isinstance(episode_id, str) else bytes(episode_id))
        return cls(observation, action, np.asarray(reward).astype(np.float64),
                   np.asarray(is_last, bool), np.asarray(is_terminal, bool),
                   np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64),
                   np.asarray(ids + [b""], dtype=object)[:-1])


def encode_texts(tokenizer: Any, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every text's ids as ``(flat int32 ids, int64 lengths)``: ``tokenizer.encode(text, strict=False)`` of each
    (a character outside the vocabulary becomes ``unk_id``), through the tokenizer's vectorised
    ``encode_ragged`` or batch ``encode_batch`` when it has one.

    >>> from rlds_lang.char_tokenizer import CharTokenizer
    >>> [a.tolist() for a in encode_texts(CharTokenizer("ab"), ["ab", "", "c"])]
    [[6, 7, 5], [2, 0, 1]]
    """
    ragged = getattr(tokenizer, "encode_ragged", None)
    if ragged is not None:
        values, lengths = ragged(texts)
        return np.asarray(values, np.int32), np.asarray(lengths, np.int64)
    batch = getattr(tokenizer, "encode_batch", None)
    rows = batch(list(texts)) if batch is not None else [tokenizer.encode(text, strict=False) for text in texts]
    return _flatten(rows)


def encode_observations(tokenizer: Any, texts: Sequence[str], previous_actions: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every observation's ids: ``encode_texts``, or, for a tokenizer that writes an observation with the action
    before it (``encode_observation``, e.g. ``rlds_lang.wordle.board_tokenizer``), that (``""`` before the first)."""
    with_previous = getattr(tokenizer, "encode_observation", None)
    if with_previous is None:
        return encode_texts(tokenizer, texts)
    return _flatten([with_previous(text, previous, strict=False) for text, previous in zip(texts, previous_actions)])


def _flatten(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter((len(row) for row in rows), np.int64, len(rows))
    values = np.fromiter((token for row in rows for token in row), np.int32, int(lengths.sum()))
    return values, lengths


def _positions(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each value of rows of ``lengths``: (its row, its position within the row), int64.

    >>> [a.tolist() for a in _positions(np.array([3, 0, 1]))]
    [[0, 0, 0, 2], [0, 1, 2, 0]]
    """
    rows = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(lengths) else np.zeros(0, np.int64)
    return rows, np.arange(len(rows), dtype=np.int64) - starts[rows]


def _reverse_cumsum(block: np.ndarray) -> np.ndarray:
    """``G_k = sum_{j >= k} r_j`` along each row, summed from the row's end (``tf.cumsum(reverse=True)``'s order)."""
    return np.cumsum(block[:, ::-1], axis=1)[:, ::-1]


def returns_to_go(block: np.ndarray, counts: np.ndarray, gamma: float) -> np.ndarray:
    """Discounted returns-to-go along each row of a float64 ``[E, width]`` block of rewards whose row ``e`` holds
    ``counts[e]`` values then zeros: ``G_k = sum_{j >= k} gamma^(j-k) r_j``.

    ``gamma == 1`` is an exact reverse cumulative sum; otherwise ``cumsum(r * gamma^j) / gamma^k``, or, for a
    row whose ``gamma^counts`` could underflow float64, the exact reverse recurrence. Rows are independent: a row's
    values do not depend on the others in the block.

    >>> returns_to_go(np.array([[1.0, 1.0, 1.0], [2.0, 0.0, 0.0]]), np.array([3, 1]), 0.5).tolist()
    [[1.75, 1.5, 1.0], [2.0, 0.0, 0.0]]
    """
    if gamma == 1.0:
        return _reverse_cumsum(block)
    if gamma == 0.0:
        return block.copy()
    log_gamma = math.log(gamma)
    out = np.zeros_like(block)
    closed = counts * -log_gamma < _MAX_LOG_RANGE
    if closed.any():
        scale = np.exp(np.arange(block.shape[1], dtype=np.float64) * log_gamma)
        out[closed] = _reverse_cumsum(block[closed] * scale) / scale
    if (~closed).any():
        rows = block[~closed]
        following = np.zeros(len(rows))
        recurrence = np.zeros_like(rows)
        for position in range(rows.shape[1] - 1, -1, -1):
            following = rows[:, position] + gamma * following
            recurrence[:, position] = following
        out[~closed] = recurrence
    return out


def layout(steps: StepsBatch, tokenizer: Any, config: TokenMDPConfig) -> dict[str, np.ndarray]:
    """The token sequences of a batch of episodes, laid end to end: each per-token field (``TOKEN_KEYS``) flat over
    the kept tokens of all episodes, ``splits`` (int64 ``[E + 1]``, episode ``e``'s tokens are
    ``splits[e]:splits[e + 1]``) and the per-episode fields (``EPISODE_KEYS``, ``[E]`` each). ``sequences``
    cuts it into one dict per episode.

    Each token's position in the batch's concatenated sequences is computed from the lengths of the texts
    and every field is written with one assignment per part of the layout (BOS, observations, EOO, actions,
    EOA, EOS).
    """
    step_splits = np.asarray(steps.step_splits, np.int64)
    n_episodes = len(step_splits) - 1
    n_steps = int(step_splits[-1])
    step_episode, local_step = _positions(np.diff(step_splits))             # [N] episode / index within it
    is_last = np.asarray(steps.is_last, bool)
    has_action = ~is_last
    step_rewards = np.where(has_action, np.asarray(steps.reward, np.float64), 0.0)
    same_episode_next = np.concatenate([step_episode[1:] == step_episode[:-1], [False]])[:n_steps]
    following_terminal = same_episode_next & np.concatenate([np.asarray(steps.is_terminal, bool)[1:], [False]])[:n_steps]
    observations = [_text(t) for t in steps.observation]
    actions = [_text(t) for t in steps.action]
    previous = ["" if local_step[i] == 0 else actions[i - 1] for i in range(n_steps)]  # a_{i-1}, "" at i = 0
    obs_ids, n_obs = encode_observations(tokenizer, observations, previous)
    act_ids, n_act = encode_texts(tokenizer, [a if has_action[i] else "" for i, a in enumerate(actions)])

    # Step i's tokens are o_i [EOO] a_i [EOA] (no action part on an is_last step); each episode's steps
    # follow its BOS and are followed by its EOS.
    step_tokens = n_obs + 1 + n_act + has_action.astype(np.int64)
    cumulative = np.concatenate([[0], np.cumsum(step_tokens)]).astype(np.int64)
    splits = cumulative[step_splits] + 2 * np.arange(n_episodes + 1, dtype=np.int64)   # [E + 1] episode offsets
    total = int(splits[-1])
    step_start = cumulative[:-1] + 2 * step_episode + 1
    eoo_at = step_start + n_obs
    obs_step, obs_offset = _positions(n_obs)
    act_step, act_offset = _positions(n_act)
    action_steps = np.flatnonzero(has_action)
    input_ids = np.zeros(total, np.int32)
    roles = np.full(total, _ENV, np.int8)
    token_step = np.full(total, -1, np.int64)                               # -1: BOS and EOS, no step
    for positions, ids, role, step in (
            (splits[:-1], tokenizer.bos_id, _ENV, -1),
            (step_start[obs_step] + obs_offset, obs_ids, _ENV, obs_step),
            (eoo_at, tokenizer.eoo_id, _ENV, np.arange(n_steps)),
            (eoo_at[act_step] + 1 + act_offset, act_ids, _ACTION, act_step),
            (eoo_at[action_steps] + 1 + n_act[action_steps], tokenizer.eoa_id, _END_OF_ACTION, action_steps),
            (splits[1:] - 1, tokenizer.eos_id, _ENV, -1)):
        input_ids[positions] = ids
        roles[positions] = role
        token_step[positions] = step
    step_of_token = np.maximum(token_step, 0)
    action_mask = roles != _ENV
    turn_end = roles == _END_OF_ACTION
    padded_rewards = np.append(step_rewards, 0.0)                           # an episode may have no steps
    rewards = (np.where(turn_end, padded_rewards[step_of_token], 0.0)
               + np.where(action_mask, np.float64(config.token_reward), 0.0))

    # Returns-to-go along each episode's action tokens: a dense [E, most action tokens] block.
    full_lengths = np.diff(splits)
    token_episode = np.repeat(np.arange(n_episodes, dtype=np.int64), full_lengths)
    action_at = np.flatnonzero(action_mask)
    action_episode = token_episode[action_at]
    counts = np.bincount(action_episode, minlength=n_episodes).astype(np.int64)
    _, action_index = _positions(counts)
    block = np.zeros((n_episodes, int(counts.max(initial=0))), np.float64)
    block[action_episode, action_index] = rewards[action_at]
    token_returns = np.zeros(total, np.float64)
    token_returns[action_at] = returns_to_go(block, counts, config.gamma)[action_episode, action_index]

    tokens = {"input_ids": input_ids, "action_mask": action_mask,
              "turn_index": np.where(token_step >= 0, np.append(local_step, 0)[step_of_token], -1).astype(np.int32),
              "turn_end": turn_end, "rewards": rewards.astype(np.float32),
              "dones": turn_end & np.append(following_terminal, False)[step_of_token],
              "returns_to_go": token_returns.astype(np.float32)}
    # Truncation: keep each episode's first max_length tokens.
    lengths = np.minimum(full_lengths, config.max_length)
    kept = np.arange(total) - splits[:-1][token_episode] < config.max_length
    out: dict[str, np.ndarray] = {key: tokens[key][kept] for key in TOKEN_KEYS}
    out["splits"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    out["length"] = lengths.astype(np.int32)
    out["truncated"] = full_lengths > config.max_length
    out["episode_return"] = np.bincount(step_episode, weights=step_rewards, minlength=n_episodes).astype(np.float32)
    out["episode_id"] = np.asarray(steps.episode_id, dtype=object).reshape(n_episodes)
    return out


def sequences(laid_out: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """``layout``'s output cut into one dict per episode (``TOKEN_KEYS`` arrays, ``EPISODE_KEYS`` numpy scalars
    and the ``bytes`` id), as ``token_mdp(...).as_numpy_iterator()`` yields them."""
    splits = laid_out["splits"]
    return [{**{key: laid_out[key][splits[e]:splits[e + 1]] for key in TOKEN_KEYS},
             **{key: laid_out[key][e] for key in EPISODE_KEYS}} for e in range(len(splits) - 1)]


__all__ = ["for_plain_text_observation", "TOKEN_KEYS", "EPISODE_KEYS", "DTYPES", "TokenMDPConfig", "StepsBatch", "step_fields", "step_field", "encode_texts",
           "encode_observations", "returns_to_go", "layout", "sequences"]
