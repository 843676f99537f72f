"""PPO's rollouts: the policy plays its environment through ``loggers.record``, so every rollout batch is an
RLDS dataset (Riegeli logs under ``<out>/rollouts/update-NNNNN``), then the turns are read back as tensors.

``RolloutPolicy`` is an ``rlds_lang.env.Policy``: ``act`` builds the query of the turn, samples a fixed-length
response (``trainers.algorithms.ppo.networks.generate``), keeps the query and response token ids aside keyed by the
episode's seed and turn, and returns the response's text up to the truncate token (``[EOA]``). Its
sampling randomness is a pure function of ``(episode seed, turn)``, so a rollout batch is reproducible
(exact resume). ``collect_rollouts`` records ``episodes`` games, reads them back with
``loggers.read_episodes``, scores them (``trainers.algorithms.ppo.rewards``) and returns a ``Rollouts`` batch of turns
whose log-probs, reference log-probs and values are computed in one batched pass with the same weights.

Example::

    policy = RolloutPolicy(model.lm, tokenizer, query_length=64, response_length=6, temperature=0.7)
    batch = collect_rollouts(env, policy, seeds=range(8), data_dir="/tmp/rollouts/update-00001", source="env")
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

import torch
from torch import nn

from rlds_lang.char_tokenizer import CharTokenizer
from trainers.algorithms.ppo.losses import penalize_untruncated, truncate_responses
from trainers.algorithms.ppo.networks import generate, ids_text
from trainers.algorithms.ppo.rewards import returns_to_go, turn_rewards
from trainers.core.decoding import PrefixConstraint, stream_seed
from trainers.core.device import module_device, placement
from trainers.core.padding import left_pad
from trainers.core.policy import observation_text


class RolloutPolicy:
    """Samples each action as a fixed-length response of ``lm``; remembers the token ids of every turn."""

    def __init__(self, lm: nn.Module, tokenizer: CharTokenizer, query_length: int, response_length: int,
                 temperature: float, allowed_actions: Sequence[str] | None = None, name: str = "ppo",
                 precision: str | None = None):
        self.lm, self.tokenizer, self.name = lm, tokenizer, name
        #: where ``lm`` is (sampling runs there) and the sampling's precision (``trainers.core.device``).
        self.placement = placement(module_device(lm), precision)
        self.query_length, self.response_length, self.temperature = query_length, response_length, temperature
        self.constraint = (PrefixConstraint(allowed_actions, tokenizer, int(lm.config.vocab_size)).to(
            self.placement.device) if allowed_actions is not None else None)
        if self.constraint is not None and self.constraint.max_steps > response_length:
            raise ValueError(f"response_length={response_length} is shorter than the longest allowed action "
                             f"plus its end token ({self.constraint.max_steps})")
        #: ``(episode seed, turn) -> (query ids, response ids)`` of every turn played since ``clear``.
        self.samples: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
        #: JSON-ready provenance added to ``params`` (e.g. the PPO update).
        self.info: dict[str, Any] = {}
        self.seed = 0

    def reset(self, seed: int) -> None:
        """Starts the episode seeded ``seed``."""
        self.seed = int(seed)

    def params(self) -> dict[str, Any]:
        """Sampling parameters recorded in episode metadata."""
        return {"name": self.name, "temperature": self.temperature, "response_length": self.response_length,
                "query_length": self.query_length, "constrained": self.constraint is not None, **self.info}

    def act(self, observations: Sequence[Any], actions: Sequence[str]) -> str:
        """Samples the turn's response; returns its text up to the end token."""
        query = self.tokenizer.encode_prompt([observation_text(o) for o in observations], list(actions))
        # alone in its batch, the query needs no padding (padded and unpadded generation are equal)
        ids, mask = left_pad([query], min(len(query), self.query_length), self.tokenizer.pad_id)
        generator = torch.Generator().manual_seed(stream_seed(self.seed, len(actions)))
        uniforms = torch.rand(1, self.response_length, generator=generator, device="cpu")  # the same on every device
        self.lm.eval()
        device = self.placement.device
        with self.placement.autocast():
            response = generate(self.lm, ids.to(device), mask.to(device), self.response_length, self.temperature,
                                uniforms.to(device), self.constraint)[0].tolist()
        self.samples[(self.seed, len(actions))] = (query, response)
        return ids_text(self.tokenizer, response)


@dataclasses.dataclass
class Rollouts:
    """A batch of turns (rows), as tensors; ``scores`` already hold the truncation penalty."""

    queries: torch.Tensor        # [n, query_length] left-padded
    query_mask: torch.Tensor     # [n, query_length]
    responses: torch.Tensor      # [n, response_length] as sampled
    mask: torch.Tensor           # [n, response_length] bool: kept tokens (up to the truncate token)
    scores: torch.Tensor         # [n] return-to-go of the turn's reward
    episode_returns: list[float]  # per game: the sum of the reward source's turn rewards
    data_dir: str
    #: per game: the environment's own return (equal to ``episode_returns`` when the source is ``env``).
    true_returns: list[float] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return int(self.queries.shape[0])

    def to(self, device: torch.device) -> "Rollouts":
        """The same turns with their tensors on ``device``."""
        return dataclasses.replace(self, **{field: getattr(self, field).to(device)
                                            for field in ("queries", "query_mask", "responses", "mask", "scores")})


def collect_rollouts(env: Any, policy: RolloutPolicy, seeds: Sequence[int], data_dir: str | os.PathLike,
                     source: Any, truncate_after: int, penalty: float, run_name: str = "ppo") -> Rollouts:
    """Records one game per seed through ``loggers.record``, reads the episodes back and builds the turns (their
    tensors on the device of the policy's LM)."""
    from loggers import read_episodes, record

    policy.samples = {}
    record(env, policy, episodes=len(seeds), data_dir=data_dir, seeds=list(seeds), run_name=run_name, progress=False)
    episodes = sorted(read_episodes(data_dir), key=lambda ep: str(ep["episode_id"]))
    if len(episodes) != len(seeds):
        raise RuntimeError(f"{data_dir}: recorded {len(seeds)} episodes but read back {len(episodes)}")
    rewards = turn_rewards(episodes, source)
    queries, responses, scores = [], [], []
    for episode, episode_rewards in zip(episodes, rewards):
        seed = int(episode["seed"])
        for turn, score in enumerate(returns_to_go(episode_rewards)):
            query, response = policy.samples[(seed, turn)]
            queries.append(query)
            responses.append(response)
            scores.append(score)
    tokenizer = policy.tokenizer
    ids, query_mask = left_pad(queries, policy.query_length, tokenizer.pad_id)
    responses_t = torch.tensor(responses, dtype=torch.long, device="cpu")
    _, mask, has_token = truncate_responses(responses_t, tokenizer.eoa_id, truncate_after, tokenizer.pad_id)
    scores_t = penalize_untruncated(torch.tensor(scores, dtype=torch.float32, device="cpu"), has_token, penalty)
    true = [float(sum(float(s["reward"]) for s in ep["steps"][:-1])) for ep in episodes]
    return Rollouts(ids, query_mask, responses_t, mask, scores_t, [float(sum(r)) for r in rewards], os.fspath(data_dir),
                    true).to(policy.placement.device)


__all__ = ["RolloutPolicy", "Rollouts", "collect_rollouts"]
