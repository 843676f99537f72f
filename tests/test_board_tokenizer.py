"""WordBoardTokenizer: words as one id, feedback as (letter, colour) cells; the tf twins and the token layout."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest
import tensorflow as tf

from rlds_lang import tokenizers
from rlds_lang.env import run_episode
from rlds_lang.wordle import board_tokenizer, lmrl_gym
from rlds_lang.wordle.board_tokenizer import WordBoardTokenizer, written_cells
from rlds_lang.wordle.words import lmrl_gym_words
from tests.test_token_mdp import episodes_of, sequences
from transforms.token_mdp import TokenMDPConfig

PATTERNS = ["".join(p) for p in itertools.product("⬛🟨🟩", repeat=5)]


@pytest.fixture(scope="module")
def tok() -> WordBoardTokenizer:
    return tokenizers.make_tokenizer("lmrl_gym_board")


def test_docstring_examples_run():
    assert doctest.testmod(board_tokenizer, extraglobs={"tf": tf}).failed == 0
    assert doctest.testmod(tokenizers).failed == 0  # ragged_positions, the offsets both layouts use


def test_every_word_is_one_id_and_every_feedback_five_cells_that_tell_letter_and_colour(tok, tmp_path):
    words = lmrl_gym_words().words
    ids = [tok.encode(w) for w in words]
    assert all(len(i) == 1 for i in ids) and len({i[0] for i in ids}) == len(words) == 431
    assert [tok.decode(i) for i in ids] == list(words)
    cells = {tuple(tok.encode_observation(p, w)) for p in PATTERNS for w in ("crane", "slate")}
    assert len(cells) == 2 * len(PATTERNS) and all(len(c) == 5 for c in cells)
    # a cell means the same (letter, colour) whichever guess it came from: crane and trace share an orange a...
    assert tok.encode_observation("⬛⬛🟩⬛⬛", "crane")[2] == tok.encode_observation("⬛⬛🟩⬛⬛", "brace")[2]
    assert tok.encode_observation("⬛⬛🟩⬛⬛", "crane")[2] != tok.encode_observation("⬛⬛🟨⬛⬛", "crane")[2]
    assert tok.observation_text(tok.decode(tok.encode_observation(PATTERNS[7], "crane"))) == PATTERNS[7]
    for text in ("", "zzzzz", "cran", "⬛🟧🟦⬜", "crane⬛"):  # anything else: characters, and back
        assert tok.decode(tok.encode(text)) == text
    with pytest.raises(ValueError, match="'Q'"):
        tok.encode("Qrane")
    assert tok.encode("Qrane", strict=False)[0] == tok.unk_id
    tok.save(tmp_path / "tokenizer.json")
    assert tokenizers.load_tokenizer(tmp_path / "tokenizer.json") == tok == tokenizers.make_tokenizer("lmrl_gym_board")


def test_bad_word_lists_and_descriptions_are_named():
    with pytest.raises(ValueError, match=r"words\[1\] = 'cran' is not 5 letters"):
        WordBoardTokenizer(["crane", "cran"])
    with pytest.raises(ValueError, match=r"words\[1\] = 'crane' is listed twice"):
        WordBoardTokenizer(["crane", "crane"])
    description = WordBoardTokenizer(["crane"]).to_dict()
    with pytest.raises(ValueError, match="field 'version' is 9"):
        WordBoardTokenizer.from_dict({**description, "version": 9})


def test_tf_twins_give_the_python_ids(tok):
    rng = np.random.default_rng(0)
    words = list(lmrl_gym_words().words)
    texts = [*rng.choice(words, 20), *rng.choice(PATTERNS, 5), "", "zzzzz", "cran", "crane⬛", "Crane", "ñ🟩", "abcdef"]
    got = tok.tf_encode(tf.constant(texts)).to_list()
    assert got == [tok.encode(t, strict=False) for t in texts]
    assert tok.tf_encode(tf.constant("crane")).numpy().tolist() == tok.encode("crane")
    pairs = [(rng.choice(PATTERNS), rng.choice(words)) for _ in range(20)]
    pairs += [("", ""), ("", "crane"), ("⬛🟨⬛⬛", "crane"), ("⬛🟨⬛⬛🟩", "cran"), ("⬛🟨⬛⬛🟩", "Crane"),
              ("⬛🟨x⬛🟩", "crane"), ("zzzzz", "crane")]
    observations, previous = tf.constant([p[0] for p in pairs]), tf.constant([p[1] for p in pairs])
    assert tok.tf_encode_observations(observations, previous).to_list() == [
        tok.encode_observation(o, a, strict=False) for o, a in pairs]


def test_an_observation_that_writes_its_cells_out_is_encoded_as_those_cells(tok):
    """The two-role board (``checkc⬛r🟨a⬛n⬛e🟩``): the cells are the ones the guess would bind, whatever
    action came before; the text decodes back exactly; the tf twin agrees, near misses included."""
    rng = np.random.default_rng(1)
    words = list(lmrl_gym_words().words)
    for _ in range(20):
        word, squares = rng.choice(words), rng.choice(PATTERNS)
        prompt = rng.choice(["propose", "check", "", "crane"])
        text = prompt + written_cells(word, squares)
        ids = tok.encode_observation(text, "accept")
        assert ids[len(ids) - 5:] == tok.encode_observation(squares, word)
        assert ids[:len(ids) - 5] == tok.encode(prompt) and tok.decode(ids) == text
    near = ["propose" + written_cells("crane", "⬛🟨⬛⬛🟩")[:-1], "c⬛r🟨a⬛n⬛e", "⬛c🟨r⬛a⬛n🟩e", "propose",
            "crane", "proposeC⬛r🟨a⬛n⬛e🟩", "xc⬛r🟨a⬛n⬛e🟩🟩"]
    for text in near:
        assert tok.encode_observation(text, "accept", strict=False) == tok.encode(text, strict=False), text
    pairs = [(rng.choice(["propose", "check", ""]) + written_cells(rng.choice(words), rng.choice(PATTERNS)), "accept")
             for _ in range(10)] + [(t, "accept") for t in near] + [(rng.choice(PATTERNS), "crane"), ("", "")]
    observations, previous = tf.constant([p[0] for p in pairs]), tf.constant([p[1] for p in pairs])
    assert tok.tf_encode_observations(observations, previous).to_list() == [
        tok.encode_observation(o, a, strict=False) for o, a in pairs]


def test_the_token_layout_is_the_agents_prompt_on_games_of_the_lmrl_gym_setting(tok):
    games = []
    for seed in range(3):
        env = lmrl_gym.make_env(seed)
        episode = run_episode(env, lmrl_gym.behaviour_policy(), seed=seed)
        games.append({"observations": [o["text"] for o in episode.observations], "actions": list(episode.actions),
                      "rewards": list(episode.rewards)})
    for game, seq in zip(games, sequences(episodes_of(games), TokenMDPConfig(observation_key="observation"), tok)):
        ids = seq["input_ids"].tolist()
        assert ids == tok.encode_prompt(game["observations"], game["actions"]) + [tok.eos_id]
        for t in range(len(game["observations"])):  # every turn's context is a prefix of the training sequence
            prompt = tok.encode_prompt(game["observations"][:t + 1], game["actions"][:t])
            assert ids[:len(prompt)] == prompt, t
        # [BOS] [EOO], then 8 tokens a turn (guess, EOA, five cells, EOO; letters take 12), then [EOS]
        assert len(ids) == 3 + 8 * len(game["actions"])
