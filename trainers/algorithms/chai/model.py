"""CHAI (Verma, Fu, Yang, Levine 2022, arXiv 2204.08426), one of the ILQL paper's baselines: utterance-level double
Q over a frozen language model. Twin Q heads read the frozen LM's hidden state at each utterance's ``[EOA]``
(``trainers.algorithms.utterance_ilql.losses`` finds the positions); one step minimises

    sum_i (Q_i(s_k, a_k) - [r_k + gamma * (1 - done_k) * max_{j <= K} Q^target(s_{k+1}, a'_j)])^2

where ``a'_1 .. a'_K`` are utterances sampled from the frozen LM at the next state (``sample_utterances``) and
``Q^target = min`` of the target heads (Polyak copies). Only the heads train. The agent samples ``samples``
utterances from the LM and says the highest-Q one (``trainers.algorithms.utterance_ilql.policy.BestOfSamplesPolicy``,
which ``load_policy`` returns). Sampling draws from torch's generator, whose state the checkpoint keeps, so a
resumed run samples what a straight one does. Defaults and their sources: ``trainers.algorithms.chai.config``.
"""

from __future__ import annotations

import torch
from torch import nn

from trainers.algorithms.chai.config import ChaiConfig
from trainers.algorithms.chai.losses import best_of_samples, place_at
from trainers.algorithms.ilql.losses import polyak_update, q_loss
from trainers.algorithms.utterance_ilql.losses import utterance_positions, utterance_q_targets
from trainers.algorithms.utterance_ilql.model import UtteranceHeads, hidden_after
from trainers.core.decoding import next_token_logits, sample_tokens
from trainers.core.model import action_targets, language_model_for
from trainers.core.objective import LossOutput, masked_mean
from trainers.core.padding import left_pad


@torch.no_grad()
def sample_utterances(lm: nn.Module, tokenizer, prompts: list[list[int]], k: int, max_tokens: int
                      ) -> tuple[list[list[int]], torch.Tensor]:
    """``k`` utterances (token ids, without their ``[EOA]``) sampled from ``lm`` after each prompt, prompt-major (rows
    ``i * k .. i * k + k - 1`` belong to prompt ``i``), and the LM's last hidden state after each
    ``prompt + utterance + [EOA]`` (``[len(prompts) * k, n_embd]``, what the utterance heads read; equal to
    ``trainers.algorithms.utterance_ilql.model.hidden_after`` of those rows). An utterance ends at ``[EOA]`` or
    ``[EOS]`` or after ``max_tokens``; padding, ``[BOS]`` and ``[EOO]`` are never sampled. Draws from torch's global
    generator. Each prompt is run through the LM once: its cache is repeated for the ``k`` samples and again for
    reading their ``[EOA]`` states, which then cost only the utterances' own tokens."""
    import copy

    from transformers import DynamicCache

    # left-padded: every prompt ends in the last column
    ids, mask = left_pad(prompts, max(len(prompt) for prompt in prompts), tokenizer.pad_id)
    cache = DynamicCache()
    logits = next_token_logits(lm, None, ids, mask, 0.0, past_key_values=cache).repeat_interleave(k, dim=0)
    reading = copy.deepcopy(cache)
    for each in (cache, reading):
        each.batch_repeat_interleave(k)
    prompt_mask = mask = mask.repeat_interleave(k, dim=0)
    rows = len(prompts) * k
    banned = torch.tensor([tokenizer.pad_id, tokenizer.bos_id, tokenizer.eoo_id])
    stop = torch.tensor([tokenizer.eoa_id, tokenizer.eos_id])
    out: list[list[int]] = [[] for _ in range(rows)]
    active = torch.arange(rows)  # the rows still sampling, in order; the cache, mask and logits hold only these
    for step in range(max_tokens):
        logits[:, banned] = float("-inf")
        tokens = sample_tokens(logits, torch.rand(rows)[active])  # a draw for every row, finished or not
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
    return out, hidden_after(lm, [u + [tokenizer.eoa_id] for u in out], tokenizer.pad_id, reading, prompt_mask)


class ChaiModel(nn.Module):
    """A frozen LM plus trainable utterance-level twin Q heads; ``forward(batch)`` is CHAI's TD loss."""

    def __init__(self, config: ChaiConfig, tokenizer):
        super().__init__()
        self.config = config
        self.tokenizer = tokenizer
        self.lm = language_model_for(config.model, tokenizer).requires_grad_(False).eval()
        #: named as utterance ILQL's, so that its agent (``BestOfSamplesPolicy``) plays this model too.
        self.utterance_heads = UtteranceHeads(self.lm.config.n_embd, with_value=False)

    def train(self, mode: bool = True) -> "ChaiModel":
        """``nn.Module.train`` for the heads; the frozen LM stays in eval mode."""
        super().train(mode)
        self.lm.eval()
        return self

    def sampled_target_q(self, prompts: list[list[int]]) -> torch.Tensor:
        """``[len(prompts), target_samples]``: the target Q of utterances sampled from the LM after each prompt."""
        c = self.config
        _, hidden = sample_utterances(self.lm, self.tokenizer, prompts, c.target_samples, c.max_utterance_tokens)
        with torch.no_grad():
            q = self.utterance_heads.target_q(hidden)
        return q.view(len(prompts), c.target_samples)

    def forward(self, batch: dict[str, torch.Tensor]) -> LossOutput:
        """Both Q heads' squared TD error towards the best of the sampled next utterances (mean over utterances)."""
        with torch.no_grad():
            hidden = self.lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                             output_hidden_states=True).hidden_states[-1]
        q1, q2, _ = self.utterance_heads(hidden)
        ends, states = utterance_positions(batch)
        after = states & (ends.long().cumsum(1) > 0)  # the next states: a state with an utterance before it
        rows, cols = after.nonzero(as_tuple=True)
        prompts = [batch["input_ids"][r, :c + 1].tolist() for r, c in zip(rows.tolist(), cols.tolist())]
        values = best_of_samples(self.sampled_target_q(prompts)) if prompts else hidden.new_zeros(0)
        next_values = place_at(values.to(hidden.dtype), after)
        targets, valid = utterance_q_targets(batch["rewards"].float(), batch["dones"].bool(), next_values, ends,
                                             after, self.config.gamma)
        loss = q_loss(q1, targets, valid) + q_loss(q2, targets, valid)
        _, mask = action_targets(batch)
        metrics = {"q_loss": loss.detach(), "q_mean": masked_mean(q1.detach(), valid),
                   "next_value_mean": values.mean().detach() if len(values) else hidden.new_zeros(())}
        return LossOutput(loss, mask.sum(), metrics)

    def after_optimizer_step(self) -> None:
        """Moves the target Q heads towards the trained ones by ``alpha`` (Polyak averaging)."""
        polyak_update(self.utterance_heads.target_q1, self.utterance_heads.q1, self.config.alpha)
        polyak_update(self.utterance_heads.target_q2, self.utterance_heads.q2, self.config.alpha)


__all__ = ["sample_utterances", "ChaiModel"]
