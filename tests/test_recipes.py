"""rlds_lang.wordle.recipes: branches replay their parent exactly, also when the env redraws the hidden word."""

import copy

import numpy as np
import pytest

from loggers import record_and_read
from rlds_lang.wordle.policies import make_policy
from loggers.wordle_recipes import play_shard
from rlds_lang.wordle.recipes import (BranchPrefixError, BranchHook, Recipe, Shard, TaggedWordleEnv, TakeoverPolicy,
                                      check_branch_prefix)

# The ILQL MDP: the hidden word is redrawn from the env's RNG after every wrong guess.
RECIPE = Recipe("adv", "optimal", episodes=None, mode="adversarial_resample", rule="ilql", branch_policy="wrong")


@pytest.fixture(scope="module")
def played():
    """Two optimal games (answers 0 and 1 of the official list) and their branches, as play_shard yields them."""
    episodes = list(play_shard(Shard(RECIPE, 0, 0, 2)))
    parents = [e for e in episodes if int(e["branch_turn"]) == -1]
    branches = [e for e in episodes if int(e["branch_turn"]) >= 0]
    return parents, branches


def test_branches_replay_their_parent(played):
    parents, branches = played
    by_id = {p["episode_id"]: p for p in parents}
    assert [p["initial_answer"] for p in parents] == ["aback", "abase"]
    assert len(branches) == sum(len(p["steps"]) - 1 for p in parents)  # one branch per turn
    assert any(p["answer"] != p["initial_answer"] for p in parents)  # the env really redrew the word
    for branch in branches:
        parent, turn = by_id[branch["parent_episode_id"]], int(branch["branch_turn"])
        assert int(branch["seed"]) == int(parent["seed"]) and branch["initial_answer"] == parent["initial_answer"]
        assert [s["action"] for s in branch["steps"][:turn]] == [s["action"] for s in parent["steps"][:turn]]
        for mine, theirs in zip(branch["steps"][:turn + 1], parent["steps"][:turn + 1]):
            assert mine["observation"]["text"] == theirs["observation"]["text"]
            np.testing.assert_array_equal(mine["observation"]["feedback"], theirs["observation"]["feedback"])
        check_branch_prefix(parent, branch)
    assert {int(b["branch_turn"]) for b in branches} >= {0, 1, 2}


def test_check_branch_prefix_names_the_episodes(played):
    parents, branches = played
    branch = copy.deepcopy(next(b for b in branches if int(b["branch_turn"]) == 2))
    parent = next(p for p in parents if p["episode_id"] == branch["parent_episode_id"])
    branch["steps"][2]["observation"]["feedback"] = np.full(5, 2, np.int8)
    with pytest.raises(BranchPrefixError, match=rf"branch {branch['episode_id']} \(parent {parent['episode_id']}, "
                                                r"branch_turn 2\): step 2 observation differs"):
        check_branch_prefix(parent, branch)
    branch["steps"][1]["action"] = "zzzzz"
    with pytest.raises(BranchPrefixError, match="step 1 action differs"):
        check_branch_prefix(parent, branch)


def test_other_seeds_would_break_the_prefix(played):
    """Why branches take their parent's seed: with the old ``seed + j`` seeds the env redraws other words."""
    parents, _ = played
    plan = [(p, k) for p in parents for k in range(1, len(p["steps"]) - 1)]
    policy = TakeoverPolicy(make_policy("wrong", rule="ilql"))
    env = TaggedWordleEnv(mode="adversarial_resample", rule="ilql")
    branches = record_and_read(env, policy, len(plan), seed=100, before_episode=BranchHook(policy, plan))
    broken = 0
    for (parent, _), branch in zip(plan, branches, strict=True):
        try:
            check_branch_prefix(parent, branch)
        except BranchPrefixError:
            broken += 1
    assert broken > 0
