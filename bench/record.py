"""Benchmark of recording: bare environment steps/s against EnvLogger-logged steps/s in the same run
(their ratio is the logging overhead), and expert (optimal-policy) games recorded per second end to end.

Run: ``PYTHONPATH=. python bench/record.py [--games N] [--workers W]``. Prints figures; asserts nothing.
The issue's target is 100,000 expert games recorded in under 5 minutes (>= 333 games/s); the figure
printed last extrapolates the measured rate to 100,000 games.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from loggers import read_episodes, record
from rlds_lang.env import run_episode
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy
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


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--expert-games", type=int, default=None,
                        help="games for the end-to-end expert row (default: --games; 100000 measures the target)")
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


if __name__ == "__main__":
    main()
