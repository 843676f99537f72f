"""Online filtered behaviour cloning (online %BC): the config (``OnlinePBCConfig``), apart from the rounds
(``trainers.algorithms.online_pbc``) so that ``rlds-lang train online_pbc --help`` needs no PyTorch.

Example::

    from trainers.algorithms.online_pbc_config import OnlinePBCConfig

    config = OnlinePBCConfig(rounds=3, games_per_round=200, out="runs/online_pbc")
"""

from __future__ import annotations

import dataclasses

from rlds_lang.paths import default_run
from rlds_lang.wordle import lmrl_gym
from trainers.algorithms.bc_config import BCConfig


@dataclasses.dataclass
class OnlinePBCConfig(BCConfig):
    """Online %BC on top of ``BCConfig``: ``steps`` are per round, ``top_p`` is the kept fraction of each
    round's games, ``dataset`` is unused (every round plays its own)."""

    #: output folder (one ``round_KKK`` folder per round, ``checkpoint`` = the last finished round's model).
    out: str = default_run("online_pbc")
    #: fraction of each round's games kept for BC, by return (LMRL-Gym's %BC keeps the top 30%).
    top_p: float | None = 0.3
    #: rounds of play -> record -> filter -> BC.
    rounds: int = 10
    #: games played (and recorded) per round.
    games_per_round: int = 1000
    #: game i of round k is seeded ``play_seed + k * games_per_round + i`` (never an evaluation seed).
    play_seed: int = 1_000_000_000
    #: checkpoint that plays round 0 (empty: LMRL-Gym's random-mixture data policy plays it).
    init_checkpoint: str = ""
    #: the game's word list, guesses and answers at once (a shipped name or a file path).
    words: str = lmrl_gym.WORDS
    #: colouring rule of the game.
    rule: str = lmrl_gym.RULE
    #: hidden-word mode of the game.
    mode: str = lmrl_gym.MODE

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.games_per_round < 1:
            raise ValueError(f"OnlinePBCConfig: rounds and games_per_round must be >= 1, got {self.rounds}, "
                             f"{self.games_per_round}")
        if self.top_p is None or not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"OnlinePBCConfig.top_p must be in (0, 1], got {self.top_p}")


__all__ = ["OnlinePBCConfig"]
