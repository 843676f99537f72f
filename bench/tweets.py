"""Benchmark of the tweet retrofits: building the retrofit structure for the official lists (9,330 guesses
x 2,315 answers) and retrofitted games per second, in one run.

Run: ``PYTHONPATH=. python bench/tweets.py [--games N] [--record-games M]``. Prints figures; asserts
nothing. Targets: the structure in < 30 s (matrix computed from scratch, no cache, plus the grouping)
and >= 2,000 retrofitted games/s. Random games (random answers, random guesses, 1-6 rows, some
failed) are rendered as tweets first (not timed); then timed: parsing, retrofitting in both modes, and
end to end (parse + retrofit + recording through ``loggers.record`` and reading back, one process).
"""

from __future__ import annotations

import argparse
import collections
import os
import tempfile
import time

import numpy as np

from loggers.wordle_recipes import record_retrofits
from rlds_lang.wordle.engine import FeedbackMatrix
from rlds_lang.wordle.game import pattern_from_id
from rlds_lang.wordle.retrofit import (
    RetrofitIndex,
    RetrofitMode,
    RetrofittedGame,
    game_seed,
    retrofit,
)
from rlds_lang.wordle.tweets import SCHEMES, TweetGame, parse_share, share_text
from rlds_lang.wordle.words import official_answers, official_guesses


def random_tweets(matrix: FeedbackMatrix, n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``(texts, answers)``: ``n`` random games shared as tweets, in rotating colour schemes."""
    rng = np.random.default_rng(seed)
    schemes = list(SCHEMES)
    texts, answers = [], []
    for k in range(n):
        a = int(rng.integers(len(matrix.answers)))
        answer = matrix.answers.words[a]
        guesses = [g for g in rng.integers(len(matrix.guesses), size=12) if matrix.guesses.words[g] != answer][:6]
        ids = [int(matrix.patterns[g, a]) for g in guesses]  # a failed game: six wrong guesses
        if rng.random() < 0.9:  # a win in 1-6: the last row is the answer
            ids = ids[:int(rng.integers(0, 6))] + [int(matrix.patterns[matrix.guesses.index(answer), a])]
        texts.append(share_text(1000 + k, [pattern_from_id(p) for p in ids], scheme=schemes[k % len(schemes)]))
        answers.append(answer)
    return texts, answers


def _rate(label: str, count: int, seconds: float, unit: str = "games") -> None:
    print(f"{label:<52} {count / seconds:>12,.0f} {unit}/s   ({count:,} in {seconds:.2f} s)")


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000, help="games parsed and retrofitted")
    parser.add_argument("--record-games", type=int, default=2_000, help="games for the end-to-end row")
    args = parser.parse_args()
    guesses, answers = official_guesses(), official_answers()

    started = time.perf_counter()
    matrix = FeedbackMatrix.compute(guesses, answers)
    matrix_seconds = time.perf_counter() - started
    started = time.perf_counter()
    index = RetrofitIndex.from_matrix(matrix)
    group_seconds = time.perf_counter() - started
    print(f"retrofit structure, {len(guesses):,} guesses x {len(answers):,} answers (target < 30 s):")
    print(f"  feedback matrix computed (no cache)   {matrix_seconds:6.2f} s")
    print(f"  grouping by pattern (argsort + CSR)   {group_seconds:6.2f} s")
    print(f"  total                                 {matrix_seconds + group_seconds:6.2f} s")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["RLDS_LANG_CACHE"] = cache
        FeedbackMatrix.build(guesses, answers)  # writes the cache
        from rlds_lang.wordle import engine
        engine._MEMO.clear()
        started = time.perf_counter()
        RetrofitIndex.build(guesses, answers)
        print(f"  RetrofitIndex.build with a warm cache {time.perf_counter() - started:6.2f} s")

    texts, true_answers = random_tweets(matrix, args.games)
    started = time.perf_counter()
    parsed = [parse_share(t) for t in texts]
    _rate("parse_share", len(texts), time.perf_counter() - started, "tweets")
    rejected = [g for g in parsed if not hasattr(g, "pattern_ids")]
    assert not rejected, rejected[:3]
    ids = [g.pattern_ids for g in parsed]
    for mode in RetrofitMode:
        started = time.perf_counter()
        fits = [retrofit(index, p, k, a if mode is RetrofitMode.TRUE_WORD else None)
                for k, (p, a) in enumerate(zip(ids, true_answers))]
        _rate(f"retrofit, {mode.value} (target >= 2,000)", len(fits), time.perf_counter() - started)

    m = min(args.record_games, len(texts))
    started = time.perf_counter()
    games = []
    for k in range(m):
        tweet = TweetGame(str(k), "2022-02-01", parse_share(texts[k]), k + 2)
        seed = game_seed(0, tweet.tweet_id)
        games.append(RetrofittedGame(tweet, retrofit(index, tweet.game.pattern_ids, seed, true_answers[k]),
                                     RetrofitMode.TRUE_WORD, seed))
    steps = collections.Counter()
    for episode in record_retrofits(games, "bench"):
        steps["episodes"] += 1
        steps["steps"] += len(episode["steps"])
    _rate("end to end: parse + retrofit + record + read (1 process)", steps["episodes"], time.perf_counter() - started)
    print(f"  ({steps['steps']:,} steps; the builder spreads this over Beam workers)")


if __name__ == "__main__":
    main()
