"""A shared check of the baselines' tests: on one-turn data where the rare action ``ab`` earns 0 and the common
``ba`` earns -1 (``tests.toy_data.rare_best_action``), how likely an agent's first token is ``a``."""

from __future__ import annotations

from pathlib import Path

import torch

from rlds_lang.tokenizers import make_tokenizer
from tests.test_trainers import config
from tests.toy_data import build_dataset, rare_best_action
from trainers.algorithms.registry import load_agent_model, train
from trainers.core.checkpoint import LoadedModel


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
