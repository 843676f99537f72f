"""Colouring rules, patterns, constraints and the vectorised engine against the scalar rules."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlds_lang.wordle import game
from rlds_lang.wordle.engine import FeedbackMatrix, encode_words, pattern_block
from rlds_lang.wordle.words import official_answers, official_guesses, word_list_from

SQ = game.render


@pytest.mark.parametrize(
    "guess, answer, rule, expected",
    [
        ("speed", "abide", "official", "⬛⬛🟨⬛🟨"),
        ("abbey", "abide", "official", "🟩🟩⬛🟨⬛"),
        ("eerie", "elder", "official", "🟩🟨🟨⬛⬛"),
        ("speed", "abide", "ilql", "⬛⬛🟨🟨🟨"),
        ("abbey", "abide", "ilql", "🟩🟩🟨🟨⬛"),
        ("eerie", "elder", "ilql", "🟩🟨🟨⬛🟨"),
        ("crane", "crane", "official", "🟩🟩🟩🟩🟩"),
        ("lever", "eerie", "official", "⬛🟩⬛🟨🟨"),
        ("geese", "these", "official", "⬛⬛🟩🟩🟩"),
        ("sassy", "essay", "official", "🟨🟨🟩⬛🟩"),
    ],
)
def test_hand_worked_colourings(guess, answer, rule, expected):
    assert SQ(game.colour(guess, answer, rule)) == expected


def test_official_is_the_default_rule():
    assert game.colour("speed", "abide") == game.colour("speed", "abide", "official")


def test_unknown_rule_is_rejected_with_names():
    with pytest.raises(ValueError, match="official"):
        game.colour("speed", "abide", "nyt")


def test_pattern_ids_round_trip():
    for pid in range(game.NUM_PATTERNS):
        assert game.pattern_id(game.pattern_from_id(pid)) == pid
    assert game.pattern_id((2, 2, 2, 2, 2)) == game.WIN_PATTERN_ID
    assert game.parse_squares(SQ((0, 1, 2, 1, 0))) == (0, 1, 2, 1, 0)


words5 = st.text(alphabet="abcdeilnorst", min_size=5, max_size=5)


@given(st.lists(st.tuples(words5, words5), min_size=1, max_size=40), st.sampled_from(["official", "ilql"]))
def test_vectorised_engine_equals_scalar(pairs, rule):
    guesses = encode_words([g for g, _ in pairs])
    answers = encode_words([a for _, a in pairs])
    block = pattern_block(guesses, answers, rule)
    for i, (g, _) in enumerate(pairs):
        for j, (_, a) in enumerate(pairs):
            assert block[i, j] == game.pattern_id(game.colour(g, a, rule)), (g, a, rule)


def test_full_matrix_matches_scalar_on_random_pairs(tmp_path, monkeypatch):
    monkeypatch.setenv("RLDS_LANG_CACHE", str(tmp_path))
    guesses, answers = official_guesses(), official_answers()
    m = FeedbackMatrix.compute(guesses, answers)
    assert m.patterns.shape == (len(guesses), len(answers)) and m.patterns.dtype == np.uint8
    rng = np.random.default_rng(0)
    for gi, ai in zip(rng.integers(len(guesses), size=3000), rng.integers(len(answers), size=3000)):
        g, a = guesses.words[gi], answers.words[ai]
        assert m.patterns[gi, ai] == game.pattern_id(game.colour(g, a))


def test_matrix_is_cached_on_disk_by_hash(tmp_path, monkeypatch):
    from rlds_lang.wordle import engine

    monkeypatch.setenv("RLDS_LANG_CACHE", str(tmp_path))
    monkeypatch.setattr(engine, "_MEMO", {})
    small = word_list_from(["crane", "slate", "abide", "speed"], "small")
    first = FeedbackMatrix.build(small, small)
    files = list(tmp_path.glob("feedback_*.npy"))
    assert len(files) == 1 and FeedbackMatrix.key(small, small, "official") in files[0].name
    monkeypatch.setattr(engine, "_MEMO", {})
    again = FeedbackMatrix.build(small, small)
    np.testing.assert_array_equal(first.patterns, again.patterns)
    other = FeedbackMatrix.build(small, small, "ilql")
    assert len(list(tmp_path.glob("feedback_*.npy"))) == 2
    assert not np.array_equal(other.patterns, first.patterns)


@given(st.data(), st.sampled_from(["official", "ilql"]))
def test_constraints_filter_equals_pattern_consistency(data, rule):
    answers = official_answers().words
    answer = data.draw(st.sampled_from(answers))
    guesses = data.draw(st.lists(st.sampled_from(answers), min_size=1, max_size=4))
    history = [(g, game.colour(g, answer, rule)) for g in guesses]
    by_constraints = set(game.filter_words(answers, history, rule))
    by_patterns = {w for w in answers if all(game.colour(g, w, rule) == p for g, p in history)}
    assert answer in by_constraints
    assert by_constraints == by_patterns


def test_marks_give_each_square_its_hand_worked_meaning():
    board = game.constraints_from_history([("crane", (0, 1, 0, 0, 2))])  # c, a, n absent; r elsewhere; e last
    assert board.marks("rinse") == "🟨⬜⬛⬜🟩"  # r known in the answer; i, s unknown; n absent; e known there
    assert board.marks("rider") == "🟨⬜⬜🟨⬛"  # r cannot be last (e is); e may also be fourth
    assert board.marks("tryst") == "⬜⬛⬜⬜⬛"  # r was yellow at place 1, so it is not there
    assert game.Constraints().marks("crane") == "⬜" * 5  # nothing played: nothing known


@given(st.data(), st.sampled_from(["official", "ilql"]))
def test_a_word_with_a_ruled_out_mark_is_never_allowed_and_the_answer_has_none(data, rule):
    answers = official_answers().words
    answer, word = data.draw(st.sampled_from(answers)), data.draw(st.sampled_from(answers))
    guesses = data.draw(st.lists(st.sampled_from(answers), min_size=1, max_size=4))
    board = game.constraints_from_history([(g, game.colour(g, answer, rule)) for g in guesses], rule)
    assert "⬛" not in board.marks(answer)
    if "⬛" in board.marks(word):
        assert not board.allows(word)
