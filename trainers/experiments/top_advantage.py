"""The ILQL code's top-advantage diagnostic for any value-based agent: which actions of a dataset the model
thinks best and worst.

Every action utterance of the first ``episodes`` episodes of a dataset split is scored by the model's advantage of
saying it where it was said: the sum over its tokens (its characters or subwords and its ``[EOA]``) of
``Q(s_t, a_t) - V(s_t)``, with the ``Q`` the agent decodes with (``min`` of its target or live Q heads,
``trainers.core.model.ValueHeads.acting_q``). Summing is our choice: a token-level agent's decoding rule adds
``beta * (Q - V)`` at every token of the utterance, so the sum is what it adds to the utterance's log-odds. The
scores are grouped by the action's text (mean, count); ``TopAdvantage.table`` lists the ``k`` highest and lowest
means. An utterance cut by the sequence length (no ``[EOA]`` inside ``max_length``) is left out and counted.

Example (the CLI: ``rlds-lang top-advantage --agent runs/ilql/checkpoint --dataset DIR --top 10``)::

    from trainers.algorithms.registry import load_agent_model
    from trainers.experiments.top_advantage import top_advantage

    loaded = load_agent_model("runs/ilql/checkpoint")
    print(top_advantage(loaded, "/tmp/tfds/wordle_synthetic/lmrl_gym/1.1.0", split="train", episodes=500).table(10))
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import numpy as np
import torch

from trainers.core.checkpoint import LoadedModel
from trainers.core.device import Placement, module_device
from trainers.core.model import action_targets


@dataclasses.dataclass(frozen=True)
class ActionAdvantage:
    """One distinct action text: how often the data says it and the model's mean advantage of saying it."""

    action: str
    count: int
    mean: float


@dataclasses.dataclass
class TopAdvantage:
    """Every distinct action of the episodes read, highest mean advantage first, and what was left out."""

    actions: list[ActionAdvantage]
    utterances: int
    cut: int

    def top(self, k: int) -> list[ActionAdvantage]:
        """The ``k`` actions with the highest mean advantage."""
        return self.actions[:k]

    def bottom(self, k: int) -> list[ActionAdvantage]:
        """The ``k`` actions with the lowest mean advantage, lowest first."""
        return self.actions[::-1][:k]

    def table(self, k: int = 10) -> str:
        """A markdown table of the top and bottom ``k`` (action texts shown up to 60 characters)."""
        rows = [f"{self.utterances} utterances scored ({self.cut} left out: cut by the sequence length), "
                f"{len(self.actions)} distinct actions", "",
                "| rank | action | times in data | mean advantage |", "| --- | --- | --- | --- |"]
        for label, chosen in (("top", self.top(k)), ("bottom", self.bottom(k))):
            for i, item in enumerate(chosen, 1):
                text = item.action if len(item.action) <= 60 else item.action[:57] + "..."
                shown = text.replace("|", "\\|").replace("\n", " ")
                rows.append(f"| {label} {i} | `{shown}` | {item.count} | {item.mean:+.4f} |")
        return "\n".join(rows)


def batch_utterance_advantages(loaded: LoadedModel, batch: dict[str, Any]) -> tuple[list[tuple[str, float]], int]:
    """``([(action text, summed advantage)] for every whole utterance of the batch, how many were cut)``; the batch
    is moved to the model's device."""
    batch = Placement(module_device(loaded.lm)).move(batch)
    out = loaded.lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True)
    hidden = out.hidden_states[-1][:, :-1]
    actions, mask = action_targets(batch)
    q = loaded.heads.acting_q(hidden).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    advantage = (q - loaded.heads.v(hidden).squeeze(-1)).double().masked_fill(~mask, 0.0)
    turns = batch["turn_index"][:, 1:]
    ends = batch["turn_end"][:, 1:].bool() & mask
    scored, cut = [], 0
    for row in range(mask.shape[0]):
        for turn in torch.unique(turns[row][mask[row]]).tolist():
            tokens = mask[row] & (turns[row] == turn)
            if not bool((ends[row] & tokens).any()):
                cut += 1
                continue
            text = loaded.tokenizer.decode(actions[row][tokens].tolist(), skip_special=True)
            scored.append((text, float(advantage[row][tokens].sum())))
    return scored, cut


@torch.no_grad()
def top_advantage(loaded: LoadedModel, dataset: str, split: str = "train", episodes: int = 1000,
                  batch_size: int = 32) -> TopAdvantage:
    """Scores every action utterance of the first ``episodes`` episodes of ``dataset``'s ``split`` (see the module)."""
    from transforms.loading import load
    from transforms.token_mdp import TokenMDPConfig, token_batches
    from transforms.torch_bridge import TensorBatches

    if loaded.heads is None:
        raise ValueError(f"a {loaded.algorithm!r} checkpoint has no value heads: the top-advantage diagnostic needs "
                         f"a value-based agent (ilql, mc, cql, psi)")
    config = loaded.config
    mdp = TokenMDPConfig(max_length=config.max_length, token_reward=config.token_reward)
    scores: dict[str, list[float]] = defaultdict(list)
    utterances = cut = 0
    for batch in TensorBatches(token_batches(load(dataset, split=split).take(episodes), loaded.tokenizer, mdp,
                                             batch_size)):
        scored, lost = batch_utterance_advantages(loaded, batch)
        cut += lost
        utterances += len(scored)
        for text, value in scored:
            scores[text].append(value)
    ranked = sorted((ActionAdvantage(text, len(values), float(np.mean(values))) for text, values in scores.items()),
                    key=lambda item: (-item.mean, item.action))
    return TopAdvantage(ranked, utterances, cut)


__all__ = ["ActionAdvantage", "TopAdvantage", "batch_utterance_advantages", "top_advantage"]
