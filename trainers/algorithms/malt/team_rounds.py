"""MALT with several agents: expert-iteration rounds, then per-agent MALT rounds, one model per model group.

``run_team_malt(config, checkpoints)`` starts from one checkpoint per model group (``trainers.algorithms.malt.team``)
and runs ``config.rounds`` rounds in ``config.out/round_XX``, the first ``num_initial_ei_rounds`` of them EI:

* EI round: ``ei_games`` seeded team games (recorded through ``loggers.trees`` with one response per decision
  point, folder ``samples``); games whose team return reaches ``ei_min_return`` are kept, and each group is trained
  by BC on its own agents' turns in them (``fit_turns``), from its current weights.
* MALT round: ``trees`` response trees of the team (``branching`` responses at each of the decision points
  ``branch_from .. branch_depth - 1``, whichever agent acts there), a reward per agent at every node
  (``env.agent_rewards()``), each agent's expected reward at every node, and at each decision point one pair by
  the acting agent's values, threshold (``pair_threshold``, by default its mid-point) and range (``env.agent_reward_ranges()``; MALT's reference
  trainer's ``positive_negative``, values at the threshold positive). Each group is trained by DPO on its agents'
  pairs only, against its round-start weights; a group without pairs passes its checkpoint on, with the reason.

Each round writes ``round.json`` (``TeamRound``): the checkpoint of every group, the games or nodes it sampled, the
mean team return, and per group what it trained on (kept turns, or pairs by agent). Finished rounds are skipped
when the command is run again. Defaults are the reference trainer's (``trainers.algorithms.malt.malt``): branching
2, plain DPO (``nll_coef=0``), beta 0.1, each round on its own rollouts.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

from loggers import read_episodes
from loggers.trees import TreeSpec, record_trees
from rlds_lang.paths import default_run
from trainers.algorithms.malt.expert_iteration import (
    keep_mask,
    read_round_file,
    record_once,
    round_seeds,
    write_round_file,
)
from trainers.algorithms.malt.team import agent_turns, fit_turns, parse_groups, team_policy


@dataclasses.dataclass
class TeamMALTConfig:
    """The rounds of ``run_team_malt`` (see the module docstring)."""

    #: output folder (``round_XX`` per round).
    out: str = default_run("team_malt")
    #: model groups (``trainers.algorithms.malt.team.parse_groups``): ``0+1`` one shared model, ``0,1`` one each.
    model_groups: str = "0+1"
    #: checker send-backs per turn (two-role Wordle's K).
    max_sendbacks: int = 1
    #: rounds in all, EI rounds first.
    rounds: int = 2
    #: EI rounds before the MALT rounds (the reference trainer's ``num_initial_ei_iterations``).
    num_initial_ei_rounds: int = 1
    #: team games per EI round.
    ei_games: int = 256
    #: EI keeps games whose team return is at least this.
    ei_min_return: float = -4.0
    #: BC steps per group per EI round.
    ei_steps: int = 100
    #: BC turns per step.
    ei_batch_size: int = 32
    #: BC learning rate of EI rounds.
    ei_lr: float = 1e-4
    #: start states (trees) per MALT round.
    trees: int = 64
    #: responses per branching decision point (reference trainer: 2).
    branching: int = 2
    #: decision points (steps of either agent) at depth >= this get one response each.
    branch_depth: int | None = 4
    #: decision points at depth < this get one response each.
    branch_from: int = 0
    #: ``positive_negative`` (per-agent mid-point) or ``interval`` (share of the agent's range).
    pair_method: str = "positive_negative"
    #: ``positive_negative``'s threshold per agent (``rlds_lang.trees.agent_threshold``: one value for all, one per
    #: agent, None in a place for that agent's mid-point); None: every agent's mid-point, the reference trainer's.
    pair_threshold: float | tuple[float | None, ...] | None = None
    #: ``positive_negative`` leaves values at the threshold out (default: positive, as the reference trainer).
    strict_threshold: bool = False
    #: ``interval``'s minimum gap as a share of the acting agent's reward range.
    interval_threshold_proportion: float = 0.1
    #: DPO passes over a group's pairs per round.
    dpo_epochs: float = 2.0
    #: DPO pairs per step.
    dpo_batch_size: int = 16
    #: DPO learning rate.
    dpo_lr: float = 1e-4
    #: DPO beta (DPO paper: 0.1).
    beta: float = 0.1
    #: weight of the chosen responses' NLL (0: plain DPO).
    nll_coef: float = 0.0
    #: sampling temperature in rollouts.
    temperature: float = 1.0
    #: seed of the rounds' games (round ``r`` plays seeds ``seed + (r + 1) * 10_000_000 + i``) and training.
    seed: int = 0

    def tree_spec(self, env: Any, kind: str) -> TreeSpec:
        """The trees of an ``ei`` round (plain games) or a ``malt`` round, with the agents' reward ranges."""
        common = dict(reward_range=tuple(env.agent_reward_ranges()), pair_method=self.pair_method,
                      threshold=self.pair_threshold, interval_threshold_proportion=self.interval_threshold_proportion,
                      strict_threshold=self.strict_threshold)
        if kind == "ei":
            return TreeSpec(branching=1, **common)
        return TreeSpec(branching=self.branching, branch_depth=self.branch_depth, branch_from=self.branch_from,
                        **common)


@dataclasses.dataclass
class TeamRound:
    """What one finished round did (``round.json``): per group its checkpoint and what it trained on."""

    round: int
    kind: str
    groups: list[list[int]]
    checkpoints: list[str]
    data: str
    env_steps: int
    episodes: int
    mean_team_return: float
    #: per group: kept turns (EI) or ``{agent: pairs}`` (MALT) it trained on.
    trained_on: list[Any]
    #: per group: why it trained nothing ("" when it trained).
    empty_reasons: list[str]

    def save(self, round_dir: Path) -> None:
        """Writes ``round.json`` atomically."""
        write_round_file(self, round_dir)

    @classmethod
    def load(cls, round_dir: Path) -> "TeamRound | None":
        """The record of a finished round, or None."""
        fields = read_round_file(round_dir)
        return None if fields is None else cls(**fields)


def team_return(episode: dict[str, Any]) -> float:
    """The team's (game) return of a recorded episode: the sum of its rewards."""
    return float(sum(float(s["reward"]) for s in episode["steps"] if not bool(s.get("is_last", False))))


def ei_team_round(config: TeamMALTConfig, env: Any, groups: list[tuple[int, ...]], checkpoints: list[str], r: int,
                  round_dir: Path, progress: bool = False) -> TeamRound:
    """One EI round (see the module docstring); ``progress`` draws the fine-tuning's bars."""
    from trainers.algorithms.bc import BCConfig
    from trainers.algorithms.registry import load_agent_model

    team = team_policy(env, groups, checkpoints, config.temperature, name=f"ei-r{r:02d}")
    seeds = round_seeds(config.seed, r, config.ei_games)
    samples = record_once(round_dir / "samples", lambda d: record_trees(
        env, team, config.tree_spec(env, "ei"), len(seeds), d, seeds=seeds, run_name=f"team-ei-r{r:02d}"))
    episodes = list(read_episodes(samples))
    returns = np.array([team_return(e) for e in episodes])
    kept = [e for e, k in zip(episodes, keep_mask(returns, min_return=config.ei_min_return)) if k]
    new, trained_on, reasons = [], [], []
    for k, (group, checkpoint) in enumerate(zip(groups, checkpoints)):
        turns = agent_turns(kept, group)
        if not turns:
            new.append(checkpoint)
            trained_on.append(0)
            reasons.append(f"no game reached ei_min_return={config.ei_min_return}")
            continue
        start = load_agent_model(checkpoint)
        # no warm-up: each round continues a trained model at its learning rate
        bc = BCConfig(out=str(round_dir / f"train_g{k}"), steps=config.ei_steps, batch_size=config.ei_batch_size,
                      lr=config.ei_lr, warmup_steps=0, seed=config.seed + r, max_length=start.config.model.n_positions)
        new.append(str(fit_turns(bc, turns, start, progress)))
        trained_on.append(len(turns))
        reasons.append("")
    return TeamRound(r, "ei", [list(g) for g in groups], new, str(samples),
                     sum(len(e["steps"]) - 1 for e in episodes), len(episodes), float(returns.mean()), trained_on,
                     reasons)


def malt_team_round(config: TeamMALTConfig, env: Any, groups: list[tuple[int, ...]], checkpoints: list[str], r: int,
                    round_dir: Path, progress: bool = False) -> TeamRound:
    """One per-agent MALT round (see the module docstring)."""
    import torch

    from trainers.algorithms.dpo.data import pairs_of_agents, tree_pairs
    from trainers.algorithms.dpo.dpo import DPOConfig
    from trainers.algorithms.dpo.trainer import train_dpo
    from trainers.algorithms.registry import load_agent_model

    team = team_policy(env, groups, checkpoints, config.temperature, name=f"malt-r{r:02d}")
    seeds = round_seeds(config.seed, r, config.trees)
    trees_dir = record_once(round_dir / "trees", lambda d: record_trees(
        env, team, config.tree_spec(env, "malt"), len(seeds), d, seeds=seeds, run_name=f"team-malt-r{r:02d}"))
    episodes = list(read_episodes(trees_dir))
    pairs = tree_pairs(episodes)  # the pairs flagged when the trees were recorded: per acting agent
    node_ids = {s["node_id"] for e in episodes for s in e["steps"] if not bool(s.get("is_last", False))}
    new, trained_on, reasons = [], [], []
    for k, (group, checkpoint) in enumerate(zip(groups, checkpoints)):
        mine = pairs_of_agents(pairs, group)
        trained_on.append({str(a): sum(p.agent == a for p in mine) for a in group})
        if not mine:
            new.append(checkpoint)
            reasons.append(f"no preference pair at a decision point of agents {list(group)} in {len(seeds)} trees")
            continue
        start = load_agent_model(checkpoint)
        steps = max(1, math.ceil(config.dpo_epochs * len(mine) / config.dpo_batch_size))
        dpo = DPOConfig(dataset=str(trees_dir), init=str(checkpoint), out=str(round_dir / f"train_g{k}"), steps=steps,
                        batch_size=config.dpo_batch_size, lr=config.dpo_lr, beta=config.beta, nll_coef=config.nll_coef,
                        seed=config.seed + r, checkpoint_every=steps, warmup_steps=0,
                        max_length=start.config.model.n_positions)
        torch.manual_seed(dpo.seed)
        train_dpo(dpo, start, None, progress, pairs=mine)
        new.append(str(round_dir / f"train_g{k}" / "checkpoint"))
        reasons.append("")
    return TeamRound(r, "malt", [list(g) for g in groups], new, str(trees_dir), len(node_ids), len(episodes),
                     float(np.mean([team_return(e) for e in episodes])), trained_on, reasons)


def run_team_malt(config: TeamMALTConfig, checkpoints: list[str], env: Any, progress: bool = False) -> list[TeamRound]:
    """Runs (or resumes) every round from one checkpoint per model group; returns the round records."""
    groups = parse_groups(config.model_groups, 2)
    if len(checkpoints) != len(groups):
        raise ValueError(f"run_team_malt: {len(groups)} model groups ({config.model_groups!r}) but "
                         f"{len(checkpoints)} starting checkpoints")
    if not 0 <= config.num_initial_ei_rounds <= config.rounds:
        raise ValueError(f"num_initial_ei_rounds={config.num_initial_ei_rounds} must be in [0, rounds={config.rounds}]")
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    rounds: list[TeamRound] = []
    current = [str(c) for c in checkpoints]
    for r in range(config.rounds):
        round_dir = out / f"round_{r:02d}"
        done = TeamRound.load(round_dir)
        if done is None:
            round_dir.mkdir(parents=True, exist_ok=True)
            if r < config.num_initial_ei_rounds:
                done = ei_team_round(config, env, groups, current, r, round_dir, progress)
            else:
                done = malt_team_round(config, env, groups, current, r, round_dir, progress)
            done.save(round_dir)
        rounds.append(done)
        current = list(done.checkpoints)
    return rounds


__all__ = ["TeamMALTConfig", "TeamRound", "ei_team_round", "malt_team_round", "run_team_malt",
           "team_return"]
