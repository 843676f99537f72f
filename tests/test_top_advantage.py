"""The top-advantage diagnostic: each utterance's advantage is the sum over its tokens of Q - V (checked against
heads with known outputs), actions are ranked by their mean, cut utterances are counted, and the command runs."""

from __future__ import annotations

import pytest
import torch

from tests.test_ilql_targets import TOKENIZER, set_output
from tests.test_trainers import config
from tests.toy_data import build_dataset, wordle_like
from trainers.algorithms.cql.config import CQLConfig
from trainers.algorithms.cql.model import CQLModel
from trainers.algorithms.registry import train
from trainers.core.checkpoint import LoadedModel
from trainers.core.model import ModelConfig
from trainers.experiments.top_advantage import top_advantage

SMALL = ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=64)
WORDS = {"crane", "slate", "abide", "speed", "geese", "these", "lever", "eerie", "elder", "sassy", "essay"}


@pytest.fixture(scope="module")
def wordle_dataset(tmp_path_factory) -> str:
    return build_dataset(wordle_like(24, seed=5), tmp_path_factory.mktemp("wordle_like"))


def known_heads(max_length: int) -> tuple[LoadedModel, torch.Tensor]:
    """A CQL model whose decoding Q is a fixed vector over the vocabulary and whose V is 0.5."""
    torch.manual_seed(0)
    model = CQLModel(CQLConfig(dataset="unused", model=SMALL, max_length=max_length), TOKENIZER).eval()
    q = torch.linspace(-2.0, 3.0, TOKENIZER.vocab_size)
    for head in (model.heads.target_q1, model.heads.target_q2):
        set_output(head, q)
    set_output(model.heads.v, 0.5)
    return LoadedModel("cql", model.config, model, TOKENIZER, 0), q


def test_utterance_advantage_is_the_sum_of_its_tokens_q_minus_v(wordle_dataset):
    loaded, q = known_heads(max_length=64)
    result = top_advantage(loaded, wordle_dataset, episodes=24, batch_size=8)
    assert result.cut == 0 and {a.action for a in result.actions} <= WORDS
    assert sum(a.count for a in result.actions) == result.utterances > 24
    for item in result.actions:  # every token of the word and its [EOA]: Q(token) - 0.5
        tokens = TOKENIZER.encode(item.action) + [TOKENIZER.eoa_id]
        assert item.mean == pytest.approx(float(sum(q[t] - 0.5 for t in tokens)), rel=1e-5), item
    means = [a.mean for a in result.actions]
    assert means == sorted(means, reverse=True)
    assert result.bottom(1)[0] == result.actions[-1] and result.top(2) == result.actions[:2]
    table = result.table(2)
    assert "| top 1 |" in table and "| bottom 2 |" in table and f"{result.utterances} utterances" in table


def test_utterances_cut_by_the_sequence_length_are_counted_not_scored(wordle_dataset):
    loaded, _ = known_heads(max_length=64)
    whole = top_advantage(loaded, wordle_dataset, episodes=24, batch_size=8)
    short, _ = known_heads(max_length=16)  # turn 1 is 8 tokens, turn 2 starts with a 6-token board: its word is cut
    cut = top_advantage(short, wordle_dataset, episodes=24, batch_size=8)
    assert cut.cut > 0 and cut.utterances < whole.utterances
    assert cut.utterances + cut.cut <= whole.utterances


def test_the_command_prints_the_table_and_refuses_an_agent_without_values(wordle_dataset, tmp_path, capsys):
    from trainers.cli.main import main

    for algorithm in ("cql", "bc"):
        train(algorithm, config(algorithm, wordle_dataset, tmp_path / algorithm, steps=1), progress=False)
    capsys.readouterr()
    main(["top-advantage", "--agent", str(tmp_path / "cql" / "checkpoint"), "--dataset", wordle_dataset,
          "--episodes", "10", "--top", "3", "--out", str(tmp_path / "top.md")])
    shown = capsys.readouterr().out
    assert "| top 3 |" in shown and "| bottom 3 |" in shown
    assert (tmp_path / "top.md").read_text().count("| top ") == 3
    with pytest.raises(ValueError, match="'bc' checkpoint has no value heads"):
        main(["top-advantage", "--agent", str(tmp_path / "bc" / "checkpoint"), "--dataset", wordle_dataset])
