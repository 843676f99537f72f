"""Benchmark of recording: bare environment steps/s against EnvLogger-logged steps/s in the same run
(their ratio is the logging overhead), and expert (optimal-policy) games recorded per second end to end.

Run: ``PYTHONPATH=. python bench/record.py [--games N] [--workers W] [--lmrl-gym-games M]``. Prints figures;
asserts nothing. The target is 100,000 expert games recorded in under 5 minutes (>= 333 games/s); the
expert figure extrapolates the measured rate to 100,000 games. The last rows time the recipe of the
``wordle_synthetic/lmrl_gym`` builder config (``loggers.wordle_recipes.play_shard``: LMRL-Gym's behaviour policy
played, logged by EnvLogger and read back as RLDS episodes, shards spread over ``W`` processes as Beam's
workers would) and extrapolate it to the published 1,100,000 games (TFDS serialisation not included).
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time

from loggers import read_episodes, record
from loggers.wordle_recipes import play_shard
from rlds_lang.env import run_episode
from rlds_lang.wordle import lmrl_gym
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy
from rlds_lang.wordle.recipes import Shard
from rlds_lang.wordle.words import official_answers


class ReplayGuesses:
    """Replays precomputed guesses so that env/logging cost is measured without policy cost."""

    name = "replay_guesses"

    def __init__(self, games: list[list[str]]):
        self.games, self.index = games, -1

    def reset(self, seed: int) -> None:
        self.index = seed

    def params(self) -> dict:
        return {}

    def act(self, observations, actions) -> str:
        return self.games[self.index][len(actions)]


def _answer_by_index(env: WordleEnv, i: int) -> None:
    env.set_next_answer(official_answers().words[i % len(official_answers())])


def _count_shard(shard: Shard) -> int:
    return sum(1 for _ in play_shard(shard))


def lmrl_gym_rate(games: int, workers: int, shard_size: int = 1000) -> tuple[int, float]:
    """``(games, seconds)`` of recording ``games`` games of the ``lmrl_gym`` builder recipe in shards over
    ``workers`` processes (each shard: play, log with EnvLogger, read back)."""
    recipe = lmrl_gym.recipe("train", episodes=games)
    shards = [Shard(recipe, k, start, min(start + shard_size, games))
              for k, start in enumerate(range(0, games, shard_size))]
    started = time.perf_counter()
    if workers <= 1:
        done = sum(map(_count_shard, shards))
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            done = sum(pool.map(_count_shard, shards))
    return done, time.perf_counter() - started


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--expert-games", type=int, default=None,
                        help="games for the end-to-end expert row (default: --games; 100000 measures the target)")
    parser.add_argument("--lmrl-gym-games", type=int, default=2000,
                        help="games of the lmrl_gym builder recipe to time (0 skips the row)")
    args = parser.parse_args()
    expert_games = args.expert_games or args.games

    env, policy = WordleEnv(seed=0), OptimalPolicy()
    games = []
    for i in range(args.games):
        _answer_by_index(env, i)
        games.append(run_episode(env, policy, seed=i).actions)
    replay = ReplayGuesses(games)
    steps = sum(len(g) + 1 for g in games)

    started = time.perf_counter()
    for i in range(args.games):
        _answer_by_index(env, i)
        run_episode(env, replay, seed=i)
    bare = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = record(env, replay, args.games, f"{tmp}/logged", before_episode=_answer_by_index, progress=False)
        logged = time.perf_counter() - started
        assert result.num_steps == steps
        started = time.perf_counter()
        read_back = sum(1 for _ in read_episodes(f"{tmp}/logged"))
        reading = time.perf_counter() - started

        started = time.perf_counter()
        expert = record(env, OptimalPolicy(), expert_games, f"{tmp}/expert", before_episode=_answer_by_index,
                        workers=args.workers, progress=False)
        end_to_end = time.perf_counter() - started

    print(f"games: {args.games}, steps: {steps} (same games in every row)")
    print(f"bare env steps/s:              {steps / bare:12.0f}")
    print(f"logged env steps/s:            {steps / logged:12.0f}")
    print(f"logging overhead (bare/logged): {logged / bare:11.2f}x")
    print(f"read back steps/s:             {steps / reading:12.0f}  ({read_back} episodes)")
    print(f"expert games recorded/s (optimal policy + env + logging, {args.workers} workers, "
          f"{expert.num_episodes} games in {end_to_end:.1f} s): {expert.num_episodes / end_to_end:.1f}")
    print(f"-> 100,000 expert games would take {100_000 / (expert.num_episodes / end_to_end) / 60:.1f} min "
          f"(target < 5 min)")
    if args.lmrl_gym_games > 0:
        done, seconds = lmrl_gym_rate(args.lmrl_gym_games, args.workers,
                                      shard_size=max(1, min(1000, -(-args.lmrl_gym_games // args.workers))))
        total = lmrl_gym.TRAIN_GAMES + lmrl_gym.EVAL_GAMES
        print(f"lmrl_gym recipe games recorded/s (behaviour policy + env + logging + read back, {args.workers} "
              f"workers, {done} games in {seconds:.1f} s): {done / seconds:.1f}")
        print(f"-> the published 1,100,000 games would take {total / (done / seconds) / 3600:.2f} h at this rate "
              f"({total / (done / seconds) * args.workers / 3600:.2f} CPU-hours)")


if __name__ == "__main__":
    main()
