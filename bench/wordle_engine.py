"""Benchmark of the Wordle engine and the optimal (expert) policy; prints figures, asserts no times.

Run: ``PYTHONPATH=. python bench/wordle_engine.py``. Figures: the time to compute the full feedback
matrix (no cache), the optimal policy's first move (computed once per process, then cached), its
median time per move and per game, expert games per second, and its win rate and mean guesses over
every official answer (fixed mode, official rule).
"""

from __future__ import annotations

import time

import numpy as np

from rlds_lang.env import run_episode
from rlds_lang.wordle.engine import FeedbackMatrix
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy
from rlds_lang.wordle.words import official_answers, official_guesses


class TimedPolicy:
    """Wraps a policy and records the wall time of every ``act``."""

    def __init__(self, policy):
        self.policy, self.name, self.move_times, self.move_turns = policy, policy.name, [], []

    def reset(self, seed):
        self.policy.reset(seed)

    def params(self):
        return self.policy.params()

    def act(self, observations, actions):
        t = time.perf_counter()
        action = self.policy.act(observations, actions)
        self.move_times.append(time.perf_counter() - t)
        self.move_turns.append(len(actions))
        return action


def main() -> None:
    """Runs the benchmark and prints its figures."""
    answers, guesses = official_answers(), official_guesses()
    t = time.perf_counter()
    fm = FeedbackMatrix.compute(guesses, answers, "official")
    print(f"feedback matrix {fm.patterns.shape} (official rule, no cache): {time.perf_counter() - t:.2f} s")

    for pool in ("all", "consistent"):
        env = WordleEnv(seed=0)
        policy = TimedPolicy(OptimalPolicy(guess_pool=pool))
        t = time.perf_counter()
        run_episode(env, policy, seed=0)  # loads the matrix tables and computes the first move
        print(f"\n[guess_pool={pool}] first game incl. tables + first move: {time.perf_counter() - t:.2f} s "
              f"(first move {run_episode(env, policy, seed=0).actions[0]!r})")
        policy.move_times.clear()
        policy.move_turns.clear()
        game_times, lengths, wins = [], [], 0
        start = time.perf_counter()
        for word in answers.words:
            env.set_next_answer(word)
            t = time.perf_counter()
            ep = run_episode(env, policy, seed=1)
            game_times.append(time.perf_counter() - t)
            wins += ep.actions[-1] == word
            lengths.append(ep.num_actions)
        total = time.perf_counter() - start
        hist = np.bincount(lengths, minlength=7)[1:]
        print(f"  games: {len(answers)}, wins: {wins} ({100 * wins / len(answers):.2f}%), "
              f"mean guesses: {np.mean(lengths):.4f}, max: {max(lengths)}")
        print(f"  guesses histogram 1..6: {hist.tolist()}")
        print(f"  median per move: {1000 * np.median(policy.move_times):.2f} ms "
              f"(p95 {1000 * np.percentile(policy.move_times, 95):.2f} ms; first move is cached)")
        later = np.array(policy.move_times)[np.array(policy.move_turns) > 0]
        print(f"  median per move after the first: {1000 * np.median(later):.2f} ms")
        print(f"  median per game: {1000 * np.median(game_times):.2f} ms "
              f"(p95 {1000 * np.percentile(game_times, 95):.2f} ms)")
        print(f"  expert games per second (env + policy): {len(answers) / total:.1f}")


if __name__ == "__main__":
    main()
