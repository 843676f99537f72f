"""Tiny fixtures of the DPO / MALT tests: an untrained BC checkpoint and recorded Wordle response trees."""

from __future__ import annotations

from pathlib import Path

import torch

from loggers.trees import TreeSpec, record_trees
from rlds_lang.tokenizers import wordle_tokenizer
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import RandomMixturePolicy
from trainers.algorithms.bc import BCConfig, BCModel
from trainers.core.checkpoint import save_checkpoint
from trainers.core.model import ModelConfig

TINY = ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=128)
WORDLE_SPEC = TreeSpec(branching=2, max_depth=None, reward_range=(-6.0, 0.0), pair_method="interval")


def tiny_checkpoint(out: Path, seed: int = 0) -> Path:
    """A randomly initialised tiny BC model saved as a checkpoint (``out/checkpoint``)."""
    torch.manual_seed(seed)
    tokenizer = wordle_tokenizer()
    config = BCConfig(out=str(out), model=TINY, steps=0, seed=seed)
    model = BCModel(config, tokenizer)
    optimizer = torch.optim.AdamW(model.parameters())
    return save_checkpoint(out, "bc", config, model, tokenizer,
                           {"step": 0, "optimizer": optimizer.state_dict(), "scheduler": {}, "torch_rng": None})


def wordle_trees(data_dir: Path, trees: int = 3, seed: int = 0):
    """Recorded response trees of a smart random-mixture policy (full games, branching 2)."""
    return record_trees(WordleEnv(), RandomMixturePolicy(prob_smart=1.0), WORDLE_SPEC, trees, data_dir, seed=seed,
                        run_name="fixture")
