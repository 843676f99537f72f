"""Language-model agents: a causal LM (BC, %BC or ILQL) playing a text environment as a ``Policy``.

``LanguageModelPolicy`` writes each action token by token after the tokenizer's episode prompt
``[BOS] o_0 [EOO] a_0 [EOA] ... o_t [EOO]`` and stops at ``[EOA]``. The decoding rule lives in one
function, ``next_token_logits``: the LM's (behaviour-cloned) logits, plus ILQL's ``beta * (Q - V)`` from
the value heads (``min`` of the target Q heads, the V head) on the last hidden state when heads are given
and ``beta != 0``. Sampling then divides by ``temperature`` (or takes the arg-max with ``greedy``).

Constrained decoding: with ``allowed_actions`` (e.g. the Wordle guess list) a ``PrefixConstraint`` (a trie
over the actions' token ids) sets to ``-inf`` every token that does not continue an allowed action, and
allows ``[EOA]`` only after a complete one, so every generated action is valid. It applies identically to
every agent, so comparisons between BC, %BC and ILQL are fair. Without it actions are free text of at most
``max_action_tokens`` tokens, ended by ``[EOA]`` (or ``[EOS]``), and may be invalid for the environment.

Batching: ``act_batch`` plays several games at once -- prompts are left-padded (with an attention mask
and position ids counted from each prompt's first real token, so padding changes nothing) and decoded in
parallel with the KV cache. ``TurnStates`` keeps each game's keys and values to the next call, so a turn
runs only its new tokens (``[EOA]``, the feedback, ``[EOO]``) instead of the whole game again. Randomness: given per-game ``seeds`` the uniform numbers of game ``s`` at turn
``t`` come from a generator seeded by ``(s, t)`` alone, so a seeded game samples the same actions whether it
is played alone (``act`` after ``reset(s)``) or inside any batch. Without seeds, one generator seeded by
``reset`` serves the whole batch in order.

Example::

    from rlds_lang.env import run_episode
    from rlds_lang.tokenizers import wordle_tokenizer
    from rlds_lang.wordle.env import WordleEnv
    from trainers.core.policy import LanguageModelPolicy
    from trainers.core.model import ModelConfig, build_language_model

    tok = wordle_tokenizer()
    lm = build_language_model(ModelConfig(n_layer=1, n_embd=32, n_head=2), tok.vocab_size, pad_id=tok.pad_id)
    env = WordleEnv()
    agent = LanguageModelPolicy(lm, tok, allowed_actions=env.guesses.words)
    print(run_episode(env, agent, seed=0).actions)     # five-letter words from the guess list
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from rlds_lang.char_tokenizer import CharTokenizer
from rlds_lang.env import Observation, as_text
from trainers.core.model import ValueHeads

History = tuple[Sequence[Observation | str], Sequence[str]]


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
                      past_key_values: Any = None) -> torch.Tensor:
    """The agent's logits for the token after the last position of each row: ``[batch, vocab]`` float32.

    The decoding rule in one place: the LM's logits (the BC policy), plus ``beta * (min(target Q1, target
    Q2) - V)`` of ``heads`` on the LM's last hidden state when ``heads`` is given and ``beta != 0``
    (``trainers.algorithms.ilql.losses.perturbed_logits``). ``attention_mask`` covers the cached past and
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
    q = heads.target_q(hidden).float()
    v = heads.v(hidden).squeeze(-1).float()
    return perturbed_logits(logits, q, v, beta)


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


GameStates = tuple[torch.Tensor, torch.Tensor]


class TurnStates:
    """Each game's keys and values from one ``act_batch`` call to the next, so a turn only runs its new tokens.

    After a call it holds, for every game whose action ended with a stop token, the keys and values
    (``[layers, heads, tokens, head_dim]`` each) of its prompt and action tokens, keyed by those token ids.
    The game's next prompt is that key + ``[EOA] o_t [EOO]``, so it is found by its prefix before the last
    ``[EOA]``. Only the last call's states are kept (memory stays one batch). Keys and values depend only
    on the token ids, their positions and the weights: ``clear`` them after changing the weights.

    >>> states = TurnStates(eoa_id=4)
    >>> states.split([1, 6, 3, 7, 7, 4, 6, 3])       # nothing stored yet: the whole prompt is new
    (None, [1, 6, 3, 7, 7, 4, 6, 3])
    """

    def __init__(self, eoa_id: int):
        self.eoa_id = eoa_id
        self.states: dict[tuple[int, ...], GameStates] = {}

    def clear(self) -> None:
        """Forgets every stored game."""
        self.states = {}

    def split(self, prompt: list[int]) -> tuple[GameStates | None, list[int]]:
        """``(stored states of the prompt's cached prefix, the tokens after it)``, or ``(None, prompt)``."""
        if self.eoa_id in prompt:
            cut = len(prompt) - 1 - prompt[::-1].index(self.eoa_id)
            past = self.states.get(tuple(prompt[:cut]))
            if past is not None:
                return past, prompt[cut:]
        return None, prompt

    @staticmethod
    def batch_cache(pasts: Sequence[GameStates | None], width: int) -> Any:
        """A ``transformers`` ``DynamicCache`` of the games' states, left-padded with zeros to ``width`` tokens."""
        from transformers import DynamicCache  # heavy import: only when generating

        known = [p for p in pasts if p is not None]
        if not known:
            return DynamicCache()
        layers, heads, _, head_dim = known[0][0].shape
        keys = known[0][0].new_zeros(layers, len(pasts), heads, width, head_dim)
        values = torch.zeros_like(keys)
        for row, past in enumerate(pasts):
            if past is not None:
                keys[:, row, :, width - past[0].shape[-2]:] = past[0]
                values[:, row, :, width - past[1].shape[-2]:] = past[1]
        return DynamicCache(ddp_cache_data=list(zip(keys.unbind(0), values.unbind(0))))

    def remember(self, cache: Any, keys: Sequence[list[int] | None], spans: Sequence[tuple[int, int, int, int]]) -> None:
        """Replaces the store with each game's states from the decoded batch's ``cache``.

        ``keys[row]`` are the row's prompt and action token ids (None: do not store), ``spans[row]`` the
        cache positions ``(past_start, past_end, new_start, new_end)`` of its stored past and of its new
        prompt + action tokens.
        """
        self.states = {}
        layers = getattr(cache, "layers", [])
        if not layers or cache.get_seq_length() == 0:  # a model that does not use the cache
            return
        all_keys = torch.stack([layer.keys for layer in layers])  # [layers, batch, heads, tokens, head_dim]
        all_values = torch.stack([layer.values for layer in layers])
        for row, (key, (a, b, c, d)) in enumerate(zip(keys, spans)):
            if key is not None:
                index = torch.tensor([*range(a, b), *range(c, d)], device=all_keys.device)
                self.states[tuple(key)] = (all_keys[:, row].index_select(-2, index),
                                           all_values[:, row].index_select(-2, index))


def observation_text(observation: Observation | str) -> str:
    """The text of an observation: its ``text`` field, or the observation itself when it is text."""
    if isinstance(observation, Mapping):
        if "text" not in observation:
            raise ValueError(f"observation has no 'text' field: keys {sorted(observation)}")
        return as_text(observation["text"], "observation['text']")
    return as_text(observation, "observation")


class LanguageModelPolicy:
    """Generates each action token by token from a causal LM over the tokenizer's episode layout.

    Satisfies ``rlds_lang.env.Policy``; ``act_batch`` plays many games with batched forward passes.

    Args:
      lm: a causal LM, e.g. ``trainers.core.model.build_language_model`` (any ``transformers`` causal LM with a
        base model and output embeddings, or a module returning ``.logits`` and, with
        ``output_hidden_states``, ``.hidden_states``). It is put in eval mode.
      tokenizer: the ``CharTokenizer`` the LM was trained with.
      heads: ILQL value heads; with ``beta != 0`` the logits are perturbed by ``beta * (Q - V)``.
      beta: ILQL's advantage weight (0 samples the BC policy).
      temperature: sampling temperature (> 0), applied after the perturbation.
      greedy: take the arg-max token instead of sampling.
      allowed_actions: if given, decoding is constrained to these actions (``PrefixConstraint``).
      max_action_tokens: longest free-text action (only without ``allowed_actions``).
      name: the agent's name in episode metadata and result tables.
      seed: initial seed (``reset`` changes it).
      device: where the model runs.
      reuse_states: keep each game's keys/values between calls (``TurnStates``) so that a turn runs only its
        new tokens; the actions are the same either way (up to float rounding). Call ``reset`` after
        changing the model's weights.
    """

    def __init__(self, lm: nn.Module, tokenizer: CharTokenizer, heads: ValueHeads | None = None, beta: float = 0.0,
                 temperature: float = 1.0, greedy: bool = False, allowed_actions: Sequence[str] | None = None,
                 max_action_tokens: int = 16, name: str = "lm", seed: int = 0, device: str | torch.device = "cpu",
                 reuse_states: bool = True):
        if not greedy and not temperature > 0:
            raise ValueError(f"LanguageModelPolicy: temperature must be > 0, got {temperature}")
        if not np.isfinite(beta):
            raise ValueError(f"LanguageModelPolicy: beta must be finite, got {beta}")
        if beta != 0 and heads is None:
            raise ValueError(f"LanguageModelPolicy: beta={beta} needs value heads (heads=None)")
        if max_action_tokens < 1:
            raise ValueError(f"LanguageModelPolicy: max_action_tokens must be >= 1, got {max_action_tokens}")
        self.device = torch.device(device)
        self.lm = lm.to(self.device).eval()
        self.heads = heads.to(self.device).eval() if heads is not None else None
        self.tokenizer = tokenizer
        self.beta = float(beta)
        self.temperature = float(temperature)
        self.greedy = bool(greedy)
        self.max_action_tokens = int(max_action_tokens)
        self.name = name
        config = getattr(lm, "config", None)
        self.vocab_size = int(getattr(config, "vocab_size", tokenizer.vocab_size))
        self.max_positions = getattr(config, "n_positions", None)
        self.constraint = (PrefixConstraint(allowed_actions, tokenizer, self.vocab_size).to(self.device)
                           if allowed_actions is not None else None)
        self.stop_ids = (tokenizer.eoa_id, tokenizer.eos_id)
        #: JSON-ready provenance merged into ``params()`` (e.g. the checkpoint path, algorithm and step).
        self.info: dict[str, Any] = {}
        self.turn_states = TurnStates(tokenizer.eoa_id) if reuse_states else None
        self.reset(seed)

    def reset(self, seed: int) -> None:
        """Seeds the next game (``act`` then samples from streams derived from ``(seed, turn)``); forgets stored states."""
        self.seed = int(seed)
        self._generator = torch.Generator().manual_seed(self.seed % 2**63)
        if self.turn_states is not None:
            self.turn_states.clear()

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        """The next action of the game seeded by the last ``reset``."""
        return self.act_batch([(observations, actions)], seeds=[self.seed])[0]

    def params(self) -> dict[str, Any]:
        """JSON-ready decoding parameters (with the size and hash of the allowed action list)."""
        params: dict[str, Any] = {"name": self.name, "beta": self.beta, "temperature": self.temperature,
                                  "greedy": self.greedy, "max_action_tokens": self.max_action_tokens,
                                  "value_heads": self.heads is not None,
                                  "num_parameters": sum(p.numel() for p in self.lm.parameters())}
        if self.constraint is not None:
            params["allowed_actions"] = self.constraint.num_actions
            params["allowed_actions_sha256"] = self.constraint.sha256
        return {**params, **self.info}

    def __repr__(self) -> str:
        return f"LanguageModelPolicy({self.params()})"

    def prompts(self, histories: Sequence[History]) -> list[list[int]]:
        """The token ids each game's next action is generated from; errors name the game."""
        prompts = []
        for game, (observations, actions) in enumerate(histories):
            if len(actions) != len(observations) - 1:
                raise ValueError(f"act_batch: game {game} has {len(observations)} observations and "
                                 f"{len(actions)} actions; expected one action fewer than observations")
            ids = self.tokenizer.encode_prompt([observation_text(o) for o in observations], list(actions))
            if self.max_positions is not None and len(ids) + self._max_steps() > self.max_positions:
                raise ValueError(f"act_batch: game {game}'s prompt has {len(ids)} tokens; with "
                                 f"{self._max_steps()} action tokens it exceeds the model's {self.max_positions} positions")
            prompts.append(ids)
        return prompts

    def _max_steps(self) -> int:
        return self.constraint.max_steps if self.constraint is not None else self.max_action_tokens

    def _uniforms(self, histories: Sequence[History], seeds: Sequence[int] | None) -> torch.Tensor:
        """``[batch, max_steps]`` uniforms: per game from ``(seed, turn)``, or in order from the shared generator."""
        steps = self._max_steps()
        if seeds is None:
            return torch.rand(len(histories), steps, generator=self._generator)
        if len(seeds) != len(histories):
            raise ValueError(f"act_batch: {len(seeds)} seeds for {len(histories)} games")
        rows = [torch.rand(steps, generator=torch.Generator().manual_seed(stream_seed(seed, len(actions))))
                for seed, (_, actions) in zip(seeds, histories)]
        return torch.stack(rows)

    @torch.inference_mode()
    def act_batch(self, histories: Sequence[History], seeds: Sequence[int] | None = None) -> list[str]:
        """The next action of several games at once, from ``(observations, actions)`` histories.

        Prompts are left-padded and decoded in parallel with the KV cache; each row stops at ``[EOA]``.
        ``seeds`` (one per game) make each game's sampling independent of the batch (see the module).
        """
        if not histories:
            return []
        prompts = self.prompts(histories)
        uniforms = self._uniforms(histories, seeds).to(self.device)
        splits = [self.turn_states.split(p) if self.turn_states is not None else (None, p) for p in prompts]
        past_lens = [0 if past is None else past[0].shape[-2] for past, _ in splits]
        batch, past_width, width = len(prompts), max(past_lens), max(len(new) for _, new in splits)
        input_ids = torch.full((batch, width), self.tokenizer.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((batch, past_width + width), dtype=torch.long)
        for row, ((_, new), past_len) in enumerate(zip(splits, past_lens)):
            input_ids[row, width - len(new):] = torch.tensor(new)
            attention_mask[row, past_width - past_len:past_width] = 1
            attention_mask[row, past_width + width - len(new):] = 1
        input_ids, attention_mask = input_ids.to(self.device), attention_mask.to(self.device)

        cache = TurnStates.batch_cache([past for past, _ in splits], past_width)
        logits = next_token_logits(self.lm, self.heads, input_ids, attention_mask, self.beta, past_key_values=cache)
        nodes = torch.zeros(batch, dtype=torch.long, device=self.device)
        done = torch.zeros(batch, dtype=torch.bool, device=self.device)
        written = torch.zeros(batch, dtype=torch.long, device=self.device)
        stop = torch.tensor(self.stop_ids, device=self.device)
        generated = torch.full((batch, self._max_steps()), self.tokenizer.pad_id, dtype=torch.long, device=self.device)
        for step in range(self._max_steps()):
            if self.constraint is not None:
                logits = self.constraint.mask_logits(logits, nodes)
            tokens = sample_tokens(logits, uniforms[:, step], self.temperature, self.greedy)
            tokens = tokens.masked_fill(done, self.tokenizer.pad_id)
            ends = ~done & torch.isin(tokens, stop)
            writing = ~done & ~ends
            generated[:, step] = tokens.masked_fill(~writing, self.tokenizer.pad_id)
            written += writing.long()
            if self.constraint is not None:
                nodes = torch.where(writing, self.constraint.advance(nodes, tokens), nodes)
            done |= ends
            if bool(done.all()) or step + 1 == self._max_steps():
                break
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones(batch, 1)], dim=1)
            logits = next_token_logits(self.lm, self.heads, tokens.unsqueeze(1), attention_mask, self.beta,
                                       past_key_values=cache)
        if self.turn_states is not None:
            # every written token of a row that stopped was fed back, so the cache holds all of them
            counts, stopped = written.tolist(), done.tolist()
            keys = [prompt + generated[row, :counts[row]].tolist() if stopped[row] else None
                    for row, prompt in enumerate(prompts)]
            spans = [(past_width - past_lens[row], past_width, past_width + width - len(new),
                      past_width + width + counts[row]) for row, (_, new) in enumerate(splits)]
            self.turn_states.remember(cache, keys, spans)
        return self._actions(generated, nodes)

    def _actions(self, generated: torch.Tensor, nodes: torch.Tensor) -> list[str]:
        """The text of each row: the allowed action its trie node completes, or the decoded free text."""
        if self.constraint is None:
            return [self.tokenizer.decode(row.tolist(), skip_special=True) for row in generated.cpu()]
        actions = [self.constraint.action_at(node) for node in nodes.tolist()]
        if any(action is None for action in actions):  # the constraint forces [EOA] at a complete action
            raise RuntimeError(f"constrained decoding ended outside the action list: nodes {nodes.tolist()}")
        return actions  # type: ignore[return-value]


__all__ = ["LanguageModelPolicy", "PrefixConstraint", "TurnStates", "next_token_logits", "positions_from_mask", "sample_tokens", "observation_text", "perturbed_logits"]


def perturbed_logits(logits: torch.Tensor, q: torch.Tensor, v: torch.Tensor, beta: float) -> torch.Tensor:
    """ILQL's decoding rule: the BC policy's logits plus ``beta * (Q(s, .) - V(s))`` for every token.

    ``beta = 0`` samples the behaviour policy; larger ``beta`` follows the learned advantage more greedily.

    >>> perturbed_logits(torch.tensor([0.0, 0.0]), torch.tensor([1.0, 3.0]), torch.tensor(1.0), 2.0)
    tensor([0., 4.])
    """
    return logits + beta * (q - v.unsqueeze(-1) if v.dim() == q.dim() - 1 else q - v)
