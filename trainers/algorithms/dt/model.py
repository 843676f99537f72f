"""Decision Transformer (Chen, Lu, Rajeswaran, Lee, Grover, Laskin, Abbeel, Srinivas, Mordatch 2021, arXiv
2106.01345), one of the ILQL paper's baselines: behaviour cloning of the action tokens given a return-to-go
prefix, a linear embedding of the episode's total return ahead of the history (at the ``[BOS]`` slot:
``trainers.algorithms.dt.losses``). One step minimises

    -log pi(a_t | R, s_t)      with R = the episode's return, the prefix ``Linear(1, n_embd)(R)``

over the dataset's action tokens. The agent plays conditioned on a constant target return
(``ReturnConditionedLM.target_return``, from ``DTConfig.target_return`` unless the player sets it); asked for a high
return, it should take the actions that led to high returns in the data. Checkpoints: ``lm/`` holds the plain
GPT-2 (without the return embedding, which is in ``model.pt``), and the registry's ``load_policy`` plays the
conditioned model. Defaults and their sources: ``trainers.algorithms.dt.config``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainers.algorithms.dt.config import DTConfig
from trainers.algorithms.dt.losses import with_return_prefix
from trainers.algorithms.ilql.losses import bc_loss
from trainers.core.model import action_targets, hidden_size, language_model_for
from trainers.core.objective import LossOutput


class ReturnConditionedLM(nn.Module):
    """A GPT-2 LM whose ``[BOS]`` embedding carries a linear embedding of a return; called like a ``transformers``
    causal LM (what ``trainers.core.policy.LanguageModelPolicy`` runs), it conditions on ``target_return`` unless a
    call passes ``returns`` (one per row, as training does).

    >>> from trainers.core.model import ModelConfig, build_language_model
    >>> lm = ReturnConditionedLM(build_language_model(ModelConfig(n_layer=1, n_embd=8, n_head=2), 10, 0), 1, -2.0)
    >>> lm(input_ids=torch.tensor([[1, 5, 6]])).logits.shape
    torch.Size([1, 3, 10])
    """

    def __init__(self, lm: nn.Module, bos_id: int, target_return: float):
        super().__init__()
        #: the plain GPT-2 LM (what ``trainers.core.model.plain_language_model`` saves as ``lm/``).
        self.wrapped_lm = lm
        self.return_embedding = nn.Linear(1, hidden_size(lm))
        self.bos_id = int(bos_id)
        #: the return the agent plays for (a setting, not a parameter).
        self.target_return = float(target_return)

    @property
    def config(self) -> Any:
        """The wrapped LM's ``transformers`` config (vocabulary size, positions)."""
        return self.wrapped_lm.config

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, past_key_values: Any = None, use_cache: bool | None = None,
                output_hidden_states: bool = False, returns: torch.Tensor | None = None) -> Any:
        """The wrapped LM's output for ``input_ids`` with the return's embedding added at ``[BOS]``.

        ``returns``: ``[batch]``, the return each row is conditioned on; None: ``target_return`` for every row."""
        if returns is None:
            returns = torch.full((input_ids.shape[0],), self.target_return, device=input_ids.device)
        prefix = self.return_embedding(returns.to(self.return_embedding.weight.dtype).unsqueeze(-1))
        embeddings = with_return_prefix(self.wrapped_lm.get_input_embeddings()(input_ids), input_ids, self.bos_id, prefix)
        return self.wrapped_lm(inputs_embeds=embeddings, attention_mask=attention_mask, position_ids=position_ids,
                               past_key_values=past_key_values, use_cache=use_cache,
                               output_hidden_states=output_hidden_states)


class DTModel(nn.Module):
    """The return-conditioned LM trained by maximum likelihood of the action tokens; ``forward(batch)`` is the loss."""

    def __init__(self, config: DTConfig, tokenizer):
        super().__init__()
        self.config = config
        self.lm = ReturnConditionedLM(language_model_for(config.model, tokenizer), tokenizer.bos_id,
                                      config.target_return)

    def forward(self, batch: dict[str, torch.Tensor]) -> LossOutput:
        """Mean negative log-likelihood of the batch's action tokens, each sequence conditioned on its episode's
        return (``episode_return``)."""
        logits = self.lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                         returns=batch["episode_return"].float()).logits[:, :-1]
        targets, mask = action_targets(batch)
        loss = bc_loss(logits, targets, mask)
        return LossOutput(loss, mask.sum(), {"nll": loss.detach()})

    def after_optimizer_step(self) -> None:
        """Nothing to do after a step (no target network)."""


__all__ = ["ReturnConditionedLM", "DTModel"]
