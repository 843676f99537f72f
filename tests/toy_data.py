"""Small RLDS datasets for trainer tests, born like every dataset: replay env -> loggers.record -> TFDS build."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import tensorflow_datasets as tfds

from loggers import record
from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode
from rlds_lang.wordle import game
from tests.test_builder_roundtrip import ReplayRoundtrip


def scripted(observations: Sequence[str], actions: Sequence[str], rewards: Sequence[float], source: str) -> ScriptedEpisode:
    """A terminating episode in the replay schema (text + turn observations, source/weight metadata)."""
    obs = [{"text": t, "turn": np.int32(i)} for i, t in enumerate(observations)]
    return ScriptedEpisode(obs, list(actions), list(rewards), {"source": source, "weight": np.float64(1.0)})


def build_dataset(episodes: Sequence[ScriptedEpisode], root: str | os.PathLike, file_format: str | None = None) -> str:
    """Records ``episodes`` through the logger and builds them with TFDS (``file_format``: ``tfrecord``, TFDS's
    default, or ``array_record``); returns the dataset folder."""
    root = Path(root)
    logs = os.fspath(root / "logs")
    record(ReplayEnv(episodes), ReplayPolicy(episodes), episodes=len(episodes), data_dir=logs, run_name="toy",
           progress=False)
    builder = ReplayRoundtrip(data_dir=os.fspath(root / "tfds"), file_format=file_format)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=logs))
    return builder.data_dir


def wordle_like(n: int, seed: int = 0) -> list[ScriptedEpisode]:
    """``n`` short Wordle games: random guesses coloured against a random answer by the official rule."""
    rng = np.random.default_rng(seed)
    words = ["crane", "slate", "abide", "speed", "geese", "these", "lever", "eerie", "elder", "sassy", "essay"]
    out = []
    for i in range(n):
        answer = words[int(rng.integers(len(words)))]
        guesses = [words[int(k)] for k in rng.choice(len(words), size=int(rng.integers(1, 4)), replace=False)]
        if answer not in guesses and rng.random() < 0.5:
            guesses.append(answer)
        observations = [""] + [game.render(game.colour(g, answer)) for g in guesses]
        rewards = [0.0 if g == answer else -1.0 for g in guesses]
        out.append(scripted(observations, guesses, rewards, f"wordle-{i}"))
    return out


def rare_best_action(n_good: int, n_bad: int) -> list[ScriptedEpisode]:
    """One-turn episodes: the rare action ``ab`` earns 0, the common ``ba`` earns -1."""
    good = [scripted(["", "🟩"], ["ab"], [0.0], f"good-{i}") for i in range(n_good)]
    bad = [scripted(["", "⬛"], ["ba"], [-1.0], f"bad-{i}") for i in range(n_bad)]
    mixed = []
    for i in range(max(n_good, n_bad)):  # interleaved so every batch sees both
        mixed += bad[i:i + 1] + good[i:i + 1]
    return mixed
