"""MALT with several agents: model groups, BC on an agent's turns, a team of language models playing two-role
Wordle, and a per-agent MALT round that trains each model group on its own agents' pairs only."""

import json

import numpy as np
import pytest
import torch

from loggers import read_episodes
from loggers.record import record
from rlds_lang.wordle_roles.env import ProposerCheckerEnv
from rlds_lang.wordle_roles.policies import scripted_team
from trainers.algorithms.bc import BCConfig
from trainers.algorithms.malt.team import agent_turns, fit_turns, parse_groups, play_team, team_policy
from trainers.algorithms.malt.team_rounds import TeamMALTConfig, TeamRound, malt_team_round
from trainers.core.checkpoint import read_checkpoint_config
from trainers.core.model import ModelConfig

torch.set_num_threads(1)
SMALL = ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=512)


def test_model_groups():
    assert parse_groups("shared", 2) == parse_groups("0+1", 2) == [(0, 1)]
    assert parse_groups("separate", 2) == parse_groups("0,1", 2) == [(0,), (1,)]
    with pytest.raises(ValueError, match="exactly one group"):
        parse_groups("0,0+1", 2)
    with pytest.raises(ValueError, match="expected agents joined"):
        parse_groups("proposer", 2)


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    folder = tmp_path_factory.mktemp("roles") / "logs"
    record(ProposerCheckerEnv(), scripted_team("medium", "medium"), 4, folder, progress=False)
    return list(read_episodes(folder))


def test_agent_turns_are_the_agent_s_own_actions_after_the_whole_history(played):
    proposer, checker = agent_turns(played, [0]), agent_turns(played, [1])
    both = agent_turns(played, [0, 1])
    assert len(both) == len(proposer) + len(checker) == sum(len(e["steps"]) - 1 for e in played)
    assert {t.response for t in checker} <= {"accept", "reject"} and all(len(t.response) == 5 for t in proposer)
    assert all(t.observations[-1].startswith("check") for t in checker)
    assert all(len(t.observations) == len(t.actions) + 1 for t in both)


def _start(tmp_path, turns, name):
    config = BCConfig(out=str(tmp_path / name), model=SMALL, steps=2, batch_size=4, max_length=512, seed=0)
    return str(fit_turns(config, turns))


def test_fit_turns_writes_a_playable_checkpoint(tmp_path, played):
    checkpoint = _start(tmp_path, agent_turns(played, [0, 1]), "bc")
    assert read_checkpoint_config(checkpoint)[0] == "bc"
    env = ProposerCheckerEnv()
    team = team_policy(env, [(0, 1)], [checkpoint])
    results = play_team(ProposerCheckerEnv, team, [1, 2, 3], batch=2)
    assert results.shape == (3, 3)
    assert np.all((-6.0 <= results[:, 0]) & (results[:, 0] <= 0.0))
    low = [r[0] for r in env.agent_reward_ranges()]
    assert np.all(results[:, 1:] >= low) and np.all(results[:, 1:] <= 0.0)
    again = play_team(ProposerCheckerEnv, team_policy(env, [(0, 1)], [checkpoint]), [1, 2, 3], batch=3)
    np.testing.assert_array_equal(results, again)  # seeded games: the same whatever the batch


def _pairs_trained(round_dir, k):
    """The pairs the DPO run of group ``k`` trained on (its ``config.json``)."""
    return json.loads((round_dir / f"train_g{k}" / "config.json").read_text())["pairs"]


def test_one_model_group_or_two_train_the_right_agents(tmp_path, played):
    start = _start(tmp_path, agent_turns(played, [0, 1]), "bc")
    env = ProposerCheckerEnv()
    config = TeamMALTConfig(trees=3, branching=2, branch_depth=4, pair_method="interval",
                            interval_threshold_proportion=0.01, dpo_epochs=1, dpo_batch_size=4)
    shared = malt_team_round(config, env, [(0, 1)], [start], 0, tmp_path / "shared")
    separate = malt_team_round(config, env, [(0,), (1,)], [start, start], 0, tmp_path / "separate")
    # the same seeded trees: the shared group trains on both agents' pairs, each separate group on its own agent's
    assert shared.trained_on[0]["0"] > 0 and shared.trained_on[0]["1"] > 0
    assert separate.trained_on == [{"0": shared.trained_on[0]["0"]}, {"1": shared.trained_on[0]["1"]}]
    assert _pairs_trained(tmp_path / "shared", 0) == sum(shared.trained_on[0].values())
    assert [_pairs_trained(tmp_path / "separate", k) for k in (0, 1)] == [separate.trained_on[0]["0"],
                                                                        separate.trained_on[1]["1"]]
    assert len(shared.checkpoints) == 1 and len(separate.checkpoints) == 2
    assert all(c.endswith(f"train_g{k}/checkpoint") for k, c in enumerate(separate.checkpoints))
    for k in (0, 1):
        lm = torch.load(f"{separate.checkpoints[k]}/model.pt", weights_only=True)
        first = torch.load(f"{start}/model.pt", weights_only=True)
        assert any(not torch.equal(lm[n], first[n]) for n in lm)  # each group's model moved
    shared.save(tmp_path / "shared")
    assert TeamRound.load(tmp_path / "shared") == shared
