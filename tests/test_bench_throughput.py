"""The throughput bench (``bench/train_throughput.py``) measures the pages' own rows, and the FLOPs it counts per
token are at least what the model's matrix products must compute."""

from __future__ import annotations

import torch

from bench.train_throughput import flops_per_token, matmul_flops_per_second, setting_rows
from rlds_lang.tokenizers import make_tokenizer
from tests.test_device import batch  # noqa: F401  (the fixture)
from trainers.algorithms.bc import BCConfig, BCModel
from trainers.core.device import Placement
from trainers.core.model import ModelConfig


def test_the_bench_trains_the_pages_bc_and_ilql_rows(tmp_path):
    wordle = {name: config for name, _, config in setting_rows("wordle", "unused", tmp_path, 3)}
    assert sorted(wordle) == ["bc", "ilql"] and wordle["ilql"].alpha == 0.01  # docs/results.md's ilql row
    lmrl = {name: config for name, _, config in setting_rows("lmrl-gym", "unused", tmp_path, 3)}
    assert sorted(lmrl) == ["BC", "ILQL"] and lmrl["BC"].batch_size == 64 and lmrl["BC"].tokenizer == "lmrl_gym_board"
    assert lmrl["ILQL"].separate_value_trunk and lmrl["ILQL"].target_network == "trunk"
    for config in [*wordle.values(), *lmrl.values()]:
        assert (config.model.n_layer, config.model.n_embd, config.steps, config.keep_every) == (4, 128, 3, 0)


def test_counted_flops_cover_the_models_matrix_products(batch):
    torch.manual_seed(0)
    tok = make_tokenizer("wordle")
    module = BCModel(BCConfig(model=ModelConfig(n_layer=2, n_embd=32, n_head=2, n_positions=64)), tok)
    counted = flops_per_token(module, [batch], Placement(torch.device("cpu")))
    weights = sum(p.numel() for name, p in module.named_parameters() if p.dim() == 2 and "wpe" not in name)
    computed = batch["attention_mask"].numel() / int(batch["attention_mask"].sum())  # padding is computed too
    assert 6 * weights * computed <= counted <= 3 * 6 * weights * computed  # forward 2N, backward 4N, + attention
    assert matmul_flops_per_second(Placement(torch.device("cpu")), 64, repeats=2) > 0
