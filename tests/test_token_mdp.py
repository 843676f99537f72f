"""The token-level MDP view: layout, masks, reward placement, dones, returns-to-go (by hand and against a
Python reference), truncation, padding, %BC selection, the PyTorch collate and a real TFDS dataset."""

from __future__ import annotations

import doctest
import functools

import numpy as np
import pytest
import tensorflow as tf
import torch

from rlds_lang.char_tokenizer import CharTokenizer
from rlds_lang.tokenizers import wordle_tokenizer
from tests.test_transforms import EPISODES, dataset_dir  # noqa: F401  (dataset_dir is a pytest fixture)
from transforms import token_mdp as token_mdp_module
from transforms.loading import load
from transforms.token_mdp import (
    EPISODE_KEYS,
    TOKEN_KEYS,
    TokenMDPConfig,
    pad_batches,
    token_batches,
    token_mdp,
)
from transforms.torch_bridge import TensorBatches, collate_token_mdp

PLAIN = TokenMDPConfig(observation_key="observation")
TOK = wordle_tokenizer()


def episodes_of(games: list[dict]) -> tf.data.Dataset:
    """Episodes from plain dicts ``{"observations", "actions", "rewards", "terminal", "id"}`` (SAR, is_last step
    appended with action "" and reward 0), text observations; one element per game."""
    rows = {"observation": [], "action": [], "reward": [], "is_last": [], "is_terminal": []}
    for game in games:
        steps = len(game["observations"])
        rows["observation"] += game["observations"]
        rows["action"] += list(game["actions"]) + [""]
        rows["reward"] += list(game["rewards"]) + [0.0]
        rows["is_last"] += [False] * (steps - 1) + [True]
        rows["is_terminal"] += [False] * (steps - 1) + [game.get("terminal", True)]
    lengths = [len(game["observations"]) for game in games]
    ragged = {key: tf.RaggedTensor.from_row_lengths(tf.constant(value, tf.float32 if key == "reward" else None), lengths)
              for key, value in rows.items()}
    ids = tf.constant([game.get("id", f"g{i}") for i, game in enumerate(games)])
    return tf.data.Dataset.from_tensor_slices((ragged, ids)).map(
        lambda steps, episode_id: {"steps": tf.data.Dataset.from_tensor_slices(steps), "episode_id": episode_id})


GAME = {"observations": ["", "⬛🟨⬛⬛🟩", "🟩🟩🟩🟩🟩"], "actions": ["crane", "abide"], "rewards": [-1.0, 0.0], "id": "game"}


def sequences(episodes: tf.data.Dataset, config: TokenMDPConfig = PLAIN, tokenizer: CharTokenizer = TOK) -> list[dict]:
    return list(token_mdp(episodes, tokenizer, config).as_numpy_iterator())


# The hand-built episode, written out token by token (a=6 ... z=31, ⬛=32 🟨=34 🟩=35; BOS 1, EOS 2, EOO 3, EOA 4).
#            BOS EOO  c   r  a   n   e  EOA  ⬛  🟨  ⬛  ⬛  🟩 EOO  a  b  i   d  e  EOA 🟩  🟩  🟩  🟩  🟩 EOO EOS
EXPECTED_IDS = [1, 3, 8, 23, 6, 19, 10, 4, 32, 34, 32, 32, 35, 3, 6, 7, 14, 9, 10, 4, 35, 35, 35, 35, 35, 3, 2]
ACTION = [0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
TURN = [-1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, -1]
TURN_END = [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
REWARDS = [0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
DONES = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
RTG = [0, 0, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]


@pytest.fixture(scope="module")
def game_sequence() -> dict:
    """The hand-built game's sequence with the default configuration (plain-text observations)."""
    [seq] = sequences(episodes_of([GAME]))
    return seq


def test_hand_built_episode_exactly(game_sequence):
    seq = game_sequence
    assert sorted(seq) == sorted(TOKEN_KEYS + EPISODE_KEYS)
    assert seq["input_ids"].dtype == np.int32 and seq["input_ids"].tolist() == EXPECTED_IDS
    assert seq["action_mask"].tolist() == [bool(x) for x in ACTION]
    assert seq["turn_index"].tolist() == TURN
    assert seq["turn_end"].tolist() == [bool(x) for x in TURN_END]
    assert seq["rewards"].dtype == np.float32 and seq["rewards"].tolist() == REWARDS
    assert seq["dones"].tolist() == [bool(x) for x in DONES]
    assert seq["returns_to_go"].dtype == np.float32 and seq["returns_to_go"].tolist() == RTG
    assert (seq["length"], seq["truncated"], seq["episode_return"], seq["episode_id"]) == (27, False, -1.0, b"game")
    assert TOK.decode(seq["input_ids"], skip_special=False) == \
        "<bos><eoo>crane<eoa>⬛🟨⬛⬛🟩<eoo>abide<eoa>🟩🟩🟩🟩🟩<eoo><eos>"


def test_gamma_discounts_per_action_token():
    [seq] = sequences(episodes_of([GAME]), TokenMDPConfig(observation_key="observation", gamma=0.5))
    expected = np.zeros(27)
    expected[2:8] = [-1 / 32, -1 / 16, -1 / 8, -1 / 4, -1 / 2, -1]  # "crane" + EOA, reward -1 on the EOA
    assert seq["returns_to_go"].tolist() == expected.tolist()
    assert seq["rewards"].tolist() == REWARDS  # gamma changes returns only


def test_token_reward_on_every_action_token():
    [seq] = sequences(episodes_of([GAME]), TokenMDPConfig(observation_key="observation", token_reward=-0.1))
    rewards = np.where(np.array(ACTION, bool), -0.1, 0.0) + np.array(REWARDS)
    np.testing.assert_allclose(seq["rewards"], rewards.astype(np.float32), rtol=0, atol=1e-7)
    expected = np.zeros(27)
    expected[14:20] = [-0.6, -0.5, -0.4, -0.3, -0.2, -0.1]  # abide + EOA
    expected[2:8] = [-2.2, -2.1, -2.0, -1.9, -1.8, -1.7]   # crane + EOA (-1.1) + all of abide's
    np.testing.assert_allclose(seq["returns_to_go"], expected, rtol=0, atol=1e-6)
    assert seq["episode_return"] == -1.0  # the environment's return: token rewards are not part of it


def test_truncated_episode_has_no_done():
    [seq] = sequences(episodes_of([{**GAME, "terminal": False}]))
    assert not seq["dones"].any()
    assert seq["input_ids"].tolist() == EXPECTED_IDS and seq["rewards"].tolist() == REWARDS


def test_max_length_keeps_the_prefix_and_flags_truncation(game_sequence):
    full = game_sequence
    [cut] = sequences(episodes_of([GAME]), TokenMDPConfig(observation_key="observation", max_length=10))
    assert cut["length"] == 10 and cut["truncated"] and not full["truncated"]
    for key in TOKEN_KEYS:
        assert cut[key].tolist() == full[key][:10].tolist(), key
    assert cut["episode_return"] == -1.0
    [exact] = sequences(episodes_of([GAME]), TokenMDPConfig(observation_key="observation", max_length=27))
    assert exact["length"] == 27 and not exact["truncated"]


def test_padding_uses_pad_id_and_attention_mask():
    short = {"observations": ["", "🟩🟩🟩🟩🟩"], "actions": ["crane"], "rewards": [0.0], "id": "short"}
    batch = next(pad_batches(token_mdp(episodes_of([GAME, short]), TOK, PLAIN), 4, 32, TOK.pad_id).as_numpy_iterator())
    assert batch["input_ids"].shape == (2, 32) and batch["input_ids"].dtype == np.int64
    assert batch["input_ids"][0].tolist() == EXPECTED_IDS + [TOK.pad_id] * 5
    assert batch["attention_mask"].dtype == np.int64
    assert batch["attention_mask"].tolist() == [[1] * 27 + [0] * 5, [1] * 15 + [0] * 17]
    assert TOK.pad_id != TOK.eos_id and (batch["input_ids"][1, 15:] == TOK.pad_id).all()
    assert batch["input_ids"][1, 14] == TOK.eos_id
    assert not batch["action_mask"][:, 27:].any() and not batch["rewards"][:, 27:].any()
    assert batch["length"].tolist() == [27, 15] and batch["episode_id"].tolist() == [b"game", b"short"]
    too_long = pad_batches(token_mdp(episodes_of([GAME]), TOK, PLAIN), 1, 20, TOK.pad_id)
    with pytest.raises(tf.errors.InvalidArgumentError, match="longer than max_length=20"):
        list(too_long)


def test_token_batches_into_torch_dtypes_and_shapes():
    config = TokenMDPConfig(observation_key="observation", max_length=32)
    batches = list(torch.utils.data.DataLoader(
        TensorBatches(token_batches(episodes_of([GAME] * 5), TOK, config, batch_size=2)), batch_size=None))
    assert [b["input_ids"].shape[0] for b in batches] == [2, 2, 1]
    batch = batches[0]
    dtypes = {key: value.dtype for key, value in batch.items() if key != "episode_id"}
    assert dtypes == {"input_ids": torch.int64, "turn_index": torch.int64, "attention_mask": torch.int64,
                      "length": torch.int64, "action_mask": torch.bool, "turn_end": torch.bool, "dones": torch.bool,
                      "truncated": torch.bool, "rewards": torch.float32, "returns_to_go": torch.float32,
                      "episode_return": torch.float32}
    assert batch["episode_id"] == ["game", "game"]
    assert batch["input_ids"].shape == (2, 32) and batch["input_ids"][0, :27].tolist() == EXPECTED_IDS
    dropped = token_batches(episodes_of([GAME] * 5), TOK, config, batch_size=2, drop_remainder=True)
    assert len(list(dropped)) == 2


def test_shuffle_is_seeded_and_repeat_cache_work():
    games = [{**GAME, "id": f"g{i}"} for i in range(8)]
    config = TokenMDPConfig(observation_key="observation", max_length=32)

    def order(**kwargs) -> list[str]:
        ds = token_batches(episodes_of(games), TOK, config, batch_size=4, **kwargs)
        return [i.decode() for b in ds.take(4).as_numpy_iterator() for i in b["episode_id"]]

    in_order = [f"g{i}" for i in range(8)]
    assert order(repeat=True, cache=True) == in_order * 2
    shuffled = order(shuffle_buffer=8, seed=3)
    assert shuffled == order(shuffle_buffer=8, seed=3) and sorted(shuffled) == sorted(in_order)
    assert shuffled != order(shuffle_buffer=8, seed=4)


def test_top_p_keeps_the_best_episodes():
    games = [{**GAME, "rewards": [r, 0.0], "id": f"r{r:+.0f}"} for r in (-3.0, 0.0, -1.0, -5.0, -2.0)]
    config = TokenMDPConfig(observation_key="observation", max_length=32)
    kept = [i.decode() for b in token_batches(episodes_of(games), TOK, config, 8, top_p=0.4).as_numpy_iterator()
            for i in b["episode_id"]]
    assert kept == ["r+0", "r-1"]  # ceil(0.4 * 5) = 2 best, in dataset order
    everything = token_batches(episodes_of(games), TOK, config, 8, top_p=1.0)
    assert next(everything.as_numpy_iterator())["episode_return"].tolist() == [-3.0, 0.0, -1.0, -5.0, -2.0]


def test_collate_equals_the_tf_padded_batches():
    games = [GAME, {"observations": ["", "🟩🟩🟩🟩🟩"], "actions": ["crane"], "rewards": [0.0], "id": "short"},
             {**GAME, "terminal": False, "id": "cut"}]
    config = TokenMDPConfig(observation_key="observation", max_length=24, gamma=0.9, token_reward=-0.01)
    items = sequences(episodes_of(games), config)
    [tf_batch] = list(TensorBatches(token_batches(episodes_of(games), TOK, config, batch_size=3)))
    for batch in (collate_token_mdp(items, TOK.pad_id, max_length=24),
                  collate_token_mdp([{k: torch.as_tensor(np.array(v)) if k != "episode_id" else v for k, v in item.items()}
                                     for item in items], TOK.pad_id, max_length=24)):
        assert sorted(batch) == sorted(tf_batch)
        for key, value in tf_batch.items():
            if key == "episode_id":
                assert batch[key] == value == ["game", "short", "cut"]
            else:
                assert batch[key].dtype == value.dtype and torch.equal(batch[key], value), key
    longest = collate_token_mdp(items, TOK.pad_id)  # pads to the longest item
    assert longest["input_ids"].shape == (3, 24) and longest["attention_mask"][1].sum() == 15
    loader = torch.utils.data.DataLoader(items, batch_size=2, collate_fn=functools.partial(collate_token_mdp, pad_id=0))
    assert [b["input_ids"].shape for b in loader] == [(2, 24), (1, 24)]
    with pytest.raises(ValueError, match="item 0 .*'game'.* 24 tokens, more than max_length=10"):
        collate_token_mdp(items, TOK.pad_id, max_length=10)


def test_encode_prompt_agrees_with_the_tf_layout_including_non_ascii():
    tok = CharTokenizer("abcé二👩\u200d🟩\x00 ", name="mixed")
    game = {"observations": ["", "🟩é\x00", "二 👩\u200d👩", "end?"], "actions": ["abc", "", "ΩΩ"],
            "rewards": [1.0, 2.0, 3.0]}
    [seq] = sequences(episodes_of([game]), tokenizer=tok, config=TokenMDPConfig(observation_key="observation"))
    ids = seq["input_ids"].tolist()
    for t in range(len(game["observations"])):
        prompt = tok.encode_prompt(game["observations"][:t + 1], game["actions"][:t])
        assert ids[:len(prompt)] == prompt, t
        assert ids[len(prompt) - 1] == tok.eoo_id and seq["turn_index"][len(prompt) - 1] == t
    assert ids == tok.encode_prompt(game["observations"], game["actions"]) + [tok.eos_id]
    assert tok.unk_id in ids  # "?", "Ω", "e", "n", "d" are outside the alphabet
    assert seq["rewards"][seq["turn_end"]].tolist() == [1.0, 2.0, 3.0]  # the empty action still has its EOA


def reference(game: dict, tok: CharTokenizer, config: TokenMDPConfig) -> dict[str, list]:
    """The token MDP of one game written as a plain Python loop, token by token."""
    tokens = []  # (id, is action, turn, is end of action, reward) per token

    def env(ids: list[int], turn: int) -> None:
        tokens.extend((i, False, turn, False, 0.0) for i in ids)

    env([tok.bos_id], -1)
    for i, observation in enumerate(game["observations"]):
        env(tok.encode(observation, strict=False) + [tok.eoo_id], i)
        if i < len(game["actions"]):
            tokens.extend((c, True, i, False, config.token_reward) for c in tok.encode(game["actions"][i], strict=False))
            tokens.append((tok.eoa_id, True, i, True, config.token_reward + game["rewards"][i]))
    env([tok.eos_id], -1)
    ids, action, turn, end, rewards = (list(column) for column in zip(*tokens))
    rtg, following = [0.0] * len(ids), 0.0
    for k in reversed(range(len(ids))):
        if action[k]:
            following = rewards[k] + config.gamma * following
            rtg[k] = following
    last_end = max((k for k in range(len(ids)) if end[k]), default=None)
    dones = [k == last_end and game["terminal"] for k in range(len(ids))]
    n = config.max_length
    return {"input_ids": ids[:n], "action_mask": action[:n], "turn_index": turn[:n], "turn_end": end[:n],
            "rewards": rewards[:n], "dones": dones[:n], "returns_to_go": rtg[:n], "length": min(len(ids), n),
            "truncated": len(ids) > n, "episode_return": sum(game["rewards"])}


def random_games(count: int, seed: int) -> list[dict]:
    """Random short games over a few letters, squares, non-ASCII and out-of-alphabet characters."""
    rng = np.random.default_rng(seed)
    chars = list("abcz⬛🟨🟩é二?\x00")

    def text() -> str:
        return "".join(rng.choice(chars, size=rng.integers(0, 8)))

    games = []
    for _ in range(count):
        n = int(rng.integers(0, 5))
        games.append({"observations": [text() for _ in range(n + 1)], "actions": [text() for _ in range(n)],
                      "rewards": rng.choice([-1.0, 0.0, 0.5, 2.0], size=n).tolist(), "terminal": bool(rng.random() < 0.5)})
    return games


@pytest.mark.parametrize("gamma,token_reward,max_length", [(1.0, 0.0, 40), (0.9, -0.25, 12), (0.5, 0.0, 7),
                                                           (0.0, -0.25, 30)])
def test_matches_a_python_reference(gamma, token_reward, max_length):
    tok = CharTokenizer("abcé二⬛🟩", name="property")
    config = TokenMDPConfig(observation_key="observation", gamma=gamma, token_reward=token_reward, max_length=max_length)
    game_list = random_games(40, seed=int(gamma * 10) + max_length)
    assert any(len(reference(game, tok, config)["input_ids"]) == max_length for game in game_list)  # some are cut
    for game, seq in zip(game_list, sequences(episodes_of(game_list), config, tok), strict=True):
        expected = reference(game, tok, config)
        for key, value in expected.items():
            if key in ("rewards", "returns_to_go", "episode_return"):
                np.testing.assert_allclose(seq[key], np.asarray(value, np.float32), rtol=1e-6, atol=1e-6, err_msg=key)
            else:
                assert np.asarray(seq[key]).tolist() == value, key


def test_long_sequence_with_small_gamma_stays_finite_and_exact():
    # 1,001 action tokens at gamma 0.5: gamma**1000 underflows the cumsum formula; the recurrence takes over.
    game = {"observations": ["a", "b"], "actions": ["ab" * 500], "rewards": [1.0], "terminal": True}
    tok = CharTokenizer("ab")
    for gamma in (0.5, 0.99):
        config = TokenMDPConfig(observation_key="observation", gamma=gamma, token_reward=1.0, max_length=1100)
        [seq] = sequences(episodes_of([game]), config, tok)
        expected = reference(game, tok, config)["returns_to_go"]
        assert np.isfinite(seq["returns_to_go"]).all()
        np.testing.assert_allclose(seq["returns_to_go"], np.asarray(expected, np.float32), rtol=1e-6)


def test_bad_configuration_and_fields_are_named():
    with pytest.raises(KeyError, match=r"observation_key='observation/board': no field 'board'"):
        token_mdp(episodes_of([GAME]), TOK, TokenMDPConfig(observation_key="observation/board"))  # plain text
    with pytest.raises(KeyError, match=r"reward_key='score': no field 'score'"):
        token_mdp(episodes_of([GAME]), TOK, TokenMDPConfig(observation_key="observation", reward_key="score"))
    with pytest.raises(ValueError, match=r"'reward' \(action_key\) must be text"):
        token_mdp(episodes_of([GAME]), TOK, TokenMDPConfig(observation_key="observation", action_key="reward"))
    with pytest.raises(ValueError, match="gamma must be in"):
        TokenMDPConfig(gamma=1.5)
    with pytest.raises(ValueError, match="max_length must be"):
        TokenMDPConfig(max_length=0)
    with pytest.raises(ValueError, match="batch_size must be"):
        token_batches(episodes_of([GAME]), TOK, PLAIN, batch_size=0)


def test_real_tfds_dataset(dataset_dir):  # noqa: F811  (the fixture imported above)
    """Episodes written by the logger and loaded by tfds.load, observations under observation/text."""
    tok = CharTokenizer("abcdeilmnorstxyz🟩⬛é\x00二", name="replay")
    config = TokenMDPConfig(max_length=64)
    by_id = {s["episode_id"].decode(): s for s in token_mdp(load(dataset_dir), tok, config).as_numpy_iterator()}
    assert sorted(by_id) == ["tr-00000000", "tr-00000001"]
    for (episode_id, seq), scripted in zip(sorted(by_id.items()), EPISODES):
        texts = [o["text"] for o in scripted.observations]
        assert seq["input_ids"].tolist() == tok.encode_prompt(texts, scripted.actions) + [tok.eos_id], episode_id
        assert seq["rewards"][seq["turn_end"]].tolist() == list(scripted.rewards)
        assert seq["episode_return"] == sum(scripted.rewards)
        assert seq["dones"].any() == (not scripted.truncated)
    terminal = by_id["tr-00000000"]
    assert terminal["dones"].nonzero()[0].tolist() == [terminal["turn_end"].nonzero()[0][-1]]
    [batch] = list(TensorBatches(token_batches(load(dataset_dir), tok, config, batch_size=2, top_p=0.5)))
    assert batch["episode_id"] == ["tr-00000000"] and batch["input_ids"].dtype == torch.int64


def test_docstring_examples_run():
    result = doctest.testmod(token_mdp_module, extraglobs={"tf": tf, "np": np})
    assert result.failed == 0 and result.attempted >= 8
    from transforms import torch_bridge  # collate_token_mdp's example

    result = doctest.testmod(torch_bridge, extraglobs={"tf": tf, "np": np})
    assert result.failed == 0 and result.attempted >= 3


def test_the_default_observation_key_reads_a_plain_text_observation():
    """A dataset of a plain ``dm_env`` text environment stores ``observation`` as one string: the default
    ``observation/text`` reads it, and the sequences are those of ``observation_key="observation"``."""
    from transforms.token_mdp import resolved_config

    steps = {"observation": ["a", "b"], "action": ["ab", ""], "reward": [2.0, 0.0], "is_last": [False, True],
             "is_terminal": [False, True]}
    plain = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    assert resolved_config(plain, TokenMDPConfig()).observation_key == "observation"
    by_default = next(token_mdp(plain, TOK, TokenMDPConfig()).as_numpy_iterator())
    named = next(token_mdp(plain, TOK, TokenMDPConfig(observation_key="observation")).as_numpy_iterator())
    assert by_default["input_ids"].tolist() == named["input_ids"].tolist()
    nested = {**steps, "observation": {"text": ["a", "b"]}}
    dicts = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(nested)})
    assert resolved_config(dicts, TokenMDPConfig()).observation_key == "observation/text"
    assert resolved_config(plain, TokenMDPConfig(observation_key="action")).observation_key == "action"
