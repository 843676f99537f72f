"""Online %BC: every round is an RLDS log folder and a TFDS dataset, the kept fraction is honoured, later
rounds are played by the previous round's model, and a rerun with more rounds continues at the next round
exactly as an uninterrupted run."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import torch

from loggers import read_episodes
from rlds_lang.schema import check_episode
from rlds_lang.wordle.words import lmrl_gym_words
from trainers.algorithms.online_pbc import OnlinePBCConfig, round_dir, run_online_pbc
from trainers.algorithms.registry import load_agent_model
from trainers.cli.main import main
from trainers.core.model import ModelConfig
from transforms.loading import load
from transforms.selection import filter_top_p

TINY = ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=128)


def tiny(out, rounds: int) -> OnlinePBCConfig:
    return OnlinePBCConfig(out=str(out), rounds=rounds, games_per_round=10, steps=3, batch_size=4, lr=3e-3,
                           warmup_steps=0, log_every=1, checkpoint_every=1000, shuffle_buffer=16, model=TINY,
                           max_length=128)


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight")
    return out, run_online_pbc(tiny(out, rounds=2), progress=False)


def test_each_round_is_an_rlds_dataset_and_keeps_its_top_fraction(straight):
    out, summaries = straight
    assert [s["round"] for s in summaries] == [0, 1]
    words = set(lmrl_gym_words().words)
    for k, summary in enumerate(summaries):
        episodes = list(read_episodes(round_dir(tiny(out, 2), k) / "logs"))
        assert len(episodes) == 10 and summary["games"] == 10
        for ep in episodes:
            check_episode(ep)
            assert {s["action"] for s in ep["steps"][:-1]} <= words
        returns = np.array([sum(s["reward"] for s in ep["steps"]) for ep in episodes])
        assert summary["mean_return"] == pytest.approx(returns.mean())
        assert summary["kept"] == math.ceil(0.3 * 10) == 3
        assert summary["kept_min_return"] == sorted(returns)[-3]
        recorded = json.loads((round_dir(tiny(out, 2), k) / "recorded.json").read_text())["seconds"]
        trained = torch.load(round_dir(tiny(out, 2), k) / "bc" / "checkpoint" / "trainer_state.pt",
                             weights_only=False)["train_seconds"]  # this round's own, not the previous rounds'
        assert 0 < trained < summary["seconds"] == pytest.approx(recorded + trained)
        built = json.loads((round_dir(tiny(out, 2), k) / "bc" / "checkpoint" / "config.json").read_text())
        dataset = built["config"]["dataset"]
        assert sum(1 for _ in filter_top_p(load(dataset), built["config"]["top_p"])) == 3  # what BC trained on
    assert episodes[0]["policy"] == "online_pbc_round001"  # round 1 is played by round 0's model
    first = list(read_episodes(round_dir(tiny(out, 2), 0) / "logs"))
    assert first[0]["policy"] == "random_mixture"
    assert load_agent_model(out / "checkpoint").step == 3
    assert json.loads((out / "rounds.json").read_text()) == summaries


def test_more_rounds_continue_at_the_next_round(straight, tmp_path):
    """A run stopped after round 0 (its folder as the straight run left it), continued with --rounds 2 from the
    command line: round 0 is not redone and round 1 ends where the uninterrupted run did."""
    out, summaries = straight
    shutil.copytree(round_dir(tiny(out, 2), 0), round_dir(tiny(tmp_path, 2), 0))
    first = (round_dir(tiny(tmp_path, 2), 0) / "round.json").stat().st_mtime_ns
    main(["train", "online_pbc", "--out", str(tmp_path), "--rounds", "2", "--games_per_round", "10", "--steps", "3",
          "--batch_size", "4", "--lr", "3e-3", "--warmup_steps", "0", "--log_every", "1", "--shuffle_buffer", "16",
          "--model.n_layer", "1", "--model.n_embd", "32", "--model.n_head", "2", "--model.n_positions", "128",
          "--max_length", "128", "--no-progress"])
    assert (round_dir(tiny(tmp_path, 2), 0) / "round.json").stat().st_mtime_ns == first  # round 0 not redone
    continued = json.loads((tmp_path / "rounds.json").read_text())
    assert continued[0] == summaries[0]
    assert {**continued[1], "seconds": None} == {**summaries[1], "seconds": None}  # all but the time it took
    a = load_agent_model(out / "checkpoint").model.state_dict()
    b = load_agent_model(tmp_path / "checkpoint").model.state_dict()
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-7, msg=key)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="top_p must be in"):
        OnlinePBCConfig(top_p=0.0)
    with pytest.raises(ValueError, match="rounds and games_per_round"):
        OnlinePBCConfig(rounds=0)


def test_each_round_trains_on_from_the_previous_round_s_weights_and_optimizer(straight):
    """Round 1's BC continues round 0's run: its Adam state has counted both rounds' steps (a round started from
    scratch would hold only its own 3), and at the start of round 1 the weights were round 0's."""
    out, _ = straight
    states = [torch.load(round_dir(tiny(out, 2), k) / "bc" / "checkpoint" / "trainer_state.pt", weights_only=False)
              for k in (0, 1)]
    adam_steps = [{float(s["step"]) for s in state["optimizer"]["state"].values()} for state in states]
    assert adam_steps == [{3.0}, {6.0}]
    assert [state["step"] for state in states] == [3, 3]  # each round's own step count starts at 0
