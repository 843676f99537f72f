"""Result 3 of ``docs/ppo.md``, step 1: the base language model of the continuation task, pretrained here by BC
on the shipped corpus (``rlds_lang.continuation``).

The corpus's own continuations are recorded as RLDS episodes (``ContinuationEnv`` played by ``CorpusPolicy``
through ``loggers.record``, kept under ``<out>/corpus``); each read-back episode becomes the token layout of
``transforms.token_mdp`` (``[BOS] prompt [EOO] continuation [EOA]``) and ``trainers.algorithms.bc.BCModel`` maximises the
likelihood of the action tokens (continuation and ``[EOA]``). The prompts are the first 2 to 6 words of every
``train`` sentence (``prompt_words``), so the model sees each sentence cut at several places; ``test``
sentences are never trained on. The result is an ordinary ``bc`` checkpoint (``<out>/checkpoint``: loads with
``trainers.algorithms.registry.load_agent_model``, starts PPO with ``PPOConfig.init``). A finished checkpoint is reused.

Example::

    from trainers.experiments.ppo.sentiment_base import BaseLMConfig, pretrain_base

    checkpoint = pretrain_base(BaseLMConfig(out="runs/base", steps=50))
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from rlds_lang.paths import default_run
from trainers.core.device import placement
from trainers.core.model import ModelConfig


def _base_model() -> ModelConfig:
    return ModelConfig(n_layer=2, n_embd=64, n_head=4, n_positions=96)


@dataclasses.dataclass
class BaseLMConfig:
    """Pretraining of the continuation task's base LM (CPU scale: the recipe starts from GPT-2 124M)."""

    #: output folder (``corpus/`` episodes, ``checkpoint/``).
    out: str = default_run("sentiment/base")
    #: prompt lengths in words each train sentence is cut at (one example each).
    prompt_words: tuple[int, ...] = (2, 3, 4, 5, 6)
    #: use only the first this many examples (0 = all; small for tests).
    max_examples: int = 0
    #: optimizer steps.
    steps: int = 1500
    #: examples per step.
    batch_size: int = 32
    #: Adam learning rate (a small randomly initialised model).
    lr: float = 1e-3
    #: ``bpe``: a byte-level BPE (``rlds_lang.subword.SubwordTokenizer``) trained on the corpus texts, so the LM
    #: samples whole corpus words (the recipe's GPT-2 reads BPE tokens too); ``char``: the task's characters.
    tokenizer: str = "bpe"
    #: BPE vocabulary size (with ``tokenizer="bpe"``).
    bpe_vocab: int = 1000
    #: seed of the weights and the batch order.
    seed: int = 0
    #: the transformer.
    model: ModelConfig = dataclasses.field(default_factory=_base_model)


def corpus_episodes(config: BaseLMConfig) -> list[dict[str, Any]]:
    """The corpus continuations of the train sentences, recorded once (``<out>/corpus``) and read back."""
    from loggers.roundtrip import record_and_read_cached
    from rlds_lang.continuation.corpus import corpus_examples
    from rlds_lang.continuation.env import ContinuationEnv, CorpusPolicy

    examples = [e for k in config.prompt_words for e in corpus_examples("train", prompt_words=k)]
    examples = examples[:config.max_examples] if config.max_examples else examples
    env = ContinuationEnv(examples, scorer=lambda texts: [0.0] * len(texts))  # pretraining needs no reward
    key = {"recipe": "corpus continuations", "prompt_words": list(config.prompt_words), "examples": len(examples)}
    return list(record_and_read_cached(env, CorpusPolicy(env), len(examples), Path(config.out) / "corpus", key,
                                       run_name="corpus", seed=0))


def episode_tokens(episodes: Sequence[dict[str, Any]], tokenizer: Any) -> list[tuple[list[int], int]]:
    """``(ids, prompt length)`` of each one-step episode: ``[BOS] o [EOO] a [EOA]``."""
    rows = []
    for episode in episodes:
        step = episode["steps"][0]
        prompt = tokenizer.encode_prompt([str(step["observation"]["text"])], [])
        rows.append((prompt + tokenizer.encode(str(step["action"]), strict=False) + [tokenizer.eoa_id], len(prompt)))
    return rows


def make_batch(rows: Sequence[tuple[list[int], int]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``action_mask`` (the action tokens) of ``rows``."""
    from trainers.core.padding import pad_responses

    input_ids, attention, action = pad_responses(rows, pad_id)
    return {"input_ids": input_ids, "attention_mask": attention, "action_mask": action}


def base_tokenizer(config: BaseLMConfig, episodes: Sequence[dict[str, Any]]) -> Any:
    """The base LM's tokenizer: the task's characters, or a BPE trained on the prompts and continuations of
    ``episodes`` (``config.tokenizer``)."""
    from rlds_lang.continuation.corpus import continuation_tokenizer
    from rlds_lang.subword import SubwordTokenizer

    if config.tokenizer == "char":
        return continuation_tokenizer()
    if config.tokenizer != "bpe":
        raise ValueError(f"BaseLMConfig.tokenizer must be 'bpe' or 'char', got {config.tokenizer!r}")
    texts = [str(t) for ep in episodes for t in (ep["steps"][0]["observation"]["text"], ep["steps"][0]["action"])]
    return SubwordTokenizer.train(texts, vocab_size=config.bpe_vocab, name=f"continuation-bpe-{config.bpe_vocab}")


def pretrain_base(config: BaseLMConfig, progress: bool = False) -> Path:
    """Trains (or reuses) the base LM on the device ``auto`` means here (``trainers.core.device``); returns its
    checkpoint folder."""
    from trainers.algorithms.bc import BCConfig, BCModel
    from trainers.core.checkpoint import checkpoint_dir, save_checkpoint

    out = Path(config.out)
    if (checkpoint_dir(out) / "trainer_state.pt").is_file():
        return checkpoint_dir(out)
    episodes = corpus_episodes(config)
    tokenizer = base_tokenizer(config, episodes)
    rows = episode_tokens(episodes, tokenizer)
    torch.manual_seed(config.seed)
    bc_config = BCConfig(out=str(out), steps=config.steps, batch_size=config.batch_size, lr=config.lr,
                         seed=config.seed, model=config.model, tokenizer="continuation")
    place = placement()
    model = BCModel(bc_config, tokenizer).to(place.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    rng = np.random.default_rng(config.seed)
    model.train()
    losses = []
    for step in range(1, config.steps + 1):
        index = rng.choice(len(rows), size=min(config.batch_size, len(rows)), replace=False)
        with place.autocast():
            loss = model(place.move(make_batch([rows[i] for i in index], tokenizer.pad_id))).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if progress and step % 200 == 0:
            print(f"base LM step {step}/{config.steps}: nll {np.mean(losses[-200:]):.3f}", flush=True)
    state = {"step": config.steps, "final_nll": float(np.mean(losses[-50:])), "examples": len(rows),
             "tokenizer": config.tokenizer, "vocab_size": tokenizer.vocab_size}
    return save_checkpoint(out, "bc", bc_config, model, tokenizer, state)


__all__ = ["BaseLMConfig", "corpus_episodes", "episode_tokens", "make_batch", "pretrain_base"]
