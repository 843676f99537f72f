"""Shared model code of the trainers: a causal transformer (``transformers``' GPT-2 architecture) and the
value heads that ILQL puts on its hidden states (on the policy's own, or on a separate value trunk:
``PolicyValueLM``).

The language model starts from random weights by default (nothing can be downloaded on the machines this
project targets); ``ModelConfig.checkpoint`` loads any local folder written by ``save_pretrained`` (or a
checkpoint a pip package ships) instead. Sizes are small by default so that training runs on 2 CPU cores.

Example::

    from trainers.core.model import ModelConfig, build_language_model, ValueHeads

    lm = build_language_model(ModelConfig(n_layer=2, n_embd=64, n_head=2), vocab_size=40, pad_id=0)
    heads = ValueHeads(hidden_size=64, vocab_size=40)
"""

from __future__ import annotations

import contextlib
import copy
import os
from typing import Any, Iterator, Sequence

import torch
from torch import nn

from trainers.core.heads import DECODE_WITH, TwinQHeads, ValueHeads, mlp_head, polyak_update
from trainers.core.model_config import ModelConfig


@contextlib.contextmanager
def transformers_progress_bars_off() -> Iterator[None]:
    """Inside: ``transformers`` shows no progress bar (its "Loading weights" bar of ``from_pretrained`` and "Writing
    model shards" bar of ``save_pretrained``); the setting before is restored."""
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            transformers_logging.enable_progress_bar()


def build_language_model(config: ModelConfig, vocab_size: int, pad_id: int, bos_id: int | None = None,
                         eos_id: int | None = None, spellings: Sequence[str] | None = None) -> nn.Module:
    """A ``GPT2LMHeadModel`` for the task's vocabulary, randomly initialised or loaded from ``checkpoint``.

    ``spellings`` (the text of every id, ``rlds_lang.tokenizers.token_spellings``) is needed with
    ``config.spelled_embeddings``, which then wraps the embedding table in ``SpelledEmbedding``.

    >>> lm = build_language_model(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=8), 10, pad_id=0)
    >>> lm(input_ids=torch.zeros(1, 3, dtype=torch.long)).logits.shape
    torch.Size([1, 3, 10])
    """
    from transformers import (  # heavy import: only when a model is built
        GPT2Config,
        GPT2LMHeadModel,
    )

    if config.lora_rank and config.pretrained is None:
        raise ValueError(f"ModelConfig.lora_rank={config.lora_rank} adapts a pretrained model: give "
                         f"ModelConfig.pretrained (--model.pretrained PATH_OR_NAME) too, or lora_rank=0")
    if config.pretrained is not None:
        return _pretrained(config, vocab_size, pad_id, bos_id, eos_id)
    if config.checkpoint is not None:
        if not os.path.isdir(config.checkpoint):
            raise FileNotFoundError(f"ModelConfig.checkpoint: {config.checkpoint!r} is not a folder")
        with transformers_progress_bars_off():  # a bar per load of a few dozen tensors, in every run's output
            model = GPT2LMHeadModel.from_pretrained(config.checkpoint)
        if model.config.vocab_size != vocab_size:
            raise ValueError(f"checkpoint {config.checkpoint!r} has vocab_size {model.config.vocab_size}, "
                             f"the tokenizer {vocab_size}")
    else:
        if config.n_embd % config.n_head:
            raise ValueError(f"ModelConfig: n_head={config.n_head} must divide n_embd={config.n_embd}")
        gpt2 = GPT2Config(vocab_size=vocab_size, n_positions=config.n_positions, n_embd=config.n_embd,
                          n_layer=config.n_layer, n_head=config.n_head, resid_pdrop=config.dropout,
                          embd_pdrop=config.dropout, attn_pdrop=config.dropout, pad_token_id=pad_id,
                          bos_token_id=bos_id, eos_token_id=eos_id)
        model = GPT2LMHeadModel(gpt2)
    if config.spelled_embeddings:
        if spellings is None:
            raise ValueError("ModelConfig.spelled_embeddings needs the text of every token id (spellings=...)")
        spell_embeddings(model, spellings)
    if config.logit_scale is not None:
        if config.checkpoint is not None:
            raise ValueError("ModelConfig.logit_scale starts a model from random weights; a checkpoint saved with "
                             "one holds it in its output layer already (leave logit_scale unset)")
        model.lm_head = ScaledOutput(model.lm_head, config.logit_scale)
    return model


def _pretrained(config: ModelConfig, vocab_size: int, pad_id: int, bos_id: int | None,
                eos_id: int | None) -> nn.Module:
    """``config.pretrained``'s LM (``trainers.core.pretrained.pretrained_language_model``); the options that
    describe a model built here (a checkpoint, spelled embeddings, a logit scale) are refused beside it. With
    ``config.lora_rank > 0`` it carries LoRA adapters and only they train (``trainers.core.lora.with_lora``)."""
    from trainers.core.lora import with_lora
    from trainers.core.pretrained import pretrained_language_model

    clashing = [name for name, value in (("checkpoint", config.checkpoint), ("logit_scale", config.logit_scale),
                                         ("spelled_embeddings", config.spelled_embeddings or None)) if value is not None]
    if clashing:
        raise ValueError(f"ModelConfig.pretrained={config.pretrained!r} cannot be combined with "
                         f"{', '.join(clashing)}: they describe a model built from our own tokenizer")
    if config.lora_rank < 0:
        raise ValueError(f"ModelConfig.lora_rank={config.lora_rank}: a rank is >= 1 (0 = no adapters)")
    with transformers_progress_bars_off():  # a "Loading weights" bar per model built, in every run's output
        model = pretrained_language_model(config.pretrained, vocab_size, pad_id, bos_id, eos_id)
    if config.lora_rank:
        return with_lora(model, config.lora_rank, config.lora_alpha, config.lora_dropout)
    return model


def language_model_for(config: ModelConfig, tokenizer: Any) -> nn.Module:
    """``build_language_model`` for ``tokenizer``: its vocabulary, special ids and (when asked) spellings.

    A pretrained model (``config.pretrained``) needs its own tokenizer (``trainers.core.pretrained.task_tokenizer``,
    a ``PretrainedTokenizer``); another one is a ``ValueError`` rather than an embedding table cut to its size."""
    from rlds_lang.pretrained_tokenizer import PretrainedTokenizer
    from rlds_lang.tokenizers import token_spellings

    if config.pretrained is not None and not isinstance(tokenizer, PretrainedTokenizer):
        raise ValueError(f"ModelConfig.pretrained={config.pretrained!r} needs the model's own tokenizer "
                         f"(trainers.core.pretrained.task_tokenizer), got {tokenizer!r}: this trainer does not take "
                         f"a pretrained model yet")
    return build_language_model(config, tokenizer.vocab_size, pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id,
                                eos_id=tokenizer.eos_id,
                                spellings=token_spellings(tokenizer) if config.spelled_embeddings else None)


#: how many leading characters of a token's text get their own (position, character) embedding.
SPELLING_LENGTH = 8


class SpelledEmbedding(nn.Module):
    """A token embedding table that is a free table plus the sum of its spelling's (position, character)
    embeddings: ``weight[t] = free[t] + sum_p letters[p, text(t)[p]]`` over the first ``length`` characters.

    With word-as-token Wordle, ``crane`` and ``crate`` share four of their five (place, letter) vectors, and a
    feedback pattern is the sum of its five (place, colour) vectors, so what a model learns about one word
    or pattern reaches the others (LMRL-Gym's GPT-2 brings that knowledge from pretraining; ours starts from
    random weights). ``letters`` starts at zero: at initialisation the table equals the plain one. Tokens
    with an empty text (the specials) keep their free row only. The spellings are rebuilt from the
    tokenizer, so they are not in the ``state_dict`` (``free`` and ``letters`` are).

    >>> table = SpelledEmbedding(nn.Embedding(3, 4), ["", "ab", "b"])
    >>> table.letters.shape, table(torch.tensor([[1, 2]])).shape
    (torch.Size([16, 4]), torch.Size([1, 2, 4]))
    """

    def __init__(self, table: nn.Embedding, spellings: Sequence[str], length: int = SPELLING_LENGTH):
        super().__init__()
        if len(spellings) != table.num_embeddings:
            raise ValueError(f"SpelledEmbedding: {len(spellings)} spellings for {table.num_embeddings} token ids")
        symbols = sorted({char for text in spellings for char in text[:length]})
        if not symbols:
            raise ValueError("SpelledEmbedding: every spelling is empty; there is nothing to spell tokens with")
        index = {char: i for i, char in enumerate(symbols)}
        slots = torch.full((len(spellings), length), -1, dtype=torch.long)
        for token, text in enumerate(spellings):
            for place, char in enumerate(text[:length]):
                slots[token, place] = place * len(symbols) + index[char]
        self.free = table.weight
        self.letters = nn.Parameter(torch.zeros(length * len(symbols), table.embedding_dim,
                                                dtype=table.weight.dtype, device=table.weight.device))
        self.register_buffer("slots", slots.clamp(min=0), persistent=False)
        self.register_buffer("spelled", (slots >= 0).to(table.weight.dtype), persistent=False)
        self.symbols = "".join(symbols)

    @property
    def weight(self) -> torch.Tensor:
        """The effective ``[vocab, n_embd]`` table (what a plain GPT-2 with the same outputs would hold)."""
        return self.free + (self.letters[self.slots] * self.spelled.unsqueeze(-1)).sum(1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """The embeddings of ``ids``: ``[..., n_embd]``."""
        return nn.functional.embedding(ids, self.weight)


class TiedOutput(nn.Module):
    """GPT-2's output layer tied to a ``SpelledEmbedding``: logits are ``hidden @ embedding.weight.T``."""

    def __init__(self, embedding: SpelledEmbedding):
        super().__init__()
        object.__setattr__(self, "embedding", embedding)  # not a submodule: its parameters are the input table's

    @property
    def weight(self) -> torch.Tensor:
        """The effective table (shared with the input embedding)."""
        return self.embedding.weight

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits over the vocabulary: ``[..., vocab]``."""
        return hidden @ self.embedding.weight.T


class ScaledOutput(nn.Module):
    """An output layer whose logits are multiplied by a learnable scalar ``scale`` (``ModelConfig.logit_scale``).

    The wrapped layer keeps its tie to the input embedding; only the logits are scaled.

    >>> head = ScaledOutput(nn.Linear(4, 3, bias=False), 10.0)
    >>> torch.allclose(head(torch.ones(1, 4)), 10.0 * head.inner(torch.ones(1, 4)))
    True
    """

    def __init__(self, inner: nn.Module, scale: float):
        super().__init__()
        self.inner = inner
        self.scale = nn.Parameter(torch.tensor(float(scale)))

    @property
    def weight(self) -> torch.Tensor:
        """The effective output table: the wrapped layer's times the scale."""
        return self.inner.weight * self.scale

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits over the vocabulary: ``[..., vocab]``."""
        return self.inner(hidden) * self.scale


def spell_embeddings(lm: nn.Module, spellings: Sequence[str]) -> nn.Module:
    """Wraps a GPT-2 LM's embedding table in ``SpelledEmbedding`` and ties its output layer to it, in place."""
    spelled = SpelledEmbedding(lm.transformer.wte, spellings)
    lm.transformer.wte = spelled
    lm.lm_head = TiedOutput(spelled)
    return lm


class PolicyValueLM(nn.Module):
    """Two transformers of one size behind one causal-LM call: the policy (a GPT-2 LM, whose logits are returned)
    and a separate value trunk (a GPT-2 body, whose last hidden states are returned for the value heads) -- the
    ILQL authors' ``seperate_policy: true``, where neither loss shapes the other's features.

    ``forward`` takes and returns what the trainers and agents use of a ``transformers`` LM (``logits``,
    ``hidden_states[-1]``, one ``past_key_values`` cache), so they need no second code path: the value trunk's
    layers are numbered after the policy's and write into the same cache, and run first, so that both see the
    same past length in it.

    >>> config = ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=8)
    >>> lm = PolicyValueLM(build_language_model(config, 10, pad_id=0), build_language_model(config, 10, pad_id=0))
    >>> out = lm(input_ids=torch.zeros(1, 3, dtype=torch.long), output_hidden_states=True)
    >>> out.logits.shape, out.hidden_states[-1].shape
    (torch.Size([1, 3, 10]), torch.Size([1, 3, 16]))
    """

    def __init__(self, policy: nn.Module, value: nn.Module):
        super().__init__()
        if getattr(policy.config, "model_type", "gpt2") != "gpt2":
            raise ValueError(f"a separate value trunk renumbers GPT-2's attention blocks into one shared cache; "
                             f"{policy.config.model_type!r} models share the policy's trunk with the value heads "
                             f"(leave separate_value_trunk off)")
        self.policy = policy
        #: the value trunk: the body of a GPT-2 LM (its output layer is not needed).
        self.value = value.transformer
        self.config = policy.config
        if getattr(self.value.config, "scale_attn_by_inverse_layer_idx", False):
            raise ValueError("PolicyValueLM: renumbered layers would change scale_attn_by_inverse_layer_idx")
        for index, block in enumerate(self.value.h):
            block.attn.layer_idx = policy.config.n_layer + index
        self.value.config.use_cache = False  # its own cache would have too few layers: it uses the shared one

    def value_hidden(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The value trunk's last hidden states alone, without a cache (training with a fixed policy)."""
        return trunk_hidden(self.value, input_ids, attention_mask)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, past_key_values: Any = None, use_cache: bool | None = None,
                output_hidden_states: bool = False) -> Any:
        """``logits`` of the policy, ``hidden_states == (value trunk's last hidden states,)`` and the shared cache."""
        from transformers import DynamicCache
        from transformers.modeling_outputs import CausalLMOutputWithPast

        use_cache = past_key_values is not None if use_cache is None else use_cache
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache()
        inputs = dict(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                      past_key_values=past_key_values, use_cache=use_cache)
        hidden = self.value(**inputs).last_hidden_state
        logits = self.policy(**inputs).logits
        return CausalLMOutputWithPast(logits=logits, hidden_states=(hidden,) if output_hidden_states else None,
                                      past_key_values=past_key_values if use_cache else None)


def plain_language_model(lm: nn.Module) -> nn.Module:
    """``lm`` as an ordinary ``transformers`` GPT-2 (for ``save_pretrained``): itself (a ``PolicyValueLM``'s
    policy), or for spelled embeddings a copy whose embedding table holds the effective weights, so it computes
    the same logits.

    >>> lm = build_language_model(ModelConfig(n_layer=1, n_embd=8, n_head=2, spelled_embeddings=True), 3, pad_id=0,
    ...                           spellings=["", "ab", "b"])
    >>> type(plain_language_model(lm).transformer.wte).__name__
    'Embedding'
    """
    if isinstance(lm, PolicyValueLM):  # the policy alone: a separate value trunk is part of model.pt only
        lm = lm.policy
    lm = getattr(lm, "wrapped_lm", lm)  # a wrapper's GPT-2 alone (the Decision Transformer's return embedding too)
    embedding, head = lm.get_input_embeddings(), lm.get_output_embeddings()
    if not isinstance(embedding, SpelledEmbedding) and not isinstance(head, ScaledOutput):
        return lm
    from transformers import GPT2LMHeadModel

    config = copy.deepcopy(lm.config)
    config.tie_word_embeddings = not isinstance(head, ScaledOutput)  # a scaled output is its own table
    plain = GPT2LMHeadModel(config)
    state = {k: v for k, v in lm.state_dict().items() if not k.startswith(("transformer.wte.", "lm_head."))}
    state["transformer.wte.weight"] = embedding.weight.detach().clone()
    state["lm_head.weight"] = head.weight.detach().clone()
    plain.load_state_dict(state)
    return plain.to(embedding.weight.device)


def value_trunk(lm: nn.Module) -> nn.Module:
    """The transformer body whose last hidden states the value heads read: a ``PolicyValueLM``'s value trunk, or
    the body (``base_model``: GPT-2's ``.transformer``, a Llama's ``.model``) of a plain LM that shares it with the
    policy."""
    return lm.value if isinstance(lm, PolicyValueLM) else lm.base_model


#: the names a ``transformers`` config gives the width of its hidden states, in the order they are tried.
HIDDEN_SIZE_NAMES = ("hidden_size", "n_embd", "d_model")


def hidden_size(lm: nn.Module) -> int:
    """The width of ``lm``'s last hidden states (what value, reward and return heads read), whatever the model
    family: its config's ``hidden_size`` (GPT-2 maps it to ``n_embd``; Llama, GPT-NeoX, Mistral name it so), else
    ``n_embd``/``d_model``, else the input embedding's width.

    >>> hidden_size(build_language_model(ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=8), 10, pad_id=0))
    16
    """
    config = getattr(lm, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    for name in HIDDEN_SIZE_NAMES:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return int(lm.get_input_embeddings().embedding_dim)


def trunk_hidden(trunk: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """A transformer body's last hidden states for a whole sequence, without a cache: ``[batch, time, hidden]``."""
    return trunk(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state


def action_targets(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """What the outputs at positions ``0..T-2`` are trained on: the next token and whether it is an action.

    A causal LM's output at position ``t`` is about token ``t + 1`` (the state before it is tokens ``<= t``),
    so every trainer compares ``outputs[:, :-1]`` with ``targets = input_ids[:, 1:]`` on the positions of
    ``mask = action_mask[:, 1:]`` (agent tokens that are not padding). Returns ``(targets, mask)``.

    >>> batch = {"input_ids": torch.tensor([[1, 7, 8, 4]]), "action_mask": torch.tensor([[False, True, True, False]]),
    ...          "attention_mask": torch.tensor([[1, 1, 1, 0]])}
    >>> targets, mask = action_targets(batch)
    >>> targets.tolist(), mask.tolist()
    ([[7, 8, 4]], [[True, True, False]])
    """
    mask = batch["action_mask"][:, 1:].bool() & batch["attention_mask"][:, 1:].bool()
    return batch["input_ids"][:, 1:], mask


__all__ = ["ModelConfig", "build_language_model", "transformers_progress_bars_off", "language_model_for",
           "SPELLING_LENGTH", "SpelledEmbedding", "TiedOutput", "spell_embeddings", "PolicyValueLM",
           "plain_language_model", "mlp_head", "polyak_update", "TwinQHeads", "DECODE_WITH", "ValueHeads",
           "value_trunk", "HIDDEN_SIZE_NAMES", "hidden_size", "trunk_hidden", "action_targets"]
