"""PPO's model side: the policy with its value head, fixed-length sampling, and log-probs/values of responses.

Sequences are ``query + response``: the query (the agent's episode prompt ``[BOS] o_0 [EOO] a_0 [EOA] ...
o_t [EOO]``, ``trainers.core.policy``) left-padded to ``query_length`` with the pad token (longer prompts keep
their last ``query_length`` tokens), then ``response_length`` sampled tokens. Position ids count only
attended tokens (``trainers.core.decoding.positions_from_mask``), so a padded query generates and scores exactly
as the unpadded one. The value head and the policy read the concatenation: the value and the log-prob of
response token ``t`` are read at position ``query_length - 1 + t`` (the state before that token).

With ``constraint`` (a ``trainers.core.decoding.PrefixConstraint`` over an environment's valid actions, e.g. the
Wordle guess list) every token up to the row's first end token (``[EOA]``) is restricted to continuations
of an allowed action; later tokens are unconstrained (they are truncated away). ``allowed_tokens``
recomputes the same masks from sampled responses, so the loss and the KL use the distribution the tokens
were drawn from.

Example::

    model = PolicyWithValue(lm)                       # lm from trainers.core.model.build_language_model
    q, qm = left_pad([[1, 9, 3]], 8, pad_id=0)       # trainers.core.padding.left_pad
    responses = generate(model.lm, q, qm, length=6, temperature=0.7, uniforms=torch.rand(1, 6))
    out = score_responses(model, q, qm, responses, temperature=0.7)
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Sequence

import torch
from torch import nn

from trainers.algorithms.ppo.config import PPOConfig
from trainers.algorithms.ppo.losses import (
    entropy_from_logits,
    response_logits,
    token_logprobs,
)
from trainers.core.model import hidden_size, language_model_for
from trainers.core.decoding import PrefixConstraint, positions_from_mask, sample_tokens


def disable_dropout(module: nn.Module) -> nn.Module:
    """Sets every ``nn.Dropout`` of ``module`` to ``p = 0`` (the recipe trains policy and reference without
    dropout: with it, the log-probs of the rollout and of the loss differ even before any update)."""
    for sub in module.modules():
        if isinstance(sub, nn.Dropout):
            sub.p = 0.0
    return module


class PolicyWithValue(nn.Module):
    """A causal LM (the policy) with a scalar value head on its last hidden states.

    ``zero_init_value`` initialises the head's weights and bias to 0 (the recipe's ``value`` head init), so
    the first advantages are the rewards themselves rather than noise from a random head.
    """

    def __init__(self, lm: nn.Module, zero_init_value: bool = True):
        super().__init__()
        self.lm = disable_dropout(lm)
        hidden = hidden_size(lm)
        self.value_head = nn.Linear(hidden, 1)
        if zero_init_value:
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits [batch, time, vocab], values [batch, time])`` of the sequences, positions from the mask."""
        hidden = self.lm.base_model(input_ids=input_ids, attention_mask=attention_mask,
                                    position_ids=positions_from_mask(attention_mask)).last_hidden_state
        return self.lm.get_output_embeddings()(hidden), self.value_head(hidden).squeeze(-1)


def frozen_reference(lm: nn.Module) -> nn.Module:
    """A frozen copy of ``lm`` (eval mode, no dropout, no gradients): the KL's reference policy."""
    return disable_dropout(copy.deepcopy(lm)).eval().requires_grad_(False)


def _constrained(constraint: PrefixConstraint, nodes: torch.Tensor) -> torch.Tensor:
    """``[batch, vocab]``: the trie's allowed tokens at each row's node; everything once a row left the trie."""
    allowed = constraint.allowed_mask(nodes.clamp(min=0))
    return allowed | (nodes < 0).unsqueeze(-1)


def _advance(constraint: PrefixConstraint, nodes: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    inside = nodes >= 0
    return torch.where(inside, constraint.advance(nodes.clamp(min=0), tokens), nodes)


def allowed_tokens(constraint: PrefixConstraint | None, responses: torch.Tensor) -> torch.Tensor | None:
    """``[batch, length, vocab]`` bool: the tokens ``generate`` allowed at each response position (None
    without a constraint)."""
    if constraint is None:
        return None
    nodes = torch.zeros(responses.shape[0], dtype=torch.long, device=responses.device)
    masks = []
    for t in range(responses.shape[1]):
        masks.append(_constrained(constraint, nodes))
        nodes = _advance(constraint, nodes, responses[:, t])
    return torch.stack(masks, 1)


@torch.no_grad()
def generate(lm: nn.Module, queries: torch.Tensor, query_mask: torch.Tensor, length: int, temperature: float,
             uniforms: torch.Tensor, constraint: PrefixConstraint | None = None) -> torch.Tensor:
    """Samples exactly ``length`` tokens per row (no early stop, no top-k/top-p) with the KV cache.

    Pure sampling from ``softmax(logits / temperature)`` (inverse CDF with the row's ``uniforms[:, t]``, so a
    row samples the same tokens alone or in any batch); returns ``[batch, length]`` token ids.
    """
    from transformers import DynamicCache  # heavy import: only when generating

    cache = DynamicCache()
    mask = query_mask.clone()
    input_ids = queries
    nodes = torch.zeros(queries.shape[0], dtype=torch.long, device=queries.device)
    out = []
    for t in range(length):
        positions = positions_from_mask(mask)[:, -input_ids.shape[1]:]
        logits = lm(input_ids=input_ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                    use_cache=True).logits[:, -1]
        allowed = _constrained(constraint, nodes) if constraint is not None else None
        tokens = sample_tokens(response_logits(logits, temperature, allowed), uniforms[:, t])
        if constraint is not None:
            nodes = _advance(constraint, nodes, tokens)
        out.append(tokens)
        input_ids = tokens.unsqueeze(1)
        mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], 1)
    return torch.stack(out, 1)


@dataclasses.dataclass
class ResponseScores:
    """Per response token (``[batch, length]``): log-prob under the tempered policy, value, entropy."""

    logprobs: torch.Tensor
    values: torch.Tensor
    entropy: torch.Tensor


def score_responses(model: nn.Module, queries: torch.Tensor, query_mask: torch.Tensor, responses: torch.Tensor,
                    temperature: float, constraint: PrefixConstraint | None = None) -> ResponseScores:
    """Log-probs (logits divided by ``temperature``, constrained like ``generate``), values and entropies of
    ``responses`` after ``queries``. ``model`` is a ``PolicyWithValue`` (DDP-wrapped or not) or a bare LM
    (values are then 0)."""
    input_ids = torch.cat([queries, responses], 1)
    attention_mask = torch.cat([query_mask, torch.ones_like(responses)], 1)
    start, end = queries.shape[1] - 1, input_ids.shape[1] - 1
    if isinstance(getattr(model, "module", model), PolicyWithValue):  # also under DistributedDataParallel
        logits, values = model(input_ids, attention_mask)
        values = values[:, start:end]
    else:
        logits = model(input_ids=input_ids, attention_mask=attention_mask,
                       position_ids=positions_from_mask(attention_mask)).logits
        values = torch.zeros(responses.shape, dtype=torch.float32, device=responses.device)
    logits = response_logits(logits[:, start:end], temperature, allowed_tokens(constraint, responses))
    return ResponseScores(token_logprobs(logits, responses), values.float(), entropy_from_logits(logits))


def ids_text(tokenizer: Any, ids: Sequence[int]) -> str:
    """The text of response ids up to (excluding) the first end token (``[EOA]``/``[EOS]``)."""
    kept = []
    for token in ids:
        if token in (tokenizer.eoa_id, tokenizer.eos_id):
            break
        kept.append(int(token))
    return tokenizer.decode(kept, skip_special=True)


class PPOModel(PolicyWithValue):
    """The trained module of a PPO checkpoint: the policy LM and its value head (``load_agent_model``)."""

    def __init__(self, config: PPOConfig, tokenizer: Any):
        super().__init__(language_model_for(config.model, tokenizer),
                         zero_init_value=config.zero_init_value)


__all__ = ["disable_dropout", "PolicyWithValue", "frozen_reference", "allowed_tokens", "generate", "ResponseScores", "score_responses", "ids_text", "PPOModel"]
