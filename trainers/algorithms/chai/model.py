"""CHAI (Verma, Fu, Yang, Levine 2022, arXiv 2204.08426), one of the ILQL paper's baselines: utterance-level double
Q over a frozen language model. The state CHAI's heads read is, as the ILQL code's ``ChaiModel`` computes it, the
running mean of the frozen LM's last hidden states over the whole sequence so far (``running_mean``; its
``torch.cumsum(raw_h_states, dim=1) / (position + 1)``, src/models/chai_model.py:113), read at each utterance's
``[EOA]``. Twin Q heads on it; one step minimises

    sum_i (Q_i(s_k, a_k) - [r_k + gamma * (1 - done_k) * max_{j <= K} Q^target(s_{k+1}, a'_j)])^2
  + cql_weight * sum_i [logsumexp_j((Q_i(s_k, a^s_j) - log p(a^s_j), Q_i(e_j) + log(2 h)) / 2K) - Q_i(s_k, a_k)]

where ``a'_1 .. a'_K`` are utterances sampled from the frozen LM at the next state, ``a^s_j`` the K sampled at the
utterance's own state (with ``log p`` their log-probability under the LM), ``e_j`` K random embeddings uniform in
``[-1, 1]^h`` (their "log-probability" ``-log(2 h)``), and ``Q^target = min`` of the target heads (Polyak copies):
the conservative term of the ILQL code's ``get_cql_loss`` (src/models/chai_model.py:252-260), weight 0.1. The next
state is the one every bootstrapping trainer here uses (``trainers.algorithms.ilql.losses.transitions``); the ILQL
code's CHAI bootstraps 0 after a sequence's last utterance whether or not it is terminal (its samples are drawn at
the action states only, padded with 0, ``produce_samples``). Only the heads train. The agent samples ``samples``
utterances from the LM and says the highest-Q one (``trainers.algorithms.utterance_ilql.policy.BestOfSamplesPolicy``,
which ``load_policy`` returns, reading the running mean too: ``candidate_states``). Sampling and the random
embeddings draw from torch's generator, whose state the checkpoint keeps, so a resumed run samples what a straight
one does. Defaults and their sources: ``trainers.algorithms.chai.config``.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from trainers.algorithms.chai.config import ChaiConfig
from trainers.algorithms.chai.losses import best_of_samples, place_at
from trainers.algorithms.ilql.losses import q_loss, transitions
from trainers.algorithms.utterance_ilql.losses import utterance_positions, utterance_q_targets
from trainers.algorithms.utterance_ilql.model import UtteranceHeads, rows_hidden
from trainers.core.decoding import next_token_logits, sample_tokens
from trainers.core.device import module_device
from trainers.core.model import action_targets, hidden_size, language_model_for
from trainers.core.objective import LossOutput, masked_mean
from trainers.core.padding import left_pad


def running_mean(hidden: torch.Tensor) -> torch.Tensor:
    """The mean of ``hidden`` (``[batch, time, n_embd]``) over positions ``0..t`` at each ``t``: CHAI's state.

    >>> running_mean(torch.tensor([[[1.0], [3.0], [8.0]]])).flatten().tolist()
    [1.0, 2.0, 4.0]
    """
    counts = torch.arange(1, hidden.shape[1] + 1, device=hidden.device, dtype=hidden.dtype)
    return hidden.cumsum(1) / counts[None, :, None]


@dataclasses.dataclass
class SampledUtterances:
    """``k`` utterances sampled after each prompt, prompt-major (rows ``i * k .. i * k + k - 1`` belong to prompt
    ``i``; ``sample_utterances``)."""

    #: each utterance's token ids, without its ``[EOA]``.
    tokens: list[list[int]]
    #: ``[rows, n_embd]``: the LM's last hidden state after ``prompt + utterance + [EOA]``.
    last: torch.Tensor
    #: ``[rows, n_embd]``: the sum of the LM's last hidden states over ``utterance + [EOA]`` (not the prompt).
    sums: torch.Tensor
    #: ``[rows]``: the tokens of ``utterance + [EOA]``.
    lengths: torch.Tensor
    #: ``[rows]``: each utterance's log-probability under the LM's sampling distribution (its stop token included).
    log_probs: torch.Tensor


@torch.no_grad()
def sample_utterances(lm: nn.Module, tokenizer, prompts: list[list[int]], k: int, max_tokens: int) -> SampledUtterances:
    """``k`` utterances sampled from ``lm`` after each prompt (``SampledUtterances``), with the LM's hidden states over
    each ``prompt + utterance + [EOA]`` (what the utterance heads read; the last one equal to
    ``trainers.algorithms.utterance_ilql.model.hidden_after`` of those rows). An utterance ends at ``[EOA]`` or
    ``[EOS]`` or after ``max_tokens``; padding, ``[BOS]`` and ``[EOO]`` are never sampled. Draws from torch's global
    generator. Each prompt is run through the LM once: its cache is repeated for the ``k`` samples and again for
    reading their states, which then cost only the utterances' own tokens."""
    import copy

    from transformers import DynamicCache

    device = module_device(lm)
    # left-padded: every prompt ends in the last column
    ids, mask = left_pad(prompts, max(len(prompt) for prompt in prompts), tokenizer.pad_id)
    ids, mask = ids.to(device), mask.to(device)
    cache = DynamicCache()
    logits = next_token_logits(lm, None, ids, mask, 0.0, past_key_values=cache).repeat_interleave(k, dim=0)
    reading = copy.deepcopy(cache)
    for each in (cache, reading):
        each.batch_repeat_interleave(k)
    prompt_mask = mask = mask.repeat_interleave(k, dim=0)
    rows = len(prompts) * k
    banned = torch.tensor([tokenizer.pad_id, tokenizer.bos_id, tokenizer.eoo_id], device=device)
    stop = torch.tensor([tokenizer.eoa_id, tokenizer.eos_id], device=device)
    out: list[list[int]] = [[] for _ in range(rows)]
    log_probs = torch.zeros(rows, device=device)
    # the rows still sampling, in order; the cache, mask and logits hold only these
    active = torch.arange(rows, device=device)
    for step in range(max_tokens):
        logits[:, banned] = float("-inf")
        # a draw for every row, finished or not, from the CPU generator (the same draws on every device)
        tokens = sample_tokens(logits, torch.rand(rows, device="cpu").to(device)[active])
        log_probs[active] += torch.log_softmax(logits.double(), -1).gather(1, tokens[:, None]).squeeze(1).float()
        going = ~torch.isin(tokens, stop)
        for i, token in zip(active[going].tolist(), tokens[going].tolist()):
            out[i].append(int(token))
        if not bool(going.any()) or step + 1 == max_tokens:
            break
        if not bool(going.all()):
            cache.batch_select_indices(going.nonzero().flatten())
            active, tokens, mask = active[going], tokens[going], mask[going]
        mask = torch.cat([mask, mask.new_ones(len(active), 1)], dim=1)
        logits = next_token_logits(lm, None, tokens.unsqueeze(1), mask, 0.0, past_key_values=cache)
    hidden, row_mask = rows_hidden(lm, [u + [tokenizer.eoa_id] for u in out], tokenizer.pad_id, reading, prompt_mask)
    lengths = row_mask.sum(1)
    sums = (hidden * row_mask.unsqueeze(-1).to(hidden.dtype)).sum(1)
    return SampledUtterances(out, hidden[torch.arange(rows, device=device), lengths - 1], sums, lengths, log_probs)


def conservative_term(q_data: torch.Tensor, q_sampled: torch.Tensor, log_probs: torch.Tensor,
                      q_random: torch.Tensor, random_log_prob: float) -> torch.Tensor:
    """One head's conservative term at each utterance (the ILQL code's CHAI ``get_cql_loss``):
    ``logsumexp(cat(q_sampled - log_probs, q_random - random_log_prob) / 2K) - q_data``, ``[utterances]``.

    Args:
      q_data: ``[n]``, Q of the data's utterance; q_sampled, log_probs: ``[n, K]``, Q and log-probability of the
      utterances sampled at the same state; q_random: ``[n, K]``, Q of random embeddings of log-probability
      ``random_log_prob``.

    >>> float(conservative_term(torch.tensor([0.0]), torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1), 0.0))
    0.6931471824645996
    """
    k = q_sampled.shape[-1]
    scores = torch.cat([q_sampled - log_probs, q_random - random_log_prob], dim=-1) / (2 * k)
    return torch.logsumexp(scores, dim=-1) - q_data


class ChaiModel(nn.Module):
    """A frozen LM plus trainable utterance-level twin Q heads; ``forward(batch)`` is CHAI's loss."""

    def __init__(self, config: ChaiConfig, tokenizer):
        super().__init__()
        self.config = config
        self.tokenizer = tokenizer
        #: the tokenizer's ``[EOO]`` and ``[EOA]`` ids: where the next states are (``transitions``).
        self.separators = (tokenizer.eoo_id, tokenizer.eoa_id)
        self.lm = language_model_for(config.model, tokenizer).requires_grad_(False).eval()
        #: named as utterance ILQL's, so that its agent (``BestOfSamplesPolicy``) plays this model too.
        self.utterance_heads = UtteranceHeads(hidden_size(self.lm), with_value=False)

    def train(self, mode: bool = True) -> "ChaiModel":
        """``nn.Module.train`` for the heads; the frozen LM stays in eval mode."""
        super().train(mode)
        self.lm.eval()
        return self

    def sample_states(self, prompts: list[list[int]], prompt_sums: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``([len(prompts), K, n_embd], [len(prompts), K])``: the states (running means over ``prompt + utterance +
        [EOA]``; ``prompt_sums`` the sum of the prompts' hidden states) of ``target_samples`` utterances sampled from
        the LM after each prompt, and their log-probabilities."""
        c = self.config
        sampled = sample_utterances(self.lm, self.tokenizer, prompts, c.target_samples, c.max_utterance_tokens)
        prompt_lengths = torch.tensor([len(p) for p in prompts], device=prompt_sums.device)
        prompt_lengths = prompt_lengths.repeat_interleave(c.target_samples)
        sums = prompt_sums.repeat_interleave(c.target_samples, dim=0) + sampled.sums
        states = sums / (prompt_lengths + sampled.lengths).unsqueeze(-1).to(sums.dtype)
        return (states.view(len(prompts), c.target_samples, -1),
                sampled.log_probs.view(len(prompts), c.target_samples).to(states.dtype))

    def forward(self, batch: dict[str, torch.Tensor]) -> LossOutput:
        """Both Q heads' squared TD error towards the best of the sampled next utterances, plus the conservative
        term (mean over utterances)."""
        c = self.config
        with torch.no_grad():
            hidden = self.lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                             output_hidden_states=True).hidden_states[-1]
            states = running_mean(hidden)
        q1, q2, _ = self.utterance_heads(states)
        ends, starts = utterance_positions(batch)
        steps = transitions(batch, *self.separators, outputs=False)
        # sample at every utterance's own state (the conservative term) and at every next state a target needs
        sample_at = starts.clone()
        needs_next = ends & steps.has_next & ~steps.dones
        sample_at[needs_next.nonzero(as_tuple=True)[0], steps.next_state[needs_next]] = True
        rows, cols = sample_at.nonzero(as_tuple=True)
        prompts = [batch["input_ids"][r, :col + 1].tolist() for r, col in zip(rows.tolist(), cols.tolist())]
        if prompts:
            sampled, log_probs = self.sample_states(prompts, hidden.cumsum(1)[rows, cols])
        else:
            sampled = states.new_zeros(0, c.target_samples, states.shape[-1])
            log_probs = states.new_zeros(0, c.target_samples)
        with torch.no_grad():
            best = best_of_samples(self.utterance_heads.target_q(sampled)) if prompts else states.new_zeros(0)
        targets, valid = utterance_q_targets(steps, place_at(best.to(states.dtype), sample_at), ends, c.gamma)
        losses = {"q_loss": q_loss(q1, targets, valid) + q_loss(q2, targets, valid)}
        # each utterance's own state: the last sampled position at or before its [EOA]
        device = sample_at.device
        slot = torch.full(sample_at.shape, -1, dtype=torch.long, device=device)
        slot[rows, cols] = torch.arange(len(rows), device=device)
        positions = torch.arange(sample_at.shape[1], device=device).expand_as(sample_at)
        own_state = torch.where(starts, positions, torch.full_like(positions, -1)).cummax(1).values
        end_rows, end_cols = ends.nonzero(as_tuple=True)
        own = slot[end_rows, own_state[end_rows, end_cols]]
        random_states = 2 * torch.rand(len(own), c.target_samples, states.shape[-1], dtype=states.dtype,
                                       device=device) - 1
        random_log_prob = -math.log(2 * states.shape[-1])
        cql = states.new_zeros(())
        if len(own):
            for head, q in ((self.utterance_heads.q1, q1), (self.utterance_heads.q2, q2)):
                cql = cql + conservative_term(q[end_rows, end_cols], head(sampled[own]).squeeze(-1), log_probs[own],
                                              head(random_states).squeeze(-1), random_log_prob).mean()
        losses["cql_loss"] = cql
        _, mask = action_targets(batch)
        total = losses["q_loss"] + c.cql_weight * losses["cql_loss"]
        metrics = {k: v.detach() for k, v in losses.items()}
        metrics.update(q_mean=masked_mean(q1.detach(), valid),
                       sampled_value_mean=best.mean().detach() if len(best) else states.new_zeros(()))
        return LossOutput(total, mask.sum(), metrics)

    @torch.no_grad()
    def candidate_states(self, rows: list[list[int]], pad_id: int) -> torch.Tensor:
        """What the utterance heads read after each row (a prompt, a candidate utterance and its ``[EOA]``): the
        running mean of the LM's hidden states over the row, ``[rows, n_embd]``."""
        hidden, mask = rows_hidden(self.lm, rows, pad_id)
        lengths = mask.sum(1)
        return (hidden * mask.unsqueeze(-1).to(hidden.dtype)).sum(1) / lengths.unsqueeze(-1).to(hidden.dtype)

    def after_optimizer_step(self) -> None:
        """Moves the target Q heads towards the trained ones by ``alpha`` (Polyak averaging)."""
        self.utterance_heads.update_targets(self.config.alpha)


__all__ = ["running_mean", "SampledUtterances", "sample_utterances", "conservative_term", "ChaiModel"]
