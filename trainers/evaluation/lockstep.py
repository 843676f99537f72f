"""Seeded episodes of any language environment, played several at a time by an agent that acts on a batch.

``play_seeded(envs, policy, seeds)`` plays one episode per seed. With more than one environment and a policy that
has ``act_batch(histories, seeds=...)`` (``trainers.core.policy.LanguageModelPolicy`` and the agents built on it)
the episodes run in lockstep, one per environment: every turn is one batched call for all episodes in flight (on
the policy's device), and an environment whose episode ends starts the next unplayed seed. The policy draws
each episode's randomness from its seed alone (``trainers.core.decoding.stream_seed``), so an episode plays as
``rlds_lang.env.run_episode(env, policy, seed)`` would play it alone; the results do not depend on how many
environments there are beyond float rounding in batched matrix products. One environment, or a policy without
``act_batch``, plays the episodes one after another with ``run_episode``.

Example::

    from trainers.evaluation.lockstep import play_seeded

    envs = [VisDialEnv(dialogues, backend, config, features=features) for _ in range(64)]
    played = play_seeded(envs, agent, seeds=range(1024), finished=lambda env: env.yes_no_answers)
    returns = [episode.total_reward for episode, _ in played]
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import dm_env
from tqdm.auto import tqdm

from rlds_lang.env import Episode, Observation, Policy, innermost, run_episode

#: the most actions an episode may take before it is an error (as ``rlds_lang.env.run_episode``).
MAX_STEPS = 10_000


@dataclasses.dataclass
class _InFlight:
    """An episode being played in one environment."""

    index: int
    env: dm_env.Environment
    observations: list[Observation]
    actions: list[str] = dataclasses.field(default_factory=list)
    rewards: list[float] = dataclasses.field(default_factory=list)
    discounts: list[float] = dataclasses.field(default_factory=list)


def play_seeded(envs: Sequence[dm_env.Environment], policy: Policy, seeds: Sequence[int],
                finished: Callable[[dm_env.Environment], Any] | None = None, progress: bool = False,
                desc: str = "play") -> list[tuple[Episode, Any]]:
    """``(episode, finished(env))`` per seed, in the order of ``seeds``: the episode episode ``i`` plays with its
    environment and the policy seeded ``seeds[i]``, and what ``finished`` reads from the environment when it ends
    (None without ``finished``). See the module for when the episodes run in lockstep."""
    if not envs:
        raise ValueError("play_seeded: give at least one environment")
    seeds = [int(seed) for seed in seeds]
    out: list[tuple[Episode, Any] | None] = [None] * len(seeds)
    read = finished or (lambda env: None)
    bar = tqdm(total=len(seeds), desc=desc, unit="episode", disable=not progress)
    if len(envs) == 1 or not callable(getattr(policy, "act_batch", None)):
        for index, seed in enumerate(seeds):
            episode = run_episode(envs[0], policy, seed=seed, max_steps=MAX_STEPS)
            out[index] = (episode, read(envs[0]))
            bar.update(1)
        bar.close()
        return out  # type: ignore[return-value]
    upcoming = iter(range(len(seeds)))

    def start(env: dm_env.Environment) -> _InFlight | None:
        index = next(upcoming, None)
        if index is None:
            return None
        innermost(env).seed(seeds[index])
        return _InFlight(index, env, [env.reset().observation])

    in_flight = [game for game in map(start, envs) if game is not None]
    while in_flight:
        actions = policy.act_batch([(game.observations, game.actions) for game in in_flight],
                                   seeds=[seeds[game.index] for game in in_flight])
        still: list[_InFlight] = []
        for game, action in zip(in_flight, actions):
            timestep = game.env.step(action)
            game.actions.append(action)
            game.rewards.append(float(timestep.reward))
            game.discounts.append(float(timestep.discount))
            game.observations.append(timestep.observation)
            if not timestep.last():
                if len(game.actions) >= MAX_STEPS:
                    raise RuntimeError(f"episode seeded {seeds[game.index]} exceeded max_steps={MAX_STEPS} with "
                                       f"policy {getattr(policy, 'name', policy)!r}")
                still.append(game)
                continue
            episode = Episode(game.observations, game.actions, game.rewards, game.discounts,
                              dict(innermost(game.env).episode_metadata()))
            out[game.index] = (episode, read(game.env))
            bar.update(1)
            following = start(game.env)
            if following is not None:
                still.append(following)
        in_flight = still
    bar.close()
    return out  # type: ignore[return-value]


__all__ = ["MAX_STEPS", "play_seeded"]
