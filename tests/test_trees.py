"""Response trees: ids and rebuild, expected rewards on a hand-made tree, both pair selectors, and recording
every root-to-leaf path of grown Wordle trees through loggers (read back, rebuilt, same trees)."""

import numpy as np
import pytest

from loggers import read_episodes
from loggers.trees import TreeSpec, branch_seed, grow_tree, record_trees
from rlds_lang.env import LanguageEnv, text_spec
from rlds_lang.trees import (
    ResponseTree,
    TreeError,
    expected_rewards,
    pair_histories,
    pseudo_parent_id,
    rebuild_trees,
    select_pairs,
    tree_step_fields,
)
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import RandomMixturePolicy

# n0 (-1) -> n2 (0, leaf), n3 (-1) -> n4 (0, leaf), n5 (-1, leaf);  n1 (-1) -> n6 (-1, leaf)
PARENT = [-1, -1, 0, 0, 1, 3, 3]
REWARD = [-1.0, -1.0, 0.0, -1.0, -1.0, 0.0, -1.0]
ACTION = ["a0", "a1", "a2", "a3", "a6", "a4", "a5"]


def hand_tree() -> ResponseTree:
    # indices: 0=n0 1=n1 2=n2 3=n3 4=n6 5=n4 6=n5 (parents before children)
    return ResponseTree("t", np.array(PARENT), np.array(REWARD), list(ACTION))


def test_expected_rewards_weigh_each_rollout_equally():
    """MALT's reference trainer: a node's expected reward is the mean over the rollouts (leaves) below it."""
    values = expected_rewards(hand_tree())[:, 0]
    # leaves: n2 -1, n6 -2, n4 -2, n5 -3; n3 = mean(-2, -3); n0 = mean(-1, -2, -3) = -2 over its three leaves (the
    # mean of its children, mean(-1, -2.5) = -1.75, would weigh n2's early end like n3's whole subtree); n1 = -2
    np.testing.assert_allclose(values, [-2.0, -2.0, -1.0, -2.5, -2.0, -2.0, -3.0])


def test_expected_rewards_per_agent_vector_rewards():
    tree = ResponseTree("t", np.array([-1, 0, 0]), np.array([[0.0, 1.0], [1.0, 0.0], [3.0, 0.0]]), ["x", "y", "z"],
                        agent=np.array([0, 1, 1]))
    np.testing.assert_allclose(expected_rewards(tree), [[2.0, 1.0], [1.0, 1.0], [3.0, 1.0]])


def test_parents_must_come_first():
    with pytest.raises(TreeError, match="parents must come before"):
        ResponseTree("t", np.array([1, -1]), np.zeros(2), ["a", "b"])


def test_positive_negative_selector():
    tree = hand_tree()
    values = expected_rewards(tree)
    pairs = select_pairs(tree, values, "positive_negative", (-3.0, 0.0), seed=0)  # threshold -1.5
    assert list(zip(pairs.chosen, pairs.rejected)) == [(2, 3)]  # only n0's children straddle -1.5
    pairs = select_pairs(tree, values, "positive_negative", (-3.0, 0.0), seed=0, threshold=-2.2)
    # root children (-2, -2) are both above -2.2: no pair there; n0's and n3's children straddle it
    assert sorted(zip(pairs.chosen.tolist(), pairs.rejected.tolist())) == [(2, 3), (5, 6)]
    positive, negative = pairs.flags(tree.num_nodes)
    assert positive[5] and negative[6] and not positive[6]
    # at -1.9 the root children are both below (leaf means -2, -2): averaging children instead (n0 = -1.75) would
    # pair n0 over n1 there
    pairs = select_pairs(tree, values, "positive_negative", (-3.0, 0.0), seed=0, threshold=-1.9)
    assert (0, 1) not in set(zip(pairs.chosen.tolist(), pairs.rejected.tolist()))


def test_positive_negative_keeps_values_at_the_threshold_as_positive():
    # Wordle-like: first responses worth -3 (exactly the mid-point of (-6, 0)) and -5
    tree = ResponseTree("w", np.full(3, -1), np.array([-3.0, -5.0, -3.0]), ["a", "b", "c"])
    values = expected_rewards(tree)
    pairs = select_pairs(tree, values, "positive_negative", (-6.0, 0.0), seed=0)
    assert len(pairs.chosen) == 1 and tree.actions[pairs.chosen[0]] in ("a", "c") and pairs.rejected.tolist() == [1]
    strict = select_pairs(tree, values, "positive_negative", (-6.0, 0.0), seed=0, strict_threshold=True)
    assert len(strict.chosen) == 0  # the earlier rule: -3 is neither side


def test_siblings_with_the_same_response_never_form_a_pair():
    # three first responses: two copies of "a" (values 0 and -2) and one "b" (value -1); by value alone the
    # copies of "a" are the widest pair, but they are one decision, so only ("a", "b") pairs qualify
    tree = ResponseTree("d", np.full(3, -1), np.array([0.0, -2.0, -1.0]), ["a", "a", "b"])
    values = expected_rewards(tree)
    for method in ("interval", "positive_negative"):
        for seed in range(20):
            pairs = select_pairs(tree, values, method, (-2.0, 0.0), seed=seed, threshold=-0.5)
            for c, r in zip(pairs.chosen, pairs.rejected):
                assert tree.actions[c] != tree.actions[r]
                assert values[c, 0] > values[r, 0]
    copies = ResponseTree("e", np.full(2, -1), np.array([0.0, -2.0]), ["a", "a"])
    assert len(select_pairs(copies, expected_rewards(copies), "interval", (-2.0, 0.0)).chosen) == 0


def test_interval_selector_and_seeded_sampling():
    tree = hand_tree()
    values = expected_rewards(tree)
    pairs = select_pairs(tree, values, "interval", (-3.0, 0.0), seed=0, interval_threshold_proportion=0.1)
    # gap 0.3: root children differ by 0.25 (no pair); n0's by 1.5 and n3's by 1.0 (one pair each)
    assert sorted(zip(pairs.chosen.tolist(), pairs.rejected.tolist())) == [(2, 3), (5, 6)]
    assert sorted(pairs.parent.tolist()) == [0, 3]
    histories = {c: prefix for prefix, c, _ in pair_histories(tree, pairs)}
    assert histories == {2: [0], 5: [0, 3]}
    # many siblings: the draw depends on the seed only
    wide = ResponseTree("w", np.full(8, -1), np.arange(8.0), [str(i) for i in range(8)])
    v = expected_rewards(wide)
    draws = [tuple(select_pairs(wide, v, "interval", (0.0, 7.0), seed=s).chosen) for s in (1, 1, 2, 3, 4)]
    assert draws[0] == draws[1] and len(set(draws)) > 1
    with pytest.raises(ValueError, match="unknown method"):
        select_pairs(wide, v, "best_worst", (0.0, 7.0))


def _episodes_of(tree: ResponseTree, values) -> list[dict]:
    fields = tree_step_fields(tree, values, None)
    out = []
    for k, path in enumerate(tree.paths()):
        steps = [{"action": tree.actions[n], "reward": float(tree.rewards[n, 0]), "is_last": False, **fields[n]}
                 for n in path]
        out.append({"episode_id": f"e{k}", "steps": steps + [{"is_last": True}]})
    return out


def test_ids_and_rebuild_from_flat_episodes():
    tree = hand_tree()
    episodes = _episodes_of(tree, expected_rewards(tree))
    assert len(episodes) == 4 and episodes[0]["steps"][0]["parent_node_id"] == pseudo_parent_id("t") == "t/root"
    ids = {s["node_id"] for e in episodes for s in e["steps"][:-1]}
    assert len(ids) == tree.num_nodes  # one id per response, shared by every path through it
    (rebuilt,) = rebuild_trees(reversed(episodes))
    assert rebuilt.tree_id == "t"
    by_id = {i: n for n, i in enumerate(rebuilt.ids)}
    for n, i in enumerate(tree.ids):
        m = by_id[i]
        assert rebuilt.actions[m] == tree.actions[n] and rebuilt.rewards[m, 0] == tree.rewards[n, 0]
        p = tree.parent[n]
        assert (rebuilt.parent[m] == -1) if p < 0 else (rebuilt.ids[rebuilt.parent[m]] == tree.ids[p])
    np.testing.assert_allclose(sorted(expected_rewards(rebuilt)[:, 0]), sorted(expected_rewards(tree)[:, 0]))


def test_rebuild_rejects_inconsistent_nodes():
    tree = hand_tree()
    episodes = _episodes_of(tree, expected_rewards(tree))
    episodes[2]["steps"][0]["action"] = "other"
    with pytest.raises(TreeError, match="episode e2, step 0: node 't/n000000' differs"):
        rebuild_trees(episodes)
    with pytest.raises(TreeError, match="not a response-tree episode"):
        rebuild_trees([{"episode_id": "x", "steps": [{"action": "a", "reward": 0.0}]}])


def test_grow_tree_is_seeded_and_branches():
    env, policy = WordleEnv(), RandomMixturePolicy(prob_smart=0.5)
    spec = TreeSpec(branching=3, max_depth=2, reward_range=(-6.0, 0.0))
    a, b = grow_tree(env, policy, spec, 5, "x"), grow_tree(env, policy, spec, 5, "x")
    assert a.actions == b.actions and a.num_nodes == 12  # 3 first responses, 3 under each
    assert len(set(a.actions[:3])) > 1
    assert branch_seed(5, -1, 0) != branch_seed(5, -1, 1) != branch_seed(5, 0, 1)


class PeakedPolicy:
    """Says "crane" unless its seed is a multiple of 7 ("slate" then): a policy whose siblings are mostly copies."""

    def reset(self, seed):
        self.seed = seed

    def act(self, observations, actions):
        return "slate" if self.seed % 7 == 0 else "crane"

    def params(self):
        return {}


def test_distinct_tries_resample_repeated_siblings():
    env = WordleEnv()
    plain = grow_tree(env, PeakedPolicy(), TreeSpec(branching=3, max_depth=1, reward_range=(-6.0, 0.0)), 4, "p")
    distinct = grow_tree(env, PeakedPolicy(), TreeSpec(branching=3, max_depth=1, reward_range=(-6.0, 0.0),
                                                        distinct_tries=50), 4, "p")
    assert plain.actions.count("crane") >= 2  # independent samples repeat the mode
    assert len(distinct.actions) == 3 and set(distinct.actions) == {"crane", "slate"}  # both the policy can say
    again = grow_tree(env, PeakedPolicy(), TreeSpec(branching=3, max_depth=1, reward_range=(-6.0, 0.0),
                                                     distinct_tries=50), 4, "p")
    assert again.actions == distinct.actions  # seeded
    with pytest.raises(ValueError, match="distinct_tries"):
        TreeSpec(distinct_tries=-1)


def test_record_trees_round_trip(tmp_path):
    spec = TreeSpec(branching=2, max_depth=None, reward_range=(-6.0, 0.0), pair_method="interval")
    result = record_trees(WordleEnv(), RandomMixturePolicy(prob_smart=1.0), spec, trees=2, data_dir=tmp_path / "logs",
                          seed=3, run_name="rt")
    episodes = list(read_episodes(tmp_path / "logs"))
    assert len(episodes) == result.num_paths == sum(len(t.paths()) for t in result.trees)
    first = episodes[0]
    assert first["tree_id"] == "rt-tree000000" and first["steps"][0]["parent_node_id"] == "rt-tree000000/root"
    assert first["steps"][-1]["node_id"] == "" and first["seed"] == 3
    rebuilt = {t.tree_id: t for t in rebuild_trees(episodes)}
    for tree in result.trees:
        values = dict(zip(tree.ids, expected_rewards(tree)[:, 0]))
        stored = {s["node_id"]: float(s["expected_reward"]) for e in episodes for s in e["steps"][:-1]
                  if e["tree_id"] == tree.tree_id}
        assert stored == pytest.approx(values)
        assert sorted(rebuilt[tree.tree_id].actions) == sorted(tree.actions)
    flagged = sum(bool(s["is_pair_positive"]) for e in episodes for s in e["steps"])
    assert result.num_pairs >= 1 and flagged >= result.num_pairs  # a flagged node shows in every path through it


def test_branch_depth_and_depth_limit(tmp_path):
    env, policy = WordleEnv(), RandomMixturePolicy(prob_smart=1.0)
    spec = TreeSpec(branching=3, branch_depth=1, reward_range=(-6.0, 0.0))
    tree = grow_tree(env, policy, spec, 2, "b")
    assert len(tree.paths()) == 3 and (tree.parent == -1).sum() == 3  # branches at the start only, then play on
    limited = TreeSpec(branching=2, max_depth=2, reward_range=(-6.0, 0.0))
    record_trees(env, RandomMixturePolicy(prob_smart=0.0), limited, trees=1, data_dir=tmp_path / "l", seed=1)
    episodes = list(read_episodes(tmp_path / "l"))
    assert len(episodes) == 4
    for episode in episodes:  # two responses, then the path is cut (truncated, not terminal)
        assert len(episode["steps"]) == 3 and not episode["steps"][-1]["is_terminal"]


def test_branch_from_grows_a_trunk_before_branching():
    env, policy = WordleEnv(), RandomMixturePolicy(prob_smart=0.0)
    tree = grow_tree(env, policy, TreeSpec(branching=2, branch_from=1, branch_depth=3, reward_range=(-6.0, 0.0)), 3, "t")
    assert (tree.parent == -1).sum() == 1  # one first response
    children = [int((tree.parent == node).sum()) for node in range(tree.num_nodes)]
    depth = np.zeros(tree.num_nodes, dtype=int)
    for node in range(tree.num_nodes):
        depth[node] = 0 if tree.parent[node] == -1 else depth[tree.parent[node]] + 1
    assert [c for c, d in zip(children, depth) if d in (0, 1)] == [2, 2, 2]  # branching at depths 1 and 2
    assert all(c <= 1 for c, d in zip(children, depth) if d >= 2)  # then each branch plays on alone
    assert len(tree.paths()) == 4
    with pytest.raises(ValueError, match="branch_from"):
        TreeSpec(branch_from=2, branch_depth=2)


def test_guide_example_runs():
    from tests.test_docs_run import guide_code, run_code

    paths, pairs, *_ = run_code(guide_code("dpo_malt.md"), "dpo_malt.md").split()
    assert int(paths) > 4 and int(pairs) > 0


class ProposeCheckEnv(LanguageEnv):
    """Two acting agents: agent 0 proposes a number, agent 1 answers 'ok' or 'no'; reward 1 when a number
    above 4 is accepted or a number up to 4 rejected (a toy generator/verifier pair)."""

    task_name = "propose_check"

    def observation_spec(self):
        return {"text": text_spec("text")}

    def acting_agent(self) -> int:
        return self._num_steps % 2

    def _reset(self):
        self.proposal = ""
        return {"text": "propose"}

    def _step(self, action):
        if self._num_steps == 0:
            self.proposal = action
            return {"text": f"check {action}"}, 0.0, False
        good = (int(self.proposal) > 4) == (action == "ok")
        return {"text": "done"}, float(good), True


class RandomChoice:
    """Agent 0 says a digit, agent 1 'ok' or 'no', at random (seeded)."""

    name = "random_choice"

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, observations, actions):
        options = [str(d) for d in range(10)] if not actions else ["ok", "no"]
        return options[self.rng.integers(len(options))]

    def params(self):
        return {}


def test_two_acting_agents(tmp_path):
    spec = TreeSpec(branching=3, reward_range=(0.0, 1.0), pair_method="positive_negative")
    result = record_trees(ProposeCheckEnv(), RandomChoice(), spec, trees=3, data_dir=tmp_path / "pc", seed=0)
    episodes = list(read_episodes(tmp_path / "pc"))
    assert len(episodes) == 27 and all(len(e["steps"]) == 3 for e in episodes)
    assert [int(s["agent"]) for s in episodes[0]["steps"]] == [0, 1, -1]
    pair_agents = set()
    for grown, rebuilt in zip(result.trees, rebuild_trees(episodes)):
        by_id = dict(zip(rebuilt.ids, rebuilt.agent.tolist()))
        assert [by_id[i] for i in grown.ids] == grown.agent.tolist() == [0] * 3 + [1] * 9
        values = expected_rewards(rebuilt)
        pairs = select_pairs(rebuilt, values, "positive_negative", (0.0, 1.0), seed=0)
        assert all(rebuilt.agent[c] == rebuilt.agent[r] == a for c, r, a in zip(pairs.chosen, pairs.rejected, pairs.agent))
        pair_agents |= set(pairs.agent.tolist())
    assert 1 in pair_agents  # the verifier's answers are paired among themselves


def test_docstring_examples():
    import doctest

    import rlds_lang.trees
    import trainers.algorithms.malt.expert_iteration

    for module in (rlds_lang.trees, trainers.algorithms.malt.expert_iteration):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def _two_agent_tree() -> ResponseTree:
    # agent 0 proposes "p1" or "p2"; under "p1" agent 1 answers "accept" or "reject". Rewards per agent [A=2]:
    # by agent 0's column "reject" looks better (-1 > -4), by agent 1's own column "accept" is (-1 > -5).
    rewards = np.array([[0.0, 0.0], [-3.0, -3.0], [-4.0, -1.0], [-1.0, -5.0]])
    return ResponseTree("m", np.array([-1, -1, 0, 0]), rewards, ["p1", "p2", "accept", "reject"],
                        agent=np.array([0, 0, 1, 1]))


def test_per_agent_values_differ_when_the_agents_rewards_differ():
    values = expected_rewards(_two_agent_tree())
    assert values.shape == (4, 2)
    np.testing.assert_allclose(values[:, 0], [-2.5, -3.0, -4.0, -1.0])
    np.testing.assert_allclose(values[:, 1], [-3.0, -3.0, -1.0, -5.0])


def test_pair_selection_uses_the_acting_agent_s_values():
    tree = _two_agent_tree()
    values = expected_rewards(tree)
    pairs = select_pairs(tree, values, "interval", (-6.0, 0.0), seed=0, interval_threshold_proportion=0.05)
    by_parent = {int(p): (tree.actions[c], tree.actions[r], int(a))
                 for p, c, r, a in zip(pairs.parent, pairs.chosen, pairs.rejected, pairs.agent)}
    assert by_parent[0] == ("accept", "reject", 1)  # agent 1's decision, judged by agent 1's column
    assert by_parent[-1] == ("p1", "p2", 0)  # agent 0's decision by agent 0's column: -2.5 vs -3.0


def test_positive_negative_uses_the_acting_agent_s_reward_range():
    # agent 1's returns lie in (-12, 0): its mid-point -6 separates -5 from -7; the shared (-6, 0)'s -3 does not
    rewards = np.array([[0.0, 0.0], [-1.0, -5.0], [-1.0, -7.0]])
    tree = ResponseTree("r", np.array([-1, 0, 0]), rewards, ["p", "accept", "reject"], agent=np.array([0, 1, 1]))
    values = expected_rewards(tree)
    per_agent = select_pairs(tree, values, "positive_negative", [(-6.0, 0.0), (-12.0, 0.0)], seed=0)
    assert [(tree.actions[c], tree.actions[r]) for c, r in zip(per_agent.chosen, per_agent.rejected)] == [
        ("accept", "reject")]
    assert len(select_pairs(tree, values, "positive_negative", (-6.0, 0.0), seed=0).chosen) == 0
    with pytest.raises(ValueError, match="agent 1 acts"):
        select_pairs(tree, values, "positive_negative", [(-6.0, 0.0)], seed=0)


def test_positive_negative_takes_each_agent_s_own_threshold_from_the_team_config():
    """A threshold per agent (``TeamMALTConfig.pair_threshold``): agent 0's -2.8 separates p1 (-2.5) from p2 (-3);
    agent 1's -0.5 is above both its answers (-1, -5), so it gets no pair (at agent 0's -2.8 it would)."""
    from trainers.algorithms.malt.team_rounds import TeamMALTConfig

    class TwoAgents:
        def agent_reward_ranges(self):
            return [(-6.0, 0.0), (-6.0, 0.0)]

    spec = TeamMALTConfig(pair_threshold=(-2.8, -0.5)).tree_spec(TwoAgents(), "malt")
    assert spec.threshold == (-2.8, -0.5)
    tree = _two_agent_tree()
    pairs = select_pairs(tree, expected_rewards(tree), spec.pair_method, spec.reward_range, seed=0,
                         threshold=spec.threshold, strict_threshold=spec.strict_threshold)
    assert [(tree.actions[c], tree.actions[r], int(a)) for c, r, a in zip(pairs.chosen, pairs.rejected, pairs.agent)
            ] == [("p1", "p2", 0)]
    shared = select_pairs(tree, expected_rewards(tree), "positive_negative", spec.reward_range, seed=0, threshold=-2.8)
    assert sorted(int(a) for a in shared.agent) == [0, 1]
    assert TeamMALTConfig().tree_spec(TwoAgents(), "malt").threshold is None  # the reference trainer's mid-points
