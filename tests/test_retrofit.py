"""Tests for rlds_lang.wordle.retrofit: the CSR retrofit index against brute force, retrofit soundness as a
hypothesis property (random answers and guesses -> tweet -> parse -> retrofit -> every guess reproduces
its row), seeding, counted failures, the day -> answer table, and recording through loggers.record."""

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loggers.wordle_recipes import record_retrofits
from rlds_lang.wordle import game
from rlds_lang.wordle.retrofit import (
    RetrofitIndex,
    RetrofitMode,
    RetrofittedGame,
    game_seed,
    load_answer_table,
    retrofit,
    retrofit_tweets,
)
from rlds_lang.wordle.tweets import (
    SCHEMES,
    Reason,
    Rejected,
    ShareGame,
    TweetGame,
    parse_share,
    share_text,
)
from rlds_lang.wordle.words import official_answers, official_guesses, word_list_from

SMALL = word_list_from(["crane", "slate", "abide", "speed", "abbey", "eerie", "geese", "llama", "mamma", "tweet"],
                       "small")


@pytest.fixture(scope="module")
def official_index() -> RetrofitIndex:
    return RetrofitIndex.build()


@pytest.fixture(scope="module")
def ilql_index() -> RetrofitIndex:
    return RetrofitIndex.build(rule="ilql")


@pytest.mark.parametrize("rule", ["official", "ilql"])
def test_index_groups_every_guess_by_its_pattern(rule):
    index = RetrofitIndex.build(SMALL, SMALL, rule)
    for a, answer in enumerate(SMALL):
        expected = collections.defaultdict(set)
        for g, guess in enumerate(SMALL):
            expected[game.pattern_id(game.colour(guess, answer, rule))].add(g)
        for p in range(game.NUM_PATTERNS):
            assert set(index.candidates(a, p).tolist()) == expected.get(p, set())
            assert index.possible[p, a] == (p in expected)
        assert index.offsets[a, -1] == len(SMALL)


def _tweet(answer: str, guesses: list[str], rule: str, scheme: str, hard: bool, day: int = 250) -> TweetGame:
    rows = []
    for guess in guesses:
        rows.append(game.colour(guess, answer, rule))
        if guess == answer:
            break
    parsed = parse_share(share_text(day, rows, hard_mode=hard, scheme=scheme))
    assert isinstance(parsed, ShareGame), parsed
    return TweetGame(tweet_id=str(day * 1000 + len(rows)), tweet_date="2022-02-22", game=parsed, line=2)


@settings(max_examples=150, deadline=None)
@given(answer=st.integers(0, 2314), guesses=st.lists(st.integers(0, 9329), min_size=1, max_size=6),
       win=st.booleans(), scheme=st.sampled_from(sorted(SCHEMES)), hard=st.booleans(), seed=st.integers(0, 2**32),
       rule=st.sampled_from(["official", "ilql"]), true_word=st.booleans())
def test_retrofit_soundness(official_index, ilql_index, answer, guesses, win, scheme, hard, seed, rule, true_word):
    index = official_index if rule == "official" else ilql_index
    answer_word = official_answers().words[answer]
    words = [official_guesses().words[g] for g in guesses]
    if win:
        words = words[:5] + [answer_word]
    elif len(words) < 6 or answer_word in words:
        words = [w for w in words if w != answer_word] + ["fuzzy" if answer_word != "fuzzy" else "jazzy"] * 6
        words = words[:6]
    tweet = _tweet(answer_word, words, rule, scheme, hard)
    fit = retrofit(index, tweet.game.pattern_ids, seed, answer_word if true_word else None)
    assert not isinstance(fit, Rejected), fit  # the played words themselves fit, so a fit always exists
    if true_word:
        assert fit.answer == answer_word
    assert len(fit.guesses) == len(tweet.game.rows)
    for guess, row in zip(fit.guesses, tweet.game.rows):
        assert game.colour(guess, fit.answer, rule) == row
    assert fit == retrofit(index, tweet.game.pattern_ids, seed, answer_word if true_word else None)  # seeded


def test_failures_are_values_not_exceptions(official_index):
    impossible = game.pattern_id((2, 2, 2, 2, 1))  # four greens and a yellow: no answer allows it
    fail = retrofit(official_index, [impossible, game.WIN_PATTERN_ID], 0, "abide")
    assert fail.reason is Reason.NO_GUESS_FOR_ROW and "row 1" in fail.detail
    assert retrofit(official_index, [impossible], 0).reason is Reason.NO_CONSISTENT_ANSWER
    assert retrofit(official_index, [game.WIN_PATTERN_ID], 0, "zzzzz").reason is Reason.ANSWER_NOT_IN_LIST


def test_retrofit_tweets_counts_failures_and_seeds_by_tweet_id(official_index):
    ok = _tweet("abide", ["speed", "abide"], "official", "dark", False, day=10)
    no_day = _tweet("abide", ["speed", "abide"], "official", "dark", False, day=11)
    bad = TweetGame("99", "2022-01-01", ShareGame(10, 1, False, ((2, 2, 2, 2, 1),)), 5)
    counts = collections.Counter()
    games = list(retrofit_tweets([ok, no_day, bad], official_index, 3, counts, {10: "abide"}))
    assert [g.tweet.tweet_id for g in games] == [ok.tweet_id]
    assert counts == {"day_not_in_answer_table": 1, "no_guess_for_row": 1}
    assert games[0].mode is RetrofitMode.TRUE_WORD and games[0].seed == game_seed(3, ok.tweet_id)
    again = list(retrofit_tweets([bad, ok], official_index, 3, collections.Counter(), {10: "abide"}))
    assert again[0].fit == games[0].fit  # the position in the file does not matter, the tweet id does
    anyone = list(retrofit_tweets([ok, no_day], official_index, 3, counts))
    assert [g.mode for g in anyone] == [RetrofitMode.ANY_ANSWER] * 2
    assert game_seed(0, "1") != game_seed(1, "1") and 0 <= game_seed(0, "1") < 2**63


def test_answer_table(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("day,answer\n# comment\n0,cigar\n1\tREBUT\n\n")
    assert load_answer_table(path) == {0: "cigar", 1: "rebut"}
    for text, message in [("0,cigar\n1,toolong\n", "answers.csv:2, field 'answer': answer is not five letters a-z: 'toolong'"),
                          ("0,cigar\nx,rebut\n", "answers.csv:2: expected 'day,answer'"),
                          ("0,cigar\n0,rebut\n", "answers.csv:2: day 0 listed twice"),
                          ("0,cigar,extra\n", "answers.csv:1: expected")]:
        path.write_text(text)
        with pytest.raises(ValueError, match=message):
            load_answer_table(path)


@pytest.mark.parametrize("rule", ["official", "ilql"])
def test_recorded_like_a_played_game(rule, official_index, ilql_index, tmp_path):
    index = official_index if rule == "official" else ilql_index
    won = _tweet("abbey", ["speed", "abide", "abbey"], rule, "light", True, day=1234)
    lost = _tweet("mamma", ["crane", "slate", "llama", "eerie", "geese", "tweet"], rule, "high_contrast_dark", False)
    games = [RetrofittedGame(t, retrofit(index, t.game.pattern_ids, game_seed(5, t.tweet_id), answer),
                             RetrofitMode.TRUE_WORD, game_seed(5, t.tweet_id)) for t, answer in ((won, "abbey"), (lost, "mamma"))]
    episodes = list(record_retrofits(games, "tweets-test", rule=rule, work_dir=str(tmp_path)))
    assert [e["episode_id"] for e in episodes] == ["tweets-test-00000000", "tweets-test-00000001"]
    for episode, g in zip(episodes, games):
        steps = episode["steps"]
        assert [s["action"] for s in steps] == list(g.fit.guesses) + [""]
        assert [tuple(s["observation"]["feedback"]) for s in steps[1:]] == list(g.tweet.game.rows)
        assert [s["observation"]["text"] for s in steps[1:]] == [game.render(r) for r in g.tweet.game.rows]
        assert episode["answer"] == g.fit.answer and episode["rule"] == rule and episode["mode"] == "fixed"
        assert episode["tweet_id"] == g.tweet.tweet_id and episode["tweet_date"] == "2022-02-22"
        assert episode["retrofit_mode"] == "true_word" and episode["retrofit_seed"] == g.seed
        assert episode["policy"] == "tweet_retrofit" and steps[-1]["is_terminal"]
    assert [s["reward"] for s in episodes[0]["steps"]] == [-1.0, -1.0, 0.0, 0.0]
    assert [s["reward"] for s in episodes[1]["steps"]] == [-1.0] * 6 + [0.0]
    assert (episodes[0]["wordle_day"], episodes[0]["claimed_result"], bool(episodes[0]["hard_mode"])) == (1234, "3/6", True)
    assert (episodes[1]["claimed_result"], bool(episodes[1]["hard_mode"])) == ("X/6", False)
    assert np.all(steps[0]["observation"]["feedback"] == -1)
