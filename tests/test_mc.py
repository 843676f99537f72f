"""The Monte-Carlo-returns trainer (``mc``): training lowers the loss, Q and V regress onto the discounted
returns-to-go, resumption is exact, and it prefers a rare rewarded action that BC rarely takes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from rlds_lang.tokenizers import make_tokenizer
from tests.test_trainers import config, metrics
from tests.toy_data import build_dataset, rare_best_action, wordle_like
from trainers.algorithms.ilql.losses import transitions
from trainers.algorithms.ilql.mc import MCConfig, MCModel
from trainers.algorithms.registry import (
    algorithm_by_name,
    load_agent_model,
    load_policy,
    train,
)
from trainers.core.loop import DistInfo, training_batches


@pytest.fixture(scope="module")
def wordle_dataset(tmp_path_factory) -> str:
    return build_dataset(wordle_like(48, seed=3), tmp_path_factory.mktemp("wordle_like"))


def test_registered_and_loaded_like_ilql(wordle_dataset, tmp_path):
    assert algorithm_by_name("mc").config_class is MCConfig and algorithm_by_name("mc").model_class is MCModel
    cfg = config("mc", wordle_dataset, tmp_path / "mc", steps=30)
    torch.manual_seed(cfg.seed)
    before = {k: v.clone() for k, v in MCModel(cfg, make_tokenizer("wordle")).state_dict().items()}
    train("mc", cfg, progress=False)
    losses = [row["loss"] for row in metrics(tmp_path / "mc")]
    assert len(losses) == 30 and sum(losses[-5:]) / 5 < 0.9 * sum(losses[:5]) / 5, losses
    loaded = load_agent_model(tmp_path / "mc" / "checkpoint")
    assert loaded.algorithm == "mc" and loaded.heads is not None and loaded.step == 30
    state = loaded.model.state_dict()
    for head in ("q1", "q2"):  # trained, and the decoding copies follow the online heads exactly
        assert not torch.equal(state[f"heads.{head}.0.weight"], before[f"heads.{head}.0.weight"])
        assert torch.equal(state[f"heads.target_{head}.0.weight"], state[f"heads.{head}.0.weight"])
    policy = load_policy(tmp_path / "mc" / "checkpoint", allowed_actions=["crane", "slate"])
    assert policy.beta == 16.0 and policy.info["algorithm"] == "mc"


def test_targets_are_the_discounted_returns_to_go(wordle_dataset):
    cfg = config("mc", wordle_dataset, "unused", gamma=0.5)
    tokenizer = make_tokenizer("wordle")
    batch = next(training_batches(cfg, tokenizer, DistInfo()))
    model = MCModel(cfg, tokenizer)
    v = torch.zeros(batch["input_ids"].shape[0], batch["input_ids"].shape[1] - 1)
    mask = batch["action_mask"][:, 1:].bool()
    steps = transitions(batch, tokenizer.eoo_id, tokenizer.eoa_id)
    q_targets, v_targets = model.regression_targets(batch, steps, torch.zeros_like(batch["rewards"]), v)
    assert not model.bootstraps  # whole-episode returns: a cut sequence's last action keeps its target
    assert torch.equal(q_targets, v_targets)
    # recompute G_t = r_t + gamma * G_{next action token} along each sequence's action tokens
    rewards = batch["rewards"][:, 1:].double()
    for row in range(rewards.shape[0]):
        positions = torch.nonzero(mask[row]).flatten().tolist()
        if not positions or bool(batch["truncated"][row]):
            continue
        expected, running = {}, 0.0
        for t in reversed(positions):
            running = float(rewards[row, t]) + 0.5 * running
            expected[t] = running
        for t in positions:
            assert float(q_targets[row, t]) == pytest.approx(expected[t], abs=1e-5)


def test_resume_from_checkpoint_gives_the_same_next_steps(wordle_dataset, tmp_path):
    straight = config("mc", wordle_dataset, tmp_path / "straight", steps=4)
    train("mc", straight, progress=False)
    interrupted = config("mc", wordle_dataset, tmp_path / "resumed", steps=2, checkpoint_every=2)
    train("mc", interrupted, progress=False)
    train("mc", dataclasses.replace(interrupted, steps=4), progress=False)
    a, b = metrics(tmp_path / "straight"), metrics(tmp_path / "resumed")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for step in (2, 3):
        assert b[step]["loss"] == pytest.approx(a[step]["loss"], rel=1e-6, abs=1e-7), (a[step], b[step])
    final_a = load_agent_model(tmp_path / "straight" / "checkpoint").model.state_dict()
    final_b = load_agent_model(tmp_path / "resumed" / "checkpoint").model.state_dict()
    for key in final_a:
        torch.testing.assert_close(final_b[key], final_a[key], rtol=1e-5, atol=1e-7, msg=key)


@pytest.fixture(scope="module")
def rare_mc(tmp_path_factory):
    """MC trained on one-turn episodes: 10% take ``ab`` (reward 0), 90% ``ba`` (reward -1)."""
    root = tmp_path_factory.mktemp("rare")
    dataset = build_dataset(rare_best_action(n_good=12, n_bad=108), root / "data")
    train("mc", config("mc", dataset, root / "mc", steps=150, batch_size=24, lr=2e-3, log_every=50,
                       shuffle_buffer=120, seed=1), progress=False)
    return dataset, load_agent_model(Path(root / "mc" / "checkpoint"))


@pytest.fixture(scope="module")
def briefly_trained_mc(tmp_path_factory):
    """MC after 5 steps on the same data as ``rare_mc``: values that differ between moves, learned or not."""
    root = tmp_path_factory.mktemp("brief")
    dataset = build_dataset(rare_best_action(n_good=12, n_bad=108), root / "data")
    train("mc", config("mc", dataset, root / "mc", steps=5, batch_size=24, lr=2e-3, log_every=5, shuffle_buffer=120,
                       seed=1), progress=False)
    return dataset, load_agent_model(Path(root / "mc" / "checkpoint"))


def test_mc_prefers_a_rare_rewarded_action(rare_mc):
    """Q of the first letter learns the returns straight from the data, so MC's perturbed policy takes ``ab``
    although BC's logits favour ``ba``."""
    from trainers.core.decoding import next_token_logits

    _, loaded = rare_mc
    tokenizer = make_tokenizer("wordle")
    prompt = torch.tensor([tokenizer.encode_prompt([""], [])])
    a, b = tokenizer.encode("a")[0], tokenizer.encode("b")[0]

    def p_good(beta: float) -> float:
        logits = next_token_logits(loaded.lm, loaded.heads, prompt, torch.ones_like(prompt), beta)[0]
        return torch.softmax(logits[[a, b]], dim=0)[0].item()

    assert p_good(0.0) < 0.4, "the LM head alone imitates the data (mostly 'ba')"
    assert p_good(16.0) > 0.7, "beta * (Q - V) should turn the policy to the rewarded 'ab'"


def test_diagnostics_see_what_the_values_learned(rare_mc, tmp_path):
    from trainers.evaluation.diagnostics import (
        ranking_fraction,
        utterance_values,
        value_calibration,
    )

    dataset, loaded = rare_mc
    calibration = value_calibration(loaded, dataset, split="train", episodes=60, batch_size=16)
    assert len(calibration.v0_pred) == 60 and len(calibration.q_pred) == 60 * 3  # 'a', 'b', [EOA] per game
    # every game starts in the same state: V(s_0) predicts the data's mean return there (-0.9)
    assert abs(calibration.v0_pred.mean() - calibration.v0_return.mean()) < 0.25
    assert np.corrcoef(calibration.q_pred, calibration.q_return)[0, 1] > 0.5  # Q tracks the returns-to-go
    assert "| V(s_0) vs game return | 60 |" in calibration.table() and "— (one value" in calibration.table()
    assert calibration.plot(tmp_path / "calibration.png").stat().st_size > 1000
    good, bad = utterance_values(loaded, ([""], []), ["ab", "ba"])
    assert good > bad
    assert ranking_fraction(loaded, [([""], [])] * 2, better=["ab", "ba"], worse=["ba", "ab"]) == 0.5
    episodes = [{"policy": b"optimal", "steps": [{"action": b"ab"}]}, {"policy": "replay", "steps": [{"action": "ba"}]},
                {"policy": "replay", "steps": [{"action": "ab"}]}, {"policy": "replay", "steps": [{"action": "ba"}]}]
    from trainers.evaluation.diagnostics import first_move_pairs, first_move_ranking

    assert first_move_pairs(episodes) == ("ab", ["ba", "ba"])
    assert first_move_ranking(loaded, episodes) == 1.0  # Q ranks the rewarded 'ab' above every 'ba'
    with pytest.raises(ValueError, match="no episode of policy 'expert'"):
        first_move_pairs(episodes, better_policy="expert")
    with pytest.raises(ValueError, match="one \\(better, worse\\) pair per state"):
        ranking_fraction(loaded, [([""], [])], better=["ab"], worse=[])


def test_branch_pairs_rank_the_parent_move_against_the_branch_move(briefly_trained_mc):
    from trainers.evaluation.diagnostics import (
        branch_pairs,
        ranking_fraction,
        utterance_values,
    )

    def step(text, action):
        return {"observation": {"text": text.encode()}, "action": action.encode()}

    parent = {"episode_id": b"p", "parent_episode_id": b"", "branch_turn": -1,
              "steps": [step("", "ab"), step("x", "ab"), step("y", "")]}
    branches = [{"episode_id": f"b{i}".encode(), "parent_episode_id": b"p", "branch_turn": 1,
                 "steps": [step("", "ab"), step("x", move), step("z", "")]} for i, move in enumerate(["ba", "ab"])]
    histories, better, worse = branch_pairs([*branches, parent])  # a branch may come before its parent
    assert (better, worse) == (["ab"], ["ba"])  # the branch that repeated its parent's move is left out
    assert [[o["text"] for o in histories[0][0]], histories[0][1]] == [[b"", b"x"], ["ab"]]
    _, loaded = briefly_trained_mc
    assert np.array_equal(utterance_values(loaded, ([{"text": b""}], []), ["ab", "ba"]),
                          utterance_values(loaded, ([""], []), ["ab", "ba"]))  # RLDS observations read as their text
    q_better, q_worse = utterance_values(loaded, histories[0], better + worse)
    assert q_better != q_worse
    ranked_right = float(q_better > q_worse)  # the one pair counts as ranked right exactly when Q says so
    assert ranking_fraction(loaded, histories, better, worse) == ranked_right
    assert ranking_fraction(loaded, histories, worse, better) == 1.0 - ranked_right
    with pytest.raises(ValueError, match="branch b0: its parent 'p' is not among the episodes"):
        branch_pairs(branches)


def test_train_help_lists_mc_and_online_pbc(capsys):
    from trainers.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code == 0
    shown = capsys.readouterr().out
    assert "mc" in shown and "online_pbc" in shown and "%BC" in shown
