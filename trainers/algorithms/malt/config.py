"""MALT on Wordle: rounds of expert iteration, then rounds of response trees + DPO, from a BC checkpoint.

This module holds the loop's config (``MALTConfig``), apart from the rounds (``trainers.algorithms.malt.malt``) so
that ``rlds-lang malt --help`` needs no PyTorch.

Example::

    from trainers.algorithms.malt.config import MALTConfig

    config = MALTConfig(init="runs/bc/checkpoint", rounds=3)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from rlds_lang.paths import default_run

if TYPE_CHECKING:  # the tree recorder imports EnvLogger: only when a round builds its trees
    from loggers.trees import TreeSpec


@dataclasses.dataclass
class MALTConfig:
    """The MALT / expert-iteration loop (see the module docstring)."""

    #: the task (``wordle``).
    task: str = "wordle"
    #: checkpoint folder of the starting policy (a BC run's ``checkpoint``); required.
    init: str = ""
    #: output folder: ``round_XX`` per round and ``malt_config.json``.
    out: str = default_run("malt")
    #: rounds in all, expert-iteration rounds first.
    rounds: int = 3
    #: expert-iteration rounds before switching to MALT (DPO on response trees).
    num_initial_ei_rounds: int = 1
    #: games sampled per EI round.
    ei_games: int = 512
    #: EI keeps games with return >= this (Wordle: -5 = won); None to use ``ei_top_fraction``.
    ei_min_return: float | None = -5.0
    #: EI keeps this top fraction of games by return instead (set ``ei_min_return`` to None).
    ei_top_fraction: float | None = None
    #: start states (trees) per MALT round.
    trees: int = 128
    #: responses sampled at each branching decision point (reference trainer: 2; MALT paper: 3).
    branching: int = 2
    #: decision points (guesses) that branch; later ones get one response each, played to the end.
    branch_depth: int | None = 2
    #: decision points before this one get one response each (a shared trunk; ``loggers.trees.TreeSpec``).
    branch_from: int = 0
    #: ``positive_negative`` (MALT paper's threshold split) or ``interval``.
    pair_method: str = "positive_negative"
    #: ``positive_negative``'s threshold (None: the mid-point of the reward range).
    pair_threshold: float | None = None
    #: ``positive_negative`` leaves values exactly at the threshold out instead of counting them as positive.
    strict_threshold: bool = False
    #: ``interval``'s minimum gap as a share of the reward range.
    interval_threshold_proportion: float = 0.1
    #: lowest possible return (Wordle: six wrong guesses, -6).
    reward_min: float = -6.0
    #: highest possible return (Wordle: a first-guess win, 0).
    reward_max: float = 0.0
    #: a branching response that repeats a sibling's is sampled again up to this many times (``TreeSpec``); a
    #: repeated response can never be paired, and a BC-trained Wordle policy repeats its first choice most times.
    #: MALT rounds: a repeated sibling response is sampled again up to this many times (``loggers.trees.TreeSpec``).
    distinct_tries: int = 0
    #: sampling temperature of the policy during rollouts.
    temperature: float = 1.0
    #: reuse the data of compatible earlier rounds of the same kind (``trainers.algorithms.malt.expert_iteration``);
    #: the reference trainer trains each round on its own rollouts only.
    reuse_rollouts: bool = False
    #: BC optimizer steps per EI round.
    bc_steps: int = 200
    #: BC episodes per step.
    bc_batch_size: int = 32
    #: BC learning rate.
    bc_lr: float = 3e-4
    #: DPO optimizer steps per MALT round.
    dpo_steps: int = 200
    #: DPO passes over a round's pairs: the round takes ceil(epochs x pairs / batch) steps (None: ``dpo_steps``).
    dpo_epochs: float | None = None
    #: DPO pairs per step.
    dpo_batch_size: int = 16
    #: DPO learning rate.
    dpo_lr: float = 1e-4
    #: DPO beta.
    beta: float = 0.1
    #: DPO loss: ``sigmoid`` or ``ipo``.
    loss_type: str = "sigmoid"
    #: DPO label smoothing.
    label_smoothing: float = 0.0
    #: weight of the chosen responses' NLL in the DPO loss (``trainers.algorithms.dpo.dpo``; 0: plain DPO, as the
    #: reference trainer; iterative RPO: 1).
    nll_coef: float = 0.0
    #: evaluation games of each round's policy (0: none), seeded from ``eval_seed``.
    eval_games: int = 0
    #: seed of the evaluation games (disjoint from the rollouts' seeds).
    eval_seed: int = 1_000_000_000
    #: Wordle colouring rule.
    rule: str = "official"
    #: Wordle hidden-word mode.
    mode: str = "fixed"
    #: seed of rollouts (round ``r`` plays seeds ``seed + (r + 1) * 10_000_000 + i``) and training.
    seed: int = 0
    #: where every round samples and trains: ``auto`` (CUDA when present, else the CPU), ``cpu``, ``cuda`` or
    #: ``cuda:N`` (``trainers.core.device``).
    device: str = "auto"
    #: ``auto`` (fp32 unless the command chose), ``fp32``, ``tf32`` or ``bf16`` (``trainers.core.device``).
    precision: str = "auto"

    def tree_spec(self, kind: str) -> TreeSpec:
        """The trees of an ``ei`` round (one episode per start state) or a ``malt`` round."""
        from loggers.trees import TreeSpec

        common = dict(reward_range=(self.reward_min, self.reward_max), pair_method=self.pair_method,
                      threshold=self.pair_threshold, interval_threshold_proportion=self.interval_threshold_proportion,
                      strict_threshold=self.strict_threshold)
        if kind == "ei":
            return TreeSpec(branching=1, **common)
        return TreeSpec(branching=self.branching, branch_depth=self.branch_depth, branch_from=self.branch_from,
                        distinct_tries=self.distinct_tries, **common)


__all__ = ["MALTConfig"]
