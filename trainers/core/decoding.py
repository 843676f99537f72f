"""The decoding rule of the language-model agents: logits for the next token, the constraint to valid actions,
and seeded sampling.

``next_token_logits`` is the rule in one function: the LM's (behaviour-cloned) logits, plus ILQL's
``beta * (Q - V)`` (``perturbed_logits``) from the value heads (``min`` of the Q heads ``ValueHeads.acting_q``
names: the target ones by default, the live ones with ``decode_with="live"``; the V head) on the last hidden
state when heads are given and ``beta != 0``, capped at ``adv_clip`` when one is given (the ILQL code's
``adv_clip``: its Wordle setting plays ``logits + min(beta * (Q - V), 0)``). ``sample_tokens`` then divides by ``temperature`` (or takes the
arg-max with ``greedy``), drawing with uniforms the caller supplies; ``stream_seed`` derives the seed of game ``s``
at turn ``t`` from ``(s, t)`` alone, so a seeded game samples the same actions alone or in a batch.

Constrained decoding: a ``PrefixConstraint`` (a trie over the token ids of the allowed actions, e.g. the Wordle
guess list) sets to ``-inf`` every token that does not continue an allowed action, and allows ``[EOA]`` only
after a complete one, so every generated action is valid. It applies identically to every agent, so comparisons
between BC, %BC and ILQL are fair.

``positions_from_mask`` gives left-padded rows the position ids of their unpadded selves. The playing agent built
on all this is ``trainers.core.policy.LanguageModelPolicy``; any sampler of actions uses the same pieces.
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from rlds_lang.char_tokenizer import CharTokenizer
from trainers.core.model import ValueHeads


def positions_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids that count only attended tokens, so a left-padded row is positioned as if unpadded.

    >>> positions_from_mask(torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])).tolist()
    [[0, 0, 0, 1], [0, 1, 2, 3]]
    """
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def _last_logits_and_hidden(lm: nn.Module, want_hidden: bool, **inputs: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The logits (float32) and last-layer hidden state at each row's last position.

    A ``transformers`` LM with a separate base model and output embeddings (GPT-2's ``transformer`` and
    ``lm_head``) is run as the two, which is what its ``forward`` computes, with the head applied to the last
    position only. This also avoids ``output_hidden_states``, which in transformers 5 installs forward hooks
    that make the model unpicklable. Other modules are called with ``output_hidden_states``.
    """
    base, head = getattr(lm, "base_model", None), getattr(lm, "get_output_embeddings", None)
    if base is not None and base is not lm and callable(head) and head() is not None:
        hidden = base(**inputs).last_hidden_state[:, -1, :]
        return head()(hidden).float(), hidden
    out = lm(**inputs, output_hidden_states=want_hidden)
    return out.logits[:, -1, :].float(), (out.hidden_states[-1][:, -1, :] if want_hidden else None)


def next_token_logits(lm: nn.Module, heads: ValueHeads | None, input_ids: torch.Tensor,
                      attention_mask: torch.Tensor, beta: float, position_ids: torch.Tensor | None = None,
                      past_key_values: Any = None, adv_clip: float | None = None) -> torch.Tensor:
    """The agent's logits for the token after the last position of each row: ``[batch, vocab]`` float32.

    The decoding rule in one place: the LM's logits (the BC policy), plus ``beta * (min(Q1, Q2) - V)`` of
    ``heads`` (their target or live Q heads, as ``heads.decode_with`` says: ``ValueHeads.acting_q``) on the LM's last hidden state when ``heads`` is given and ``beta != 0``
    (``perturbed_logits``, the perturbation capped at ``adv_clip`` unless it is None). ``attention_mask`` covers the
    cached past and
    ``input_ids``; ``position_ids`` default to ``positions_from_mask`` (exact under left padding).
    A ``transformers`` cache passed as ``past_key_values`` is extended in place with ``input_ids``.

    >>> from trainers.core.model import ModelConfig, build_language_model
    >>> lm = build_language_model(ModelConfig(n_layer=1, n_embd=16, n_head=2), 10, pad_id=0)
    >>> next_token_logits(lm, None, torch.tensor([[1, 5, 6]]), torch.ones(1, 3, dtype=torch.long), 0.0).shape
    torch.Size([1, 10])
    """
    if position_ids is None:
        position_ids = positions_from_mask(attention_mask)[:, -input_ids.shape[1]:]
    perturb = heads is not None and beta != 0
    logits, hidden = _last_logits_and_hidden(lm, perturb, input_ids=input_ids, attention_mask=attention_mask,
                                             position_ids=position_ids, past_key_values=past_key_values,
                                             use_cache=past_key_values is not None)
    if not perturb:
        return logits
    q = heads.acting_q(hidden).float()
    v = heads.v(hidden).squeeze(-1).float()
    return perturbed_logits(logits, q, v, beta, adv_clip)


class PrefixConstraint:
    """A trie over the token ids of ``actions``: which tokens may come next given the tokens so far.

    Node 0 is the empty prefix. ``allowed_mask(nodes)`` gives, for each row's node, the tokens that extend
    an allowed action, plus ``end_id`` (``[EOA]``) exactly at nodes that complete one; ``advance`` walks one
    token; ``action_at`` names the action a completed node spells. Tables are dense (nodes x vocab), about
    30,000 x 38 for Wordle's 12,972 guesses.

    >>> from rlds_lang.tokenizers import CharTokenizer
    >>> tok = CharTokenizer("abc")
    >>> trie = PrefixConstraint(["ab", "ac", "b"], tok)
    >>> tok.decode(trie.allowed_next("a")), trie.allowed_next("b") == [tok.eoa_id], trie.allowed_next("c")
    ('bc', True, [])
    """

    def __init__(self, actions: Sequence[str], tokenizer: CharTokenizer, vocab_size: int | None = None,
                 end_id: int | None = None):
        self.tokenizer = tokenizer
        self.vocab_size = int(vocab_size if vocab_size is not None else tokenizer.vocab_size)
        self.end_id = int(end_id if end_id is not None else tokenizer.eoa_id)
        if not len(actions):
            raise ValueError("PrefixConstraint: allowed_actions is empty")
        children: list[dict[int, int]] = [{}]
        completes: dict[int, str] = {}
        depth = 0
        for index, action in enumerate(actions):
            if not isinstance(action, str) or not action:
                raise ValueError(f"PrefixConstraint: allowed_actions[{index}] must be a non-empty str, got {action!r}")
            try:
                ids = tokenizer.encode(action, strict=True)
            except ValueError as error:
                raise ValueError(f"PrefixConstraint: allowed_actions[{index}] = {action!r}: {error}") from None
            node = 0
            for token in ids:
                if not 0 <= token < self.vocab_size or token == self.end_id:
                    raise ValueError(f"PrefixConstraint: allowed_actions[{index}] = {action!r} has token {token}, "
                                     f"outside [0, {self.vocab_size}) or the end token")
                nxt = children[node].get(token)
                if nxt is None:
                    nxt = children[node][token] = len(children)
                    children.append({})
                node = nxt
            completes.setdefault(node, action)
            depth = max(depth, len(ids))
        table = np.full((len(children), self.vocab_size), -1, dtype=np.int64)
        for node, kids in enumerate(children):
            for token, child in kids.items():
                table[node, token] = child
        allowed = table >= 0
        allowed[list(completes), self.end_id] = True
        self.next_node = torch.from_numpy(table)
        self.allowed = torch.from_numpy(allowed)
        self._completes = completes
        #: tokens of the longest action plus the end token: the most steps a constrained decode takes.
        self.max_steps = depth + 1
        self.num_actions = len(actions)
        self.sha256 = hashlib.sha256("\n".join(actions).encode("utf-8")).hexdigest()

    @property
    def num_nodes(self) -> int:
        """Number of trie nodes (distinct prefixes, the empty one included)."""
        return int(self.next_node.shape[0])

    def to(self, device: str | torch.device) -> "PrefixConstraint":
        """Moves the tables to ``device`` (in place) and returns ``self``."""
        self.next_node = self.next_node.to(device)
        self.allowed = self.allowed.to(device)
        return self

    def node_of(self, prefix: str) -> int | None:
        """The node of a text prefix, or None when no allowed action starts with it."""
        node = 0
        for token in self.tokenizer.encode(prefix, strict=False):
            node = int(self.next_node[node, token]) if 0 <= token < self.vocab_size else -1
            if node < 0:
                return None
        return node

    def allowed_next(self, prefix: str) -> list[int]:
        """The token ids allowed after the characters ``prefix`` (``[]`` if no action starts with it)."""
        node = self.node_of(prefix)
        return [] if node is None else torch.nonzero(self.allowed[node]).flatten().tolist()

    def allowed_mask(self, nodes: torch.Tensor) -> torch.Tensor:
        """``[batch, vocab]`` bool: the tokens allowed at each row's node."""
        return self.allowed[nodes]

    def mask_logits(self, logits: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
        """``logits`` with every token not allowed at the row's node set to ``-inf``."""
        return logits.masked_fill(~self.allowed_mask(nodes), float("-inf"))

    def advance(self, nodes: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Each row's node after its token (``-1`` if the token leaves the trie, e.g. the end token)."""
        return self.next_node[nodes, tokens]

    def action_at(self, node: int) -> str | None:
        """The allowed action whose tokens lead to ``node``, or None if the node completes none."""
        return self._completes.get(int(node))


def stream_seed(seed: int, turn: int) -> int:
    """A well-mixed 63-bit seed for the sampling of a game seeded ``seed`` at turn ``turn``."""
    return int(np.random.SeedSequence([int(seed) % 2**32, int(turn)]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def sample_tokens(logits: torch.Tensor, uniforms: torch.Tensor, temperature: float = 1.0,
                  greedy: bool = False) -> torch.Tensor:
    """One token per row of ``logits`` by inverse-CDF sampling of ``softmax(logits / temperature)``.

    ``uniforms`` (``[batch]``, in ``[0, 1)``) supply the randomness, so each row can draw from its own
    generator; a token with probability 0 (logit ``-inf``) is never drawn. ``greedy`` takes the arg-max.

    >>> sample_tokens(torch.tensor([[0.0, float("-inf"), 0.0]]), torch.tensor([0.3])).tolist()
    [2]
    """
    if greedy:
        return logits.argmax(-1)
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    cdf = probs.cumsum(-1)
    target = (1.0 - uniforms.double().to(cdf.device)) * cdf[:, -1]  # in (0, total]: never lands on a zero-width bin
    index = (cdf < target.unsqueeze(-1)).sum(-1)
    return index.clamp(max=logits.shape[-1] - 1)


def perturbed_logits(logits: torch.Tensor, q: torch.Tensor, v: torch.Tensor, beta: float,
                     adv_clip: float | None = None) -> torch.Tensor:
    """ILQL's decoding rule: the BC policy's logits plus ``beta * (Q(s, .) - V(s))`` for every token, that
    perturbation capped at ``adv_clip`` when it is not None (the ILQL code clips ``adv_weight * (Q - V)`` from above,
    ``src/models/iql_model.py:908-909``; its Wordle setting's ``adv_clip: 0.0`` only lowers the tokens whose advantage
    is negative, ``config/wordle/eval_policy.yaml:57``).

    ``beta = 0`` samples the behaviour policy; larger ``beta`` follows the learned advantage more greedily.

    >>> perturbed_logits(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 3.0]), torch.tensor(2.0), 2.0)
    tensor([-2.,  2.])
    >>> perturbed_logits(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 3.0]), torch.tensor(2.0), 2.0, adv_clip=0.0)
    tensor([-2.,  0.])
    """
    advantage = beta * (q - v.unsqueeze(-1) if v.dim() == q.dim() - 1 else q - v)
    if adv_clip is not None:
        advantage = advantage.clamp(max=adv_clip)
    return logits + advantage


__all__ = ["PrefixConstraint", "next_token_logits", "perturbed_logits", "positions_from_mask", "sample_tokens",
           "stream_seed"]
