"""The utterance-level agent (of ``utterance_ilql`` and ``chai``): sample N utterances from the LM, say the one whose
utterance Q is highest.

``BestOfSamplesPolicy`` draws its candidates with a ``trainers.core.policy.LanguageModelPolicy`` on the trained LM
(``beta = 0``: the behaviour policy, constrained to the allowed actions when given), then scores each candidate by
running the LM over ``prompt + candidate + [EOA]`` and reading ``min(target Q1, target Q2)`` of the state the model's
heads read there (``candidate_states``: utterance ILQL's hidden state at the ``[EOA]``, CHAI's running mean; the ILQL
code reranks by the minimum of the target heads too: ``['target_qs']`` in ``rerank_raw``,
src/models/utterance_iql_model.py:323, and ``scores = target_qs``, src/models/chai_model.py:346).
Candidate ``i`` of a game seeded ``s`` is drawn from its own stream (``(s, i)``), so a seeded game plays the same
alone or in a batch.

Example::

    from trainers.algorithms.registry import load_policy

    agent = load_policy("runs/utterance_ilql/checkpoint", allowed_actions="lmrl_gym")
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from trainers.core.checkpoint import LoadedModel
from trainers.core.policy import History, LanguageModelPolicy, observation_text


class BestOfSamplesPolicy:
    """Satisfies ``rlds_lang.env.Policy``; ``act_batch`` plays many games at once (see the module), on the device
    of ``loaded``'s model in ``precision`` (``trainers.core.device``; None: ``auto``)."""

    def __init__(self, loaded: LoadedModel, samples: int, allowed_actions: Sequence[str] | None = None,
                 name: str = "utterance_ilql", seed: int = 0, temperature: float = 1.0, max_action_tokens: int = 16,
                 precision: str | None = None):
        if samples < 1:
            raise ValueError(f"BestOfSamplesPolicy: samples must be >= 1, got {samples}")
        self.loaded = loaded
        self.samples = int(samples)
        self.name = name
        self.sampler = LanguageModelPolicy(loaded.lm, loaded.tokenizer, temperature=temperature,
                                           allowed_actions=allowed_actions, max_action_tokens=max_action_tokens,
                                           name=name, seed=seed, reuse_states=False, precision=precision)
        #: JSON-ready provenance merged into ``params()``.
        self.info: dict[str, Any] = {}
        self.reset(seed)

    def reset(self, seed: int) -> None:
        """Seeds the next game."""
        self.seed = int(seed)
        self.sampler.reset(seed)

    def act(self, observations: Sequence[Any], actions: Sequence[str]) -> str:
        """The next action of the game seeded by the last ``reset``."""
        return self.act_batch([(observations, actions)], seeds=[self.seed])[0]

    def params(self) -> dict[str, Any]:
        """JSON-ready parameters: the sampler's, the number of candidates, the provenance."""
        return {**self.sampler.params(), "name": self.name, "samples": self.samples, "selection": "max utterance Q",
                **self.info}

    def candidate_seeds(self, seeds: Sequence[int]) -> list[int]:
        """One seed per (game, candidate), derived from the game's seed and the candidate's index."""
        return [int(np.random.SeedSequence([int(s) % 2**32, i]).generate_state(1)[0]) for s in seeds
                for i in range(self.samples)]

    @torch.inference_mode()
    def utterance_q(self, histories: Sequence[History], candidates: Sequence[str]) -> torch.Tensor:
        """``min(target Q1, target Q2)`` of saying each candidate after its history: ``[len(candidates)]``."""
        tokenizer = self.loaded.tokenizer
        rows = [tokenizer.encode_prompt([observation_text(o) for o in observations], list(actions))
                + tokenizer.encode(text) + [tokenizer.eoa_id] for (observations, actions), text in zip(histories, candidates)]
        with self.sampler.placement.autocast():
            states = self.loaded.model.candidate_states(rows, tokenizer.pad_id)
        return self.loaded.model.utterance_heads.target_q(states)

    def act_batch(self, histories: Sequence[History], seeds: Sequence[int] | None = None) -> list[str]:
        """The next action of several games: the highest-Q of each game's ``samples`` candidates (first on ties)."""
        if not histories:
            return []
        expanded = [h for h in histories for _ in range(self.samples)]
        candidates = self.sampler.act_batch(expanded, seeds=self.candidate_seeds(seeds) if seeds is not None else None)
        q = self.utterance_q(expanded, candidates).view(len(histories), self.samples)
        best = q.argmax(dim=1).tolist()
        return [candidates[game * self.samples + choice] for game, choice in enumerate(best)]


__all__ = ["BestOfSamplesPolicy"]
