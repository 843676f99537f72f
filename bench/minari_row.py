"""The Minari row of ``bench/record.py``: the same replayed Wordle games recorded by Minari's ``DataCollector``.

Minari records ``gymnasium.Env``s, so ``GymWordle`` adapts our ``dm_env`` Wordle environment: a ``Dict``
observation (``text`` as a ``Text`` space over the colour squares, ``feedback`` as an int8 ``Box``, ``turn``
as ``Discrete``), a five-letter ``Text`` action, ``terminated``/``truncated`` from the last step's discount.
``DataCollector`` writes every finished episode to its storage (its default format) as it ends, which makes
it the counterpart of our per-episode durability; it records no episode metadata here. Minari is not part of
our stack: ``pip install "minari[create]"`` adds minari, gymnasium, Farama-Notifications, jax and jaxlib beside our
pins (checked with
``pip install --dry-run "minari[create]" -c constraints.txt``; ``DataCollector`` needs the ``create`` extra's jax
and jaxlib too); without it the row says so.
"""

from __future__ import annotations

import os
import string
import tempfile
import time
from typing import Any, Callable

import numpy as np

from rlds_lang.wordle.env import WordleEnv


def minari_seconds(env: WordleEnv, games: list[list[str]], before_episode: Callable[[WordleEnv, int], None]) -> float:
    """Seconds Minari's ``DataCollector`` takes to record ``games`` (each a list of guesses) played in ``env``;
    raises ``ImportError`` when Minari is not installed."""
    import gymnasium as gym
    import jax.tree_util  # noqa: F401  (Minari's episode buffer imports it at the first step: not timed)
    from gymnasium import spaces
    from minari import DataCollector

    class GymWordle(gym.Env):
        """``WordleEnv`` as a ``gymnasium.Env`` (see the module docstring)."""

        observation_space = spaces.Dict({
            "text": spaces.Text(max_length=5, min_length=0, charset="⬛🟨🟩"),
            "feedback": spaces.Box(-1, 2, (5,), np.int8),
            "turn": spaces.Discrete(env.max_guesses + 1),
        })
        action_space = spaces.Text(max_length=5, min_length=5, charset=string.ascii_lowercase)

        def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
            if seed is not None:
                env.seed(seed)
            return dict(env.reset().observation), {}

        def step(self, action: str) -> tuple[Any, float, bool, bool, dict]:
            timestep = env.step(action)
            ended = timestep.last()
            terminated = ended and float(timestep.discount) == 0.0
            return dict(timestep.observation), float(timestep.reward), terminated, ended and not terminated, {}

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MINARI_DATASETS_PATH"] = tmp
        started = time.perf_counter()
        collector = DataCollector(GymWordle())
        for i, guesses in enumerate(games):
            before_episode(env, i)
            collector.reset(seed=i)
            for guess in guesses:
                collector.step(guess)
        collector.close()
        return time.perf_counter() - started


__all__ = ["minari_seconds"]
