"""Shared pieces of the baselines' tests: a tiny model of an algorithm for hand computations, and on one-turn data
where the rare action ``ab`` earns 0 and the common ``ba`` earns -1 (``tests.toy_data.rare_best_action``), how
likely an agent's first token is ``a``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rlds_lang.tokenizers import make_tokenizer
from tests.test_trainers import config
from tests.toy_data import build_dataset, rare_best_action
from trainers.algorithms.registry import load_agent_model, train
from trainers.core.checkpoint import LoadedModel
from trainers.core.model import ModelConfig

#: the model of the hand computations (as tests/test_ilql_targets.py's).
TINY = ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32)
TOKENIZER = make_tokenizer("wordle")


def tiny_model(algorithm: str, **overrides: Any) -> torch.nn.Module:
    """``algorithm``'s module on ``TINY``, seeded, with config ``overrides``."""
    from trainers.algorithms.registry import algorithm_by_name

    spec = algorithm_by_name(algorithm)
    torch.manual_seed(0)
    return spec.model_class(spec.config_class(dataset="unused", model=TINY, **overrides), TOKENIZER)


def train_on_rare_action(algorithm: str, root: Path, steps: int = 150, **overrides) -> LoadedModel:
    """Trains ``algorithm`` on 12 ``ab`` and 108 ``ba`` games and returns the loaded checkpoint."""
    dataset = build_dataset(rare_best_action(n_good=12, n_bad=108), root / "data")
    options = dict(steps=steps, batch_size=24, lr=2e-3, log_every=50, shuffle_buffer=120, seed=1, **overrides)
    train(algorithm, config(algorithm, dataset, root / algorithm, **options), progress=False)
    return load_agent_model(root / algorithm / "checkpoint")


def first_letter_odds(loaded: LoadedModel, beta: float) -> float:
    """P(first token is ``a``) among ``a`` and ``b`` under the agent's decoding rule at ``beta`` (0: its LM alone)."""
    from trainers.core.decoding import next_token_logits

    tokenizer = make_tokenizer("wordle")
    prompt = torch.tensor([tokenizer.encode_prompt([""], [])])
    a, b = tokenizer.encode("a")[0], tokenizer.encode("b")[0]
    logits = next_token_logits(loaded.lm, loaded.heads, prompt, torch.ones_like(prompt), beta)[0]
    return torch.softmax(logits[[a, b]], dim=0)[0].item()
