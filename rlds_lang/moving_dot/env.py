"""The moving-dot toy: a pixel observation with one bright dot that the agent moves towards the centre.

Like the anchor's moving-dot environment (the non-text test bed of drlhp), it is the smallest task whose
observation is an image, so the preference wrapper and the reward model's convolutional predictor can be
shown to work without text. Ours:

- observation: ``float32 [size, size, 1]``, 0 everywhere but 1 at the dot;
- action: an integer in ``0..4`` = stay, up, down, left, right (moves are clipped at the border);
- reward of a step: ``-(|row - c| + |col - c|) / size`` for the dot's position *before* the move, ``c`` the
  centre (``(size - 1) / 2``): the closer to the centre, the better; every step counts, so the best policy
  walks straight to the centre and stays;
- episodes last ``episode_length`` steps from a uniformly random start (seeded).

Example::

    env = MovingDotEnv(size=8, episode_length=20, seed=0)
    timestep = env.reset()
    while not timestep.last():
        timestep = env.step(4)              # always right
"""

from __future__ import annotations

from typing import Any

import dm_env
import numpy as np
from dm_env import specs

#: (row, column) change of each action: stay, up, down, left, right.
MOVES = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))


class MovingDotEnv(dm_env.Environment):
    """A dot on a ``size`` x ``size`` image moved by 5 discrete actions (module docstring)."""

    task_name = "moving_dot"

    def __init__(self, size: int = 8, episode_length: int = 20, seed: int = 0):
        if size < 2 or episode_length < 1:
            raise ValueError(f"MovingDotEnv needs size >= 2 and episode_length >= 1, got {size}, {episode_length}")
        self.size, self.episode_length = int(size), int(episode_length)
        self._rng = np.random.default_rng(seed)
        self._seed = int(seed)
        self._position = (0, 0)
        self._t = self.episode_length  # stepping a fresh environment resets it

    def seed(self, seed: int) -> None:
        """Reseeds the start positions of the following episodes."""
        self._seed = int(seed)
        self._rng = np.random.default_rng(seed)

    @property
    def position(self) -> tuple[int, int]:
        """The dot's (row, column)."""
        return self._position

    def observation(self) -> np.ndarray:
        """The current image."""
        image = np.zeros((self.size, self.size, 1), np.float32)
        image[self._position[0], self._position[1], 0] = 1.0
        return image

    def reward_at(self, position: tuple[int, int]) -> float:
        """The reward of a step taken from ``position`` (module docstring)."""
        centre = (self.size - 1) / 2
        return -(abs(position[0] - centre) + abs(position[1] - centre)) / self.size

    def reset(self) -> dm_env.TimeStep:
        """A new episode from a random position."""
        self._t = 0
        self._position = tuple(int(v) for v in self._rng.integers(self.size, size=2))
        return dm_env.restart(self.observation())

    def step(self, action: Any) -> dm_env.TimeStep:
        """Moves the dot; the reward is that of the position it left."""
        if self._t >= self.episode_length:
            return self.reset()
        move = int(np.asarray(action).reshape(()))
        if not 0 <= move < len(MOVES):
            raise ValueError(f"moving_dot: action must be an integer in 0..{len(MOVES) - 1}, got {action!r}")
        reward = np.float32(self.reward_at(self._position))
        dr, dc = MOVES[move]
        self._position = (min(max(self._position[0] + dr, 0), self.size - 1),
                          min(max(self._position[1] + dc, 0), self.size - 1))
        self._t += 1
        if self._t == self.episode_length:
            return dm_env.termination(reward, self.observation())
        return dm_env.transition(reward, self.observation())

    def observation_spec(self) -> specs.Array:
        """``float32 [size, size, 1]``."""
        return specs.Array((self.size, self.size, 1), np.float32, name="image")

    def action_spec(self) -> specs.DiscreteArray:
        """5 moves."""
        return specs.DiscreteArray(len(MOVES), name="move")

    def reward_spec(self) -> specs.Array:
        """A float32 scalar."""
        return specs.Array((), np.float32, name="reward")


def best_return(env: MovingDotEnv, start: tuple[int, int]) -> float:
    """The highest return from ``start``: walk straight to the nearest centre cell, then stay."""
    position, total = start, 0.0
    centre = (env.size - 1) / 2
    for _ in range(env.episode_length):
        total += env.reward_at(position)
        dr = int(np.sign(round(centre - position[0]))) if abs(centre - position[0]) >= 1 else 0
        dc = int(np.sign(round(centre - position[1]))) if abs(centre - position[1]) >= 1 and dr == 0 else 0
        position = (position[0] + dr, position[1] + dc)
    return total


__all__ = ["MOVES", "MovingDotEnv", "best_return"]
