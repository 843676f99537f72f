"""rlds_lang.wordle.recipes: branches replay their parent exactly, also when the env redraws the hidden word."""

import copy

import numpy as np
import pytest

from loggers import record_and_read
from loggers.wordle_recipes import play_shard
from rlds_lang.wordle.policies import make_policy
from rlds_lang.wordle.recipes import (
    BranchHook,
    BranchPrefixError,
    Recipe,
    Shard,
    TaggedWordleEnv,
    TakeoverPolicy,
    branch_plan,
    check_branch_prefix,
)

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
    plan = [(p, k, 0) for p in parents for k in range(1, len(p["steps"]) - 1)]
    policy = TakeoverPolicy(make_policy("wrong", rule="ilql"))
    env = TaggedWordleEnv(mode="adversarial_resample", rule="ilql")
    branches = record_and_read(env, policy, len(plan), seed=100, before_episode=BranchHook(policy, plan))
    broken = 0
    for (parent, _, _), branch in zip(plan, branches, strict=True):
        try:
            check_branch_prefix(parent, branch)
        except BranchPrefixError:
            broken += 1
    assert broken > 0


def _fake_parent(turns: int, name: str = "p") -> dict:
    """An RLDS-like parent of ``turns`` moves (plus the terminal step): what ``branch_plan`` reads."""
    return {"episode_id": name, "steps": [{"action": f"w{k}"} for k in range(turns + 1)]}


def test_branch_plan_every_turn_by_default_and_only_the_named_turn_when_set():
    short, long = _fake_parent(2, "short"), _fake_parent(5, "long")
    assert [(p["episode_id"], t, c) for p, t, c in branch_plan(RECIPE, [short, long])] == [
        ("short", 0, 0), ("short", 1, 0), *[("long", t, 0) for t in range(5)]]
    section5 = Recipe("s5", "optimal", episodes=2, branch_policy="wrong", branch_at_turn=2, branches_per_turn=3,
                      branch_min_turns=4)
    assert [(p["episode_id"], t, c) for p, t, c in branch_plan(section5, [short, _fake_parent(3), long])] == [
        ("long", 2, 0), ("long", 2, 1), ("long", 2, 2)]  # the 2- and 3-turn games are too short
    at_end = Recipe("e", "optimal", episodes=2, branch_policy="wrong", branch_at_turn=3)
    assert [t for _, t, _ in branch_plan(at_end, [_fake_parent(3), _fake_parent(4)])] == [3]  # turn 3 < 4 turns only


@pytest.mark.parametrize("kwargs, match", [
    (dict(branch_at_turn=-1, branch_policy="wrong"), "branch_at_turn"),
    (dict(branches_per_turn=0, branch_policy="wrong"), "branches_per_turn"),
    (dict(branch_min_turns=-2, branch_policy="wrong"), "branch_min_turns"),
    (dict(branches_per_turn=2), "need a branch_policy"),
])
def test_recipe_refuses_bad_branch_options_naming_the_recipe(kwargs, match):
    with pytest.raises(ValueError, match=match) as error:
        Recipe("bad", "optimal", episodes=1, **kwargs)
    assert "'bad'" in str(error.value)


def test_several_branches_from_one_state_differ_and_replay_a_parent_whose_answer_was_drawn():
    """Copies of a branch reseed the takeover (so they differ); parents whose environment drew its own answer
    (``episodes`` set) have branches that draw it again from the same seed and replay their prefix exactly."""
    recipe = Recipe("s5", "optimal", episodes=6, mode="adversarial_resample", rule="ilql", branch_policy="wrong",
                    branch_at_turn=2, branches_per_turn=4, branch_min_turns=3)
    episodes = list(play_shard(Shard(recipe, 0, 0, 6)))  # play_shard checks every branch's prefix itself
    parents = {e["episode_id"]: e for e in episodes if int(e["branch_turn"]) == -1}
    branches = [e for e in episodes if int(e["branch_turn"]) >= 0]
    long_enough = [p for p in parents.values() if len(p["steps"]) - 1 >= 3]
    assert long_enough and len(branches) == 4 * len(long_enough)
    assert len({p["initial_answer"] for p in parents.values()}) > 1  # answers drawn, not given
    for parent in long_enough:
        mine = [b for b in branches if b["parent_episode_id"] == parent["episode_id"]]
        assert {int(b["branch_turn"]) for b in mine} == {2}
        assert all(b["initial_answer"] == parent["initial_answer"] for b in mine)
        assert len({tuple(s["action"] for s in b["steps"][2:]) for b in mine}) > 1  # the copies played differently
