"""Language-model agents: a causal LM (BC, %BC or ILQL) playing a text environment as a ``Policy``.

``LanguageModelPolicy`` writes each action token by token after the tokenizer's episode prompt
``[BOS] o_0 [EOO] a_0 [EOA] ... o_t [EOO]`` and stops at ``[EOA]``. Each token comes from the decoding rule of
``trainers.core.decoding``: ``next_token_logits`` (the LM's logits, plus ILQL's ``beta * (Q - V)`` when value
heads are given and ``beta != 0``), then ``sample_tokens`` at ``temperature`` (or the arg-max with ``greedy``).
With ``allowed_actions`` (e.g. the Wordle guess list) a ``PrefixConstraint`` keeps every generated action valid;
without it actions are free text of at most ``max_action_tokens`` tokens, ended by ``[EOA]`` (or ``[EOS]``), and
may be invalid for the environment.

Batching: ``act_batch`` plays several games at once -- prompts are left-padded (with an attention mask
and position ids counted from each prompt's first real token, so padding changes nothing) and decoded in
parallel with the KV cache. ``TurnStates`` keeps each game's keys and values to the next call, so a turn
runs only its new tokens (``[EOA]``, the feedback, ``[EOO]``) instead of the whole game again. Randomness: given
per-game ``seeds`` the uniform numbers of game ``s`` at turn ``t`` come from a generator seeded by ``(s, t)``
alone (``stream_seed``), so a seeded game samples the same actions whether it is played alone (``act`` after
``reset(s)``) or inside any batch. Without seeds, one generator seeded by ``reset`` serves the whole batch in order.

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

from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from rlds_lang.char_tokenizer import CharTokenizer
from rlds_lang.env import Observation, as_text
from trainers.core.decoding import PrefixConstraint, next_token_logits, sample_tokens, stream_seed
from trainers.core.device import module_device, placement
from trainers.core.model import ValueHeads
from trainers.core.padding import left_pad

History = tuple[Sequence[Observation | str], Sequence[str]]


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
      adv_clip: caps ``beta * (Q - V)`` from above (``trainers.core.decoding.perturbed_logits``); None: no cap.
      temperature: sampling temperature (> 0), applied after the perturbation.
      greedy: take the arg-max token instead of sampling.
      allowed_actions: if given, decoding is constrained to these actions (``PrefixConstraint``).
      max_action_tokens: longest free-text action (only without ``allowed_actions``).
      name: the agent's name in episode metadata and result tables.
      seed: initial seed (``reset`` changes it).
      device: where the model runs (``trainers.core.device.resolve_device``; None: where ``lm`` is); the model is
        moved there. The sampling's uniforms are drawn on the CPU, so a seed plays the same games on every device.
      precision: the forward passes' precision (``trainers.core.device``; None: ``auto``).
      reuse_states: keep each game's keys/values between calls (``TurnStates``) so that a turn runs only its
        new tokens; the actions are the same either way (up to float rounding). Call ``reset`` after
        changing the model's weights.
    """

    def __init__(self, lm: nn.Module, tokenizer: CharTokenizer, heads: ValueHeads | None = None, beta: float = 0.0,
                 temperature: float = 1.0, greedy: bool = False, allowed_actions: Sequence[str] | None = None,
                 max_action_tokens: int = 16, name: str = "lm", seed: int = 0,
                 device: str | torch.device | None = None, reuse_states: bool = True, adv_clip: float | None = None,
                 precision: str | None = None):
        if not greedy and not temperature > 0:
            raise ValueError(f"LanguageModelPolicy: temperature must be > 0, got {temperature}")
        if not np.isfinite(beta):
            raise ValueError(f"LanguageModelPolicy: beta must be finite, got {beta}")
        if beta != 0 and heads is None:
            raise ValueError(f"LanguageModelPolicy: beta={beta} needs value heads (heads=None)")
        if max_action_tokens < 1:
            raise ValueError(f"LanguageModelPolicy: max_action_tokens must be >= 1, got {max_action_tokens}")
        self.placement = placement(module_device(lm) if device is None else device, precision)
        self.device = self.placement.device
        self.lm = lm.to(self.device).eval()
        self.heads = heads.to(self.device).eval() if heads is not None else None
        self.tokenizer = tokenizer
        self.beta = float(beta)
        self.adv_clip = None if adv_clip is None else float(adv_clip)
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
        self._generator = torch.Generator(device="cpu").manual_seed(self.seed % 2**63)
        if self.turn_states is not None:
            self.turn_states.clear()

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        """The next action of the game seeded by the last ``reset``."""
        return self.act_batch([(observations, actions)], seeds=[self.seed])[0]

    def params(self) -> dict[str, Any]:
        """JSON-ready decoding parameters (with the size and hash of the allowed action list)."""
        params: dict[str, Any] = {"name": self.name, "beta": self.beta, "adv_clip": self.adv_clip,
                                  "temperature": self.temperature,
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
            return torch.rand(len(histories), steps, generator=self._generator, device="cpu")
        if len(seeds) != len(histories):
            raise ValueError(f"act_batch: {len(seeds)} seeds for {len(histories)} games")
        rows = [torch.rand(steps, generator=torch.Generator().manual_seed(stream_seed(seed, len(actions))),
                           device="cpu") for seed, (_, actions) in zip(seeds, histories)]
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
        # each row's stored past ends where its new tokens begin: both left-padded (built on the CPU, then moved)
        input_ids, new_mask = left_pad([new for _, new in splits], width, self.tokenizer.pad_id)
        _, past_mask = left_pad([[1] * past_len for past_len in past_lens], past_width, 0)
        input_ids = input_ids.to(self.device)
        attention_mask = torch.cat([past_mask, new_mask], dim=1).to(self.device)

        cache = TurnStates.batch_cache([past for past, _ in splits], past_width)
        with self.placement.autocast():
            logits = next_token_logits(self.lm, self.heads, input_ids, attention_mask, self.beta,
                                       past_key_values=cache, adv_clip=self.adv_clip)
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
            with self.placement.autocast():
                logits = next_token_logits(self.lm, self.heads, tokens.unsqueeze(1), attention_mask, self.beta,
                                           past_key_values=cache, adv_clip=self.adv_clip)
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


__all__ = ["LanguageModelPolicy", "TurnStates", "observation_text"]
