"""Clips and judgements built directly (no pipeline) for the reward-model tests: separable synthetic tasks
whose true per-step reward is known, labelled by their true returns."""

from __future__ import annotations

from typing import Callable

import numpy as np

from rlds_lang.preferences.types import Clip, Judgement, Label

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def text_clip(rng: np.random.Generator, clip_id: str, length: int = 4, padded: int = 1) -> Clip:
    """A clip of random 5-letter guesses whose true reward is the number of 'e's in the guess."""
    actions = ["".join(rng.choice(list("eeabcdrst"), 5)) for _ in range(length)]
    observations = ["".join(rng.choice(list("⬛🟨🟩"), 5)) for _ in range(length)]
    rewards = [float(a.count("e")) for a in actions]
    pad = [False] * length + [True] * padded
    return Clip(clip_id, clip_id.split(":")[0], 0, length, observations + [observations[-1]] * padded,
                actions + [""] * padded, rewards + [0.0] * padded, pad)


def vector_clip(rng: np.random.Generator, clip_id: str, length: int = 5, dim: int = 3) -> Clip:
    """A clip of random vector observations whose true reward is ``observation[0] + action``."""
    observations = [rng.normal(size=dim).astype(np.float32) for _ in range(length)]
    actions = [np.array([rng.normal()], np.float32) for _ in range(length)]
    rewards = [float(o[0] + a[0]) for o, a in zip(observations, actions)]
    return Clip(clip_id, clip_id.split(":")[0], 0, length, observations, actions, rewards, [False] * length)


def dot_clip(rng: np.random.Generator, clip_id: str, length: int = 3, size: int = 12) -> Clip:
    """A moving-dot-like clip: ``[size, size, 1]`` images with one bright dot; reward 1 when it is in the left half."""
    observations, rewards = [], []
    for _ in range(length):
        image = np.zeros((size, size, 1), np.float32)
        y, x = rng.integers(size, size=2)
        image[y, x, 0] = 1.0
        observations.append(image)
        rewards.append(float(x < size // 2))
    return Clip(clip_id, clip_id.split(":")[0], 0, length, observations, [np.zeros(2, np.float32)] * length,
                rewards, [False] * length)


def label_by_return(left: Clip, right: Clip, tolerance: float = 0.0) -> Label:
    """The synthetic labeller's rule: the higher true return wins, ties within ``tolerance`` are equal."""
    diff = left.true_return - right.true_return
    if abs(diff) <= tolerance:
        return Label.EQUAL
    return Label.LEFT if diff > 0 else Label.RIGHT


def judgements(make_clip: Callable[[np.random.Generator, str], Clip], n: int, seed: int = 0,
               prefix: str = "ep") -> list[Judgement]:
    """``n`` judgements of random clip pairs labelled by their true returns."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        left, right = make_clip(rng, f"{prefix}{i}a:0"), make_clip(rng, f"{prefix}{i}b:0")
        out.append(Judgement(left, right, label_by_return(left, right), labeller="synthetic"))
    return out
