"""Utterance-level ILQL, one of the ILQL paper's baselines: the MDP's steps are whole utterances instead of tokens.
On a transformer's hidden states sit twin ``Q`` heads and a ``V`` head with one output each; Q is read at an
utterance's ``[EOA]`` and V at the token before its first (``trainers.algorithms.utterance_ilql.losses``). One step
minimises

    q_weight    * sum_i (Q_i(s_k, a_k) - [r_k + gamma * (1 - done_k) * V(s_{k+1})])^2     (TD, V detached)
  + v_weight    * |tau - 1[Q^target(s_k, a_k) < V(s_k)]| * (Q^target(s_k, a_k) - V(s_k))^2  (expectile, tau 0.9)
  + awac_weight * -log pi(a_t | s_t)                                                       (BC, every action token)

(``Q^target = min`` of the target heads, which follow the trained ones by Polyak averaging). By default, as the
authors', the policy is a fixed BC model on a transformer of its own (``separate_value_trunk``, loaded from
``model.checkpoint``, never trained: ``awac_weight=0``) and the heads sit on a second transformer that starts from
the same checkpoint. The agent (``trainers.algorithms.utterance_ilql.policy.BestOfSamplesPolicy``) samples
``samples`` utterances from the policy and says the one with the highest ``Q``. Defaults and their sources:
``trainers.algorithms.utterance_ilql.config``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainers.algorithms.ilql.losses import bc_loss, expectile_loss, q_loss, transitions
from trainers.algorithms.utterance_ilql.config import UtteranceILQLConfig
from trainers.algorithms.utterance_ilql.losses import utterance_positions, utterance_q_targets, utterance_v_targets
from trainers.core.decoding import positions_from_mask
from trainers.core.device import module_device
from trainers.core.model import PolicyValueLM, TwinQHeads, action_targets, hidden_size, language_model_for, mlp_head
from trainers.core.objective import LossOutput, masked_mean
from trainers.core.padding import right_pad


class UtteranceHeads(TwinQHeads):
    """Twin utterance Q heads, their target copies (``TwinQHeads`` with one output) and (``with_value``) a V head,
    each one scalar per position."""

    def __init__(self, hidden_size: int, with_value: bool = True):
        super().__init__(hidden_size, 1, scalar=True)
        self.v = mlp_head(hidden_size, 1) if with_value else None

    def forward(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(Q1, Q2, V)`` at every position: ``[batch, time]`` each (V None without a V head)."""
        v = self.v(hidden).squeeze(-1) if self.v is not None else None
        return self.q1(hidden).squeeze(-1), self.q2(hidden).squeeze(-1), v


def rows_hidden(lm: nn.Module, rows: list[list[int]], pad_id: int, cache: Any = None,
                prompt_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The LM's last hidden states over rows of token ids (right-padded into one batch) and their mask: ``([rows,
    width, n_embd], [rows, width])``. With ``cache`` (a ``transformers`` cache that already holds each row's prompt,
    left-padded, ``prompt_mask`` their attention mask) the rows continue those prompts, and only the rows' own tokens
    go through the LM."""
    ids, mask = right_pad(rows, pad_id)
    device = module_device(lm)
    ids, mask = ids.to(device), mask.to(device)
    width = ids.shape[1]
    if cache is None:
        hidden = lm(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
    else:
        full = torch.cat([prompt_mask, mask], dim=1)
        hidden = lm(input_ids=ids, attention_mask=full, position_ids=positions_from_mask(full)[:, -width:],
                    past_key_values=cache, use_cache=True, output_hidden_states=True).hidden_states[-1]
    return hidden, mask


def hidden_after(lm: nn.Module, rows: list[list[int]], pad_id: int, cache: Any = None,
                 prompt_mask: torch.Tensor | None = None) -> torch.Tensor:
    """The LM's last hidden state after each row of token ids (``rows_hidden``): ``[rows, n_embd]``; what an
    utterance head reads at the ``[EOA]`` that ends a row."""
    hidden, mask = rows_hidden(lm, rows, pad_id, cache, prompt_mask)
    return hidden[torch.arange(len(rows), device=mask.device), mask.sum(1) - 1]


class UtteranceILQLModel(nn.Module):
    """The LM (the policy candidates are sampled from) plus utterance-level value heads; ``forward`` is the loss."""

    def __init__(self, config: UtteranceILQLConfig, tokenizer):
        super().__init__()
        self.config = config
        #: the tokenizer's ``[EOO]`` and ``[EOA]`` ids: where the next states are (``transitions``).
        self.separators = (tokenizer.eoo_id, tokenizer.eoa_id)
        self.lm = language_model_for(config.model, tokenizer)
        if config.separate_value_trunk:
            self.lm = PolicyValueLM(self.lm, language_model_for(config.model, tokenizer))
        #: named so that token-level decoders and diagnostics, which read ``LoadedModel.heads``, do not take these
        #: one-output heads for ILQL's per-token ones.
        self.utterance_heads = UtteranceHeads(hidden_size(self.lm))

    def forward(self, batch: dict[str, torch.Tensor]) -> LossOutput:
        """The weighted TD, expectile and BC terms (their mean over the batch's action tokens for the loop)."""
        c = self.config
        actions, mask = action_targets(batch)
        if c.awac_weight == 0 and isinstance(self.lm, PolicyValueLM):  # a fixed policy: only the value trunk runs
            hidden = self.lm.value_hidden(batch["input_ids"], batch["attention_mask"])
            bc = hidden.new_zeros(())
        else:
            out = self.lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                          output_hidden_states=True)
            hidden, bc = out.hidden_states[-1], bc_loss(out.logits[:, :-1], actions, mask)
        q1, q2, v = self.utterance_heads(hidden)
        ends, states = utterance_positions(batch)
        steps = transitions(batch, *self.separators, outputs=False)
        q_targets, q_valid = utterance_q_targets(steps, v, ends, c.gamma)
        v_targets, v_valid = utterance_v_targets(self.utterance_heads.target_q(hidden), ends, states)
        losses = {"q_loss": q_loss(q1, q_targets, q_valid) + q_loss(q2, q_targets, q_valid),
                  "v_loss": expectile_loss(v_targets - v, c.tau, v_valid), "awac_loss": bc}
        total = c.q_weight * losses["q_loss"] + c.v_weight * losses["v_loss"] + c.awac_weight * losses["awac_loss"]
        metrics = {k: val.detach() for k, val in losses.items()}
        metrics.update(q_mean=masked_mean(q1.detach(), q_valid), v_mean=masked_mean(v.detach(), v_valid))
        return LossOutput(total, mask.sum(), metrics)

    @torch.no_grad()
    def candidate_states(self, rows: list[list[int]], pad_id: int) -> torch.Tensor:
        """What the utterance heads read after each row (a prompt, a candidate utterance and its ``[EOA]``): the LM's
        hidden state there, ``[rows, n_embd]``."""
        return hidden_after(self.lm, rows, pad_id)

    def after_optimizer_step(self) -> None:
        """Moves the target Q heads towards the trained ones by ``alpha`` (Polyak averaging)."""
        self.utterance_heads.update_targets(self.config.alpha)


__all__ = ["UtteranceHeads", "rows_hidden", "hidden_after", "UtteranceILQLModel"]
