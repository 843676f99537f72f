"""Writes ``dummy_data/``: 4 episodes of ``Echo``, a plain text ``dm_env.Environment`` (not a ``LanguageEnv``), recorded
by ``loggers.record`` -- the shipped example of the generic builder ``rlds_logs`` (its config ``dummy``).

Run from a checkout: ``python -m builders.rlds_logs.make_dummy_data`` (it replaces ``dummy_data/``).
"""

from __future__ import annotations

import os
import shutil

import dm_env
from dm_env import specs

from loggers import record

WORDS = ("apple", "pear", "fig", "plum")


class Echo(dm_env.Environment):
    """Shows a word; an action that repeats it earns 1. Three words per episode, from the seed."""

    def __init__(self):
        self.words, self.turn = WORDS[:3], 0

    def seed(self, seed: int) -> None:
        """The episode's words: ``WORDS`` rotated by ``seed``."""
        start = seed % len(WORDS)
        self.words = (WORDS[start:] + WORDS[:start])[:3]

    def reset(self) -> dm_env.TimeStep:
        self.turn = 0
        return dm_env.restart(self.words[0])

    def step(self, action: str) -> dm_env.TimeStep:
        reward = float(action == self.words[self.turn])
        self.turn += 1
        if self.turn == len(self.words):
            return dm_env.termination(reward, "")
        return dm_env.transition(reward, self.words[self.turn])

    def observation_spec(self) -> specs.StringArray:
        return specs.StringArray((), str, name="observation")

    def action_spec(self) -> specs.StringArray:
        return specs.StringArray((), str, name="action")


def echo_or_miss(observations, actions):
    """Repeats the word shown, but answers "miss" (reward 0) on the second turn of the episodes that start with
    "pear" or "plum"."""
    return "miss" if len(actions) == 1 and observations[0] in ("pear", "plum") else observations[-1]


def main() -> None:
    """Replaces ``dummy_data/`` with 4 recorded episodes."""
    folder = os.path.join(os.path.dirname(__file__), "dummy_data")
    shutil.rmtree(folder, ignore_errors=True)
    result = record(Echo(), echo_or_miss, episodes=4, data_dir=folder, run_name="dummy", progress=False)
    print(f"{result.num_episodes} episodes -> {folder}")


if __name__ == "__main__":
    main()
