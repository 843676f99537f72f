"""Behaviour cloning (BC) and filtered BC (%BC) on the action tokens of RLDS episodes.

BC maximises the likelihood of the dataset's action tokens given everything before them in the episode's
token sequence (``transforms.token_mdp``); observation tokens are context, never targets. %BC is the same
objective on the top ``p`` fraction of episodes by return: ``BCConfig(top_p=0.1)`` (the selection is the
``transforms.selection.filter_top_p`` transform, the dataset is not copied). The ILQL paper compares both
on its Wordle datasets.

Example (train, then the CLI: ``rlds-lang train bc --dataset DIR --steps 500``)::

    from trainers.algorithms.bc import BCConfig
    from trainers.algorithms.registry import train

    result = train("bc", BCConfig(dataset="/tmp/tfds/wordle_synthetic/branch/1.1.0", steps=200, out="runs/bc"))
"""

from __future__ import annotations


import torch
from torch import nn

from trainers.algorithms.ilql.losses import bc_loss
from trainers.algorithms.bc_config import BCConfig
from trainers.core.model import action_targets, language_model_for
from trainers.core.objective import LossOutput


class BCModel(nn.Module):
    """A causal LM trained by maximum likelihood on the action tokens; ``forward(batch)`` is the loss."""

    def __init__(self, config: BCConfig, tokenizer):
        super().__init__()
        self.lm = language_model_for(config.model, tokenizer)

    def forward(self, batch: dict[str, torch.Tensor]) -> LossOutput:
        """Mean negative log-likelihood of the batch's action tokens (and how many there are)."""
        logits = self.lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
        targets, mask = action_targets(batch)
        loss = bc_loss(logits, targets, mask)
        with torch.no_grad():
            accuracy = ((logits.argmax(-1) == targets) & mask).sum() / mask.sum().clamp(min=1)
        return LossOutput(loss, mask.sum(), {"nll": loss.detach(), "token_accuracy": accuracy})

    def after_optimizer_step(self) -> None:
        """Nothing to do after a step (ILQL updates its target heads here)."""


__all__ = ["BCConfig", "BCModel"]
