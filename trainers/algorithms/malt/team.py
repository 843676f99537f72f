"""Several agents on language models: model groups, team policies, BC on an agent's own turns, seeded team games.

A *model group* is a set of agents that share one model: ``"0+1"`` puts both roles of a two-role task on one model
(each agent's observations start with its role prompt, so the model knows whose turn it is), ``"0,1"`` gives each
agent its own model (``parse_groups``; ``shared`` and ``separate`` are aliases). Each group is fine-tuned on its
own agents' data only: BC on their turns (``fit_turns``), DPO on their preference pairs
(``trainers.algorithms.malt.team_rounds``).

``team_policy`` plays a group checkpoint per agent as a ``rlds_lang.wordle_roles.policies.RoleTeam`` of
``trainers.core.policy.LanguageModelPolicy`` members, each decoding only its agent's actions
(``env.agent_actions(agent)``). ``play_team`` plays seeded games in lockstep (one batch per member per step) and
returns each game's team return (the environment's reward) and every agent's own return (``agent_rewards()``).

A turn is one action of one agent with the history before it: the prompt ``[BOS] o_0 [EOO] a_0 [EOA] ... o_t
[EOO]`` then the action and ``[EOA]``, laid out as ``trainers.algorithms.dpo.data.encode_response`` does, so BC on
turns and DPO on pairs train exactly the tokens the policy generates.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from rlds_lang.env import LanguageEnv
from rlds_lang.wordle_roles.policies import RoleTeam

#: aliases of ``parse_groups`` for two agents.
GROUP_ALIASES = {"shared": "0+1", "separate": "0,1"}


def parse_groups(spec: str, num_agents: int) -> list[tuple[int, ...]]:
    """The model groups of ``spec``: groups separated by ``,``, agents of a group joined by ``+``.

    >>> parse_groups("0+1", 2), parse_groups("separate", 2)
    ([(0, 1)], [(0,), (1,)])
    """
    text = GROUP_ALIASES.get(spec, spec) if num_agents == 2 else spec
    try:
        groups = [tuple(int(a) for a in part.split("+")) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"model_groups {spec[:40]!r}: expected agents joined by '+', groups separated by ','"
                         f" (e.g. '0+1' or '0,1'), or one of {sorted(GROUP_ALIASES)}") from None
    agents = sorted(a for g in groups for a in g)
    if agents != list(range(num_agents)):
        raise ValueError(f"model_groups {spec[:40]!r}: every agent 0..{num_agents - 1} must be in exactly one group, "
                         f"got agents {agents}")
    return groups


@dataclasses.dataclass(frozen=True)
class AgentTurn:
    """One action of ``agent`` after the history ``(observations, actions)`` (texts, from the start)."""

    observations: tuple[str, ...]
    actions: tuple[str, ...]
    response: str
    agent: int


def _text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.item()
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def agent_turns(episodes: Iterable[Mapping[str, Any]], agents: Iterable[int]) -> list[AgentTurn]:
    """Every turn of ``agents`` in recorded episodes (the acting agent is the observation's ``agent``)."""
    wanted = set(int(a) for a in agents)
    turns = []
    for episode in episodes:
        observations, actions = [], []
        for step in episode["steps"]:
            observations.append(_text(step["observation"]["text"]))
            if bool(step.get("is_last", False)):
                break
            agent = int(step["observation"]["agent"])
            action = _text(step["action"])
            if agent in wanted:
                turns.append(AgentTurn(tuple(observations), tuple(actions), action, agent))
            actions.append(action)
    return turns


def encode_turns(turns: Sequence[AgentTurn], tokenizer: Any, max_length: int) -> dict[str, torch.Tensor]:
    """``input_ids``, ``attention_mask``, ``response_mask`` ``[T, L]`` of the turns; a turn longer than
    ``max_length`` is an error naming it."""
    from trainers.algorithms.dpo.data import encode_response
    from trainers.core.padding import pad_responses

    rows = []
    for k, turn in enumerate(turns):
        ids, start = encode_response(tokenizer, turn.observations, turn.actions, turn.response)
        if len(ids) > max_length:
            raise ValueError(f"turn {k} (agent {turn.agent}, action {turn.response[:20]!r}): {len(ids)} tokens, more "
                             f"than max_length={max_length}")
        rows.append((ids, start))
    input_ids, attention, response = pad_responses(rows, tokenizer.pad_id)
    return {"input_ids": input_ids, "attention_mask": attention, "response_mask": response}


def fit_turns(config: Any, turns: Sequence[AgentTurn], start: Any | None = None, progress: bool = False) -> Path:
    """BC on ``turns``: minimises the mean NLL per action token of the turns' actions, from ``start``'s weights (a
    loaded checkpoint) or from a fresh model of ``config.model``; writes ``config.out/checkpoint`` (algorithm
    ``bc``, loadable by ``trainers.algorithms.registry.load_policy``) and returns it. ``config`` is a
    ``trainers.algorithms.bc.BCConfig`` (without ``start``, its ``model`` and ``tokenizer``, a
    ``rlds_lang.tokenizers.make_tokenizer`` name, make the fresh model). It trains in the loop over in-memory tensors
    (``trainers.core.tensor_loop.fit_tensors``: seeded epochs of permutations, the config's warm-up, logs, exact
    resume); ``progress`` draws a bar with the loss."""
    from rlds_lang.tokenizers import make_tokenizer
    from trainers.algorithms.bc import BCModel
    from trainers.algorithms.dpo.dpo import sequence_logps
    from trainers.core.checkpoint import checkpoint_dir
    from trainers.core.tensor_loop import fit_tensors

    if not turns:
        raise ValueError(f"fit_turns ({config.out}): no turns to train on")
    torch.manual_seed(config.seed)
    tokenizer = start.tokenizer if start is not None else make_tokenizer(config.tokenizer)
    if start is not None:
        config = dataclasses.replace(config, model=start.config.model, tokenizer=start.config.tokenizer)
    module = BCModel(config, tokenizer)
    if start is not None:
        module.lm.load_state_dict(start.lm.state_dict())

    def step_loss(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, Any], int]:
        width = int(batch["attention_mask"].sum(1).max())  # right-padded: drop the all-pad columns
        batch = {k: v[:, :width] for k, v in batch.items()}
        logps = sequence_logps(module.lm, batch["input_ids"], batch["attention_mask"], batch["response_mask"])
        return -logps.sum() / batch["response_mask"][:, 1:].sum().clamp(min=1), {}, int(batch["attention_mask"].sum())

    fit_tensors(config, "bc", module, tokenizer, encode_turns(turns, tokenizer, config.max_length), step_loss,
                progress=progress, title=f"fit {Path(config.out).name}", turns=len(turns))
    return checkpoint_dir(config.out)


def team_policy(env: LanguageEnv, groups: Sequence[tuple[int, ...]], checkpoints: Sequence[str | Path],
                temperature: float = 1.0, name: str = "team") -> RoleTeam:
    """A ``RoleTeam`` whose agent ``a`` plays with its group's checkpoint, decoding only ``env.agent_actions(a)``."""
    from trainers.algorithms.registry import load_agent_model
    from trainers.core.policy import LanguageModelPolicy

    if len(groups) != len(checkpoints):
        raise ValueError(f"team_policy: {len(groups)} model groups but {len(checkpoints)} checkpoints")
    members: dict[int, Any] = {}
    for group, checkpoint in zip(groups, checkpoints):
        loaded = load_agent_model(checkpoint)
        for agent in group:
            members[agent] = LanguageModelPolicy(loaded.lm, loaded.tokenizer, temperature=temperature,
                                                 allowed_actions=env.agent_actions(agent), name=f"{name}-a{agent}")
            members[agent].info = {"checkpoint": str(checkpoint)}
    return RoleTeam([members[a] for a in sorted(members)], name=name)


def play_team(make_env: Callable[[], LanguageEnv], team: RoleTeam, seeds: Sequence[int],
              batch: int = 64, progress: bool = False,
              on_step: Callable[[Any, str], None] | None = None) -> np.ndarray:
    """float64 ``[games, 1 + agents]``: per seeded game its team return (the rewards) and each agent's own return
    (the sum of ``agent_rewards()``), games played ``batch`` at a time in lockstep (``progress``: a bar of games).
    ``on_step(observation, action)`` sees every action with the observation it was taken from."""
    rows = []
    bar = tqdm(total=len(seeds), desc=f"play {team.name}", unit="game", disable=not progress)
    for first in range(0, len(seeds), batch):
        chunk = [int(s) for s in seeds[first:first + batch]]
        envs = [make_env() for _ in chunk]
        histories, totals, live = [], [], []
        for env, seed in zip(envs, chunk):
            env.seed(seed)
            histories.append(([env.reset().observation], []))
        totals = [None] * len(chunk)
        live = list(range(len(chunk)))
        while live:
            actions = team.act_batch([histories[i] for i in live], seeds=[chunk[i] for i in live])
            still = []
            for i, action in zip(live, actions):
                if on_step is not None:
                    on_step(histories[i][0][-1], action)
                timestep = envs[i].step(action)
                own = np.asarray(envs[i].agent_rewards(), np.float64)
                step_total = np.concatenate([[float(timestep.reward)], own])
                totals[i] = step_total if totals[i] is None else totals[i] + step_total
                histories[i][0].append(timestep.observation)
                histories[i][1].append(action)
                if not timestep.last():
                    still.append(i)
            live = still
        rows += totals
        bar.update(len(chunk))
    bar.close()
    return np.stack(rows)


__all__ = ["AgentTurn", "GROUP_ALIASES", "agent_turns", "encode_turns", "fit_turns", "parse_groups", "play_team",
           "team_policy"]
