"""Response trees: node ids, rebuilding trees from flat RLDS episodes, expected rewards and preference pairs.

A response tree grows from one start state: at each decision point ``branching`` responses are sampled,
and each continues to the end of the episode (or a depth limit). A *node* is one response (one action at
one decision point). Every root-to-leaf path is recorded as an ordinary RLDS episode whose step ``i``
stores ``node_id`` (the response ``a_i``) and ``parent_node_id`` (the response before it); first steps
have the tree's *pseudo-parent* ``{tree_id}/root``, since a tree may branch at once; ``agent`` says which
agent gave the response (environments with several acting agents). Steps of different
episodes with the same ``node_id`` are the same response in a shared prefix, so the tree is rebuilt from
the flat episodes by ``rebuild_trees``.

Expected reward of a node (per agent): the mean total reward of the rollouts below it, each rollout (leaf)
weighted equally, as MALT's reference trainer defines it (the mean over the rollouts below a response; so a child
whose game ended early counts once, not as much as a sibling's whole subtree), computed level by level from the
leaves to the root with ``numpy`` (``expected_rewards``). A leaf's value is its path's return.

Pairs (per agent, among the children of each node and among the first responses): ``positive_negative``
picks one child at or above and one below a threshold (default: the mid-point of the reward range; a value
exactly at the threshold counts as positive, as in MALT's reference trainer, unless ``strict_threshold``),
``interval`` one pair whose values differ by more than ``interval_threshold_proportion * (max - min)``
possible reward. One pair per node, drawn uniformly from the qualifying ones with a seeded generator
(``select_pairs``). Two siblings with the same response text never form a pair: in a deterministic
environment they are one decision whose values differ only by the sampling below them, and DPO learns nothing
from them (the log-ratio difference is 0 whatever the weights). With a peaked policy most sibling groups are
copies of one response: in a MALT run on Wordle 136 of 149 selected pairs were such copies before this rule.

Pure numpy, no TensorFlow, no torch. Example::

    import numpy as np
    from rlds_lang.trees import ResponseTree, expected_rewards, select_pairs

    tree = ResponseTree("t0", parent=np.array([-1, -1, 0, 0]), rewards=np.array([-1.0, -1.0, 0.0, -1.0]),
                        actions=["a", "b", "c", "d"])
    values = expected_rewards(tree)                      # [[-1.5], [-1.0], [-1.0], [-2.0]]
    pairs = select_pairs(tree, values, "interval", reward_range=(-2.0, 0.0), seed=0)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

#: the step fields a response-tree episode adds (name -> numpy dtype, ``str`` for text).
TREE_STEP_FIELDS: dict[str, Any] = {"node_id": str, "parent_node_id": str, "agent": np.int32,
                                    "expected_reward": np.float32, "is_pair_positive": np.bool_,
                                    "is_pair_negative": np.bool_}
#: values of those fields on the last step of an episode (it holds no response).
TREE_LAST_STEP: dict[str, Any] = {"node_id": "", "parent_node_id": "", "agent": np.int32(-1),
                                  "expected_reward": np.float32(0.0),
                                  "is_pair_positive": np.bool_(False), "is_pair_negative": np.bool_(False)}
#: the step field holding a node's reward per agent (float32 ``[A]``) in trees of a multi-agent environment.
AGENT_REWARDS = "agent_rewards"
#: the pair selectors ``select_pairs`` knows.
PAIR_SELECTORS = ("positive_negative", "interval")


class TreeError(ValueError):
    """Flat episodes that do not form response trees; the message names the episode, step and node."""


def node_id(tree_id: str, index: int) -> str:
    """The unique id of node ``index`` of tree ``tree_id``.

    >>> node_id("run-00000003", 12)
    'run-00000003/n000012'
    """
    return f"{tree_id}/n{int(index):06d}"


def pseudo_parent_id(tree_id: str) -> str:
    """The parent id of a tree's first responses (there is no response before them).

    >>> pseudo_parent_id("run-00000003")
    'run-00000003/root'
    """
    return f"{tree_id}/root"


@dataclasses.dataclass
class ResponseTree:
    """One tree as flat arrays over its nodes, parents before children (``parent[n] < n``).

    Attributes:
      tree_id: unique id of the tree (node ids are ``node_id(tree_id, n)``).
      parent: int64 ``[N]``, the parent node's index or -1 for first responses (the pseudo-parent).
      rewards: float ``[N]`` or ``[N, A]``: the reward the response earned (per agent; a scalar reward is
        shared by every agent).
      actions: the response texts.
      agent: int ``[N]``, which agent gave the response (default all 0).
      ids: the node ids (default ``node_id(tree_id, n)``).
    """

    tree_id: str
    parent: np.ndarray
    rewards: np.ndarray
    actions: list[str]
    agent: np.ndarray | None = None
    ids: list[str] | None = None

    def __post_init__(self) -> None:
        self.parent = np.asarray(self.parent, dtype=np.int64)
        n = len(self.parent)
        rewards = np.asarray(self.rewards, dtype=np.float64)
        self.rewards = rewards[:, None] if rewards.ndim == 1 else rewards
        self.agent = np.zeros(n, np.int64) if self.agent is None else np.asarray(self.agent, dtype=np.int64)
        self.ids = [node_id(self.tree_id, i) for i in range(n)] if self.ids is None else list(self.ids)
        if self.rewards.shape[0] != n or len(self.actions) != n or len(self.agent) != n or len(self.ids) != n:
            raise TreeError(f"tree {self.tree_id}: parent has {n} nodes but rewards {self.rewards.shape[0]}, "
                            f"actions {len(self.actions)}, agent {len(self.agent)}, ids {len(self.ids)}")
        bad = np.nonzero((self.parent >= np.arange(n)) | (self.parent < -1))[0]
        if len(bad):
            raise TreeError(f"tree {self.tree_id}: node {self.ids[bad[0]]} has parent index {self.parent[bad[0]]}; "
                            f"parents must come before their children")

    @property
    def num_nodes(self) -> int:
        """Number of responses in the tree."""
        return len(self.parent)

    @property
    def num_agents(self) -> int:
        """Width of the reward vectors."""
        return int(self.rewards.shape[1])

    def agent_values(self, values: np.ndarray, agent: int) -> np.ndarray:
        """The column of ``values`` (``[N, A]``) that scores ``agent``: its own, or the shared one when ``A == 1``."""
        return values[:, agent if values.shape[1] > 1 else 0]

    def depth(self) -> np.ndarray:
        """int64 ``[N]``: 0 for first responses, parent's depth + 1 otherwise."""
        depth = np.zeros(self.num_nodes, np.int64)
        has_parent = self.parent >= 0
        for n in np.nonzero(has_parent)[0]:  # parents come first, so one pass suffices
            depth[n] = depth[self.parent[n]] + 1
        return depth

    def is_leaf(self) -> np.ndarray:
        """bool ``[N]``: nodes with no children (the last response of a path)."""
        leaf = np.ones(self.num_nodes, bool)
        leaf[self.parent[self.parent >= 0]] = False
        return leaf

    def paths(self) -> list[list[int]]:
        """Every root-to-leaf path as node indices, leaves in index order."""
        out = []
        for leaf in np.nonzero(self.is_leaf())[0]:
            path, n = [], int(leaf)
            while n >= 0:
                path.append(n)
                n = int(self.parent[n])
            out.append(path[::-1])
        return out

    def returns(self) -> np.ndarray:
        """float ``[N, A]``: total reward from the start state through each node (a leaf's: its path's return)."""
        total = self.rewards.copy()
        depth = self.depth()
        for level in range(1, int(depth.max(initial=0)) + 1):
            rows = np.nonzero(depth == level)[0]
            total[rows] += total[self.parent[rows]]
        return total


def expected_rewards(tree: ResponseTree) -> np.ndarray:
    """float ``[N, A]``: each node's expected total reward per agent, leaves to root (see the module doc).

    A leaf's value is its path's return; an inner node's is the mean of the returns of all the leaves below it.
    Each depth level is one vectorised ``np.add.at`` over all its nodes (sums and counts of leaves move up).

    >>> tree = ResponseTree("t", np.array([-1, 0, 0, 2]), np.array([0.0, -1.0, -2.0, -4.0]), ["a", "b", "c", "d"])
    >>> expected_rewards(tree)[:, 0].tolist()    # the root: mean(-1, -6) over its 2 leaves
    [-3.5, -1.0, -6.0, -6.0]
    """
    leaf = tree.is_leaf()
    returns = tree.returns()
    sums = np.where(leaf[:, None], returns, 0.0)
    counts = leaf.astype(np.float64)
    depth = tree.depth()
    for level in range(int(depth.max(initial=0)), 0, -1):
        rows = np.nonzero(depth == level)[0]
        np.add.at(sums, tree.parent[rows], sums[rows])
        np.add.at(counts, tree.parent[rows], counts[rows])
    values = sums / counts[:, None]
    assert not np.any(np.isnan(values))
    return values


@dataclasses.dataclass
class Pairs:
    """Selected preference pairs of one tree: ``chosen[k]`` is preferred to its sibling ``rejected[k]``.

    ``agent[k]`` is the agent both responses belong to; ``parent[k]`` their common parent (-1: the start).
    """

    chosen: np.ndarray
    rejected: np.ndarray
    agent: np.ndarray
    parent: np.ndarray

    def flags(self, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
        """``(is_pair_positive, is_pair_negative)`` bool ``[num_nodes]``."""
        positive, negative = np.zeros(num_nodes, bool), np.zeros(num_nodes, bool)
        positive[self.chosen], negative[self.rejected] = True, True
        return positive, negative


def _sibling_groups(tree: ResponseTree) -> list[tuple[int, int, np.ndarray]]:
    """``(parent, agent, child indices)`` of every group of sibling responses, in a fixed order."""
    order = np.lexsort((tree.agent, tree.parent))
    keys = np.stack([tree.parent[order], tree.agent[order]], 1)
    cuts = np.nonzero(np.any(np.diff(keys, axis=0) != 0, axis=1))[0] + 1
    return [(int(tree.parent[g[0]]), int(tree.agent[g[0]]), g) for g in np.split(order, cuts) if len(g)]


def agent_reward_range(reward_range: Sequence[float] | Sequence[Sequence[float]], agent: int) -> tuple[float, float]:
    """``(min, max)`` possible return of ``agent``: ``reward_range`` is one ``(min, max)`` shared by every agent or
    one per agent (MALT's per-agent range).

    >>> agent_reward_range((-6.0, 0.0), 1), agent_reward_range([(-6.0, 0.0), (-9.0, 0.0)], 1)
    ((-6.0, 0.0), (-9.0, 0.0))
    """
    ranges = np.asarray(reward_range, dtype=np.float64)
    if ranges.ndim == 2 and ranges.shape[1] == 2:
        if not 0 <= agent < len(ranges):
            raise ValueError(f"reward_range gives {len(ranges)} per-agent ranges, but agent {agent} acts")
        ranges = ranges[agent]
    if ranges.shape != (2,) or not ranges[1] > ranges[0]:
        raise ValueError(f"reward_range must be (min, max) with max > min, or one such pair per agent; got "
                         f"{str(reward_range)[:80]}")
    return float(ranges[0]), float(ranges[1])


def agent_threshold(threshold: float | Sequence[float | None] | None, low: float, high: float, agent: int) -> float:
    """``positive_negative``'s threshold for ``agent``: one shared value, one per agent, or None for the mid-point
    of the agent's range."""
    if threshold is not None and not np.isscalar(threshold):
        if not 0 <= agent < len(threshold):
            raise ValueError(f"threshold gives {len(threshold)} per-agent values, but agent {agent} acts")
        threshold = threshold[agent]
    return (low + high) / 2 if threshold is None else float(threshold)


def select_pairs(tree: ResponseTree, values: np.ndarray, method: str,
                 reward_range: Sequence[float] | Sequence[Sequence[float]], *,
                 seed: int | np.random.Generator = 0, threshold: float | Sequence[float | None] | None = None,
                 interval_threshold_proportion: float = 0.1, strict_threshold: bool = False) -> Pairs:
    """At most one (chosen, rejected) pair per node and agent among its children, drawn with ``seed``.

    Each sibling group belongs to the agent acting there, and is judged by that agent's expected rewards
    (``values[:, agent]``), threshold and reward range.

    Args:
      tree: the tree.
      values: ``expected_rewards(tree)``.
      method: ``positive_negative`` (one child with value >= ``threshold``, one with value < it) or
        ``interval`` (a pair whose values differ by more than ``interval_threshold_proportion * (max - min)``);
        either way the two responses' texts differ.
      reward_range: ``(min, max)`` possible total reward of an episode, shared or one per agent
        (``agent_reward_range``).
      seed: an integer seed or a ``np.random.Generator`` (shared over trees for one draw per dataset).
      threshold: ``positive_negative``'s threshold, shared or one per agent (default: the mid-point of the
        agent's reward range).
      interval_threshold_proportion: ``interval``'s minimum gap as a share of the agent's reward range.
      strict_threshold: ``positive_negative`` drops values exactly at the threshold (chosen > threshold) instead
        of counting them as positive; with Wordle's integer returns and mid-point -3 that drops many ties.
    """
    if method not in PAIR_SELECTORS:
        raise ValueError(f"select_pairs: unknown method {method!r}; known: {PAIR_SELECTORS}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    chosen, rejected, agents, parents = [], [], [], []
    for parent, agent, group in _sibling_groups(tree):
        low, high = agent_reward_range(reward_range, agent)
        v = tree.agent_values(values, agent)[group]
        if method == "positive_negative":
            cut = agent_threshold(threshold, low, high, agent)
            positive = v > cut if strict_threshold else v >= cut
            allowed = positive[:, None] & (v[None, :] < cut)
        else:
            allowed = v[:, None] - v[None, :] > float(interval_threshold_proportion) * (high - low)
        texts = np.asarray([tree.actions[g] for g in group], dtype=object)
        better, worse = np.nonzero(allowed & (texts[:, None] != texts[None, :]))
        if not len(better):
            continue
        k = rng.integers(len(better))
        chosen.append(int(group[better[k]]))
        rejected.append(int(group[worse[k]]))
        agents.append(agent)
        parents.append(parent)
    as_int = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
    return Pairs(as_int(chosen), as_int(rejected), as_int(agents), as_int(parents))


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray):
        return _text(value.item())
    return str(value)


def rebuild_trees(episodes: Iterable[Mapping[str, Any]], reward_key: str | None = None,
                  agent_key: str = "agent") -> list[ResponseTree]:
    """The response trees that flat episodes (``{"steps": [...], ...}``, as ``loggers.reader`` yields) spell.

    A node's reward is the step's ``reward_key``; by default its per-agent ``AGENT_REWARDS`` when the step has them
    (trees of a multi-agent environment), else its ``reward``.
    Each step (but the last) needs ``node_id`` and ``parent_node_id``; a tree is the set of nodes under one
    pseudo-parent ``{tree_id}/root``. Steps with the same ``node_id`` must agree on parent, action and reward
    (``TreeError`` naming the episode and step otherwise). A step without ``agent_key`` is agent 0. Nodes keep
    their ids; trees come sorted by id.
    """
    nodes: dict[str, dict[str, Any]] = {}
    for e, episode in enumerate(episodes):
        name = _text(episode.get("episode_id", f"#{e}"))
        previous = None
        for i, step in enumerate(episode["steps"]):
            if bool(step.get("is_last", False)):
                break
            if "node_id" not in step or "parent_node_id" not in step:
                raise TreeError(f"episode {name}, step {i}: no node_id/parent_node_id (not a response-tree episode)")
            nid, pid = _text(step["node_id"]), _text(step["parent_node_id"])
            if previous is not None and pid != previous:
                raise TreeError(f"episode {name}, step {i}: parent_node_id {pid!r} is not the previous step's node "
                                f"{previous!r}")
            if previous is None and not pid.endswith("/root"):
                raise TreeError(f"episode {name}, step 0: parent_node_id {pid!r} is not a pseudo-parent '<tree>/root'")
            key = reward_key or (AGENT_REWARDS if AGENT_REWARDS in step else "reward")
            record = {"parent": pid, "action": _text(step["action"]), "reward": np.asarray(step[key], np.float64),
                      "agent": int(step.get(agent_key, 0)), "where": f"episode {name}, step {i}"}
            known = nodes.setdefault(nid, record)
            if known is not record and (known["parent"] != pid or known["action"] != record["action"]
                                        or known["agent"] != record["agent"]
                                        or not np.array_equal(known["reward"], record["reward"])):
                raise TreeError(f"{record['where']}: node {nid!r} differs from the same node at {known['where']} "
                                f"(parent, agent, action or reward)")
            previous = nid
    return _assemble(nodes)


def _assemble(nodes: dict[str, dict[str, Any]]) -> list[ResponseTree]:
    """Groups nodes by tree and orders each tree parents-first (breadth first, ids sorted within a level)."""
    children: dict[str, list[str]] = {}
    for nid, record in nodes.items():
        children.setdefault(record["parent"], []).append(nid)
    trees = []
    for root in sorted(p for p in children if p.endswith("/root") and p not in nodes):
        order: list[str] = []
        frontier = sorted(children[root])
        while frontier:
            order += frontier
            frontier = sorted(c for n in frontier for c in children.get(n, []))
        index = {nid: k for k, nid in enumerate(order)}
        trees.append(ResponseTree(
            tree_id=root[:-len("/root")], parent=np.array([index.get(nodes[n]["parent"], -1) for n in order]),
            rewards=np.stack([nodes[n]["reward"] for n in order]), actions=[nodes[n]["action"] for n in order],
            agent=np.array([nodes[n]["agent"] for n in order]), ids=order))
    return trees


def tree_step_fields(tree: ResponseTree, values: np.ndarray, pairs: Pairs | None) -> list[dict[str, Any]]:
    """Per node, the step fields of ``TREE_STEP_FIELDS`` (the acting agent and its expected reward), plus the
    node's reward per agent (``AGENT_REWARDS``) when the tree has several reward columns."""
    positive, negative = pairs.flags(tree.num_nodes) if pairs is not None else (np.zeros(tree.num_nodes, bool),) * 2
    root = pseudo_parent_id(tree.tree_id)
    fields = [{"node_id": tree.ids[n], "parent_node_id": tree.ids[p] if p >= 0 else root,
               "agent": np.int32(tree.agent[n]),
               "expected_reward": np.float32(tree.agent_values(values, tree.agent[n])[n]),
               "is_pair_positive": np.bool_(positive[n]), "is_pair_negative": np.bool_(negative[n])}
              for n, p in enumerate(tree.parent.tolist())]
    if tree.num_agents > 1:
        for n, field in enumerate(fields):
            field[AGENT_REWARDS] = tree.rewards[n].astype(np.float32)
    return fields


def pair_histories(tree: ResponseTree, pairs: Pairs) -> list[tuple[list[int], int, int]]:
    """Per pair, ``(prefix node indices from the start to the common parent, chosen, rejected)``."""
    out = []
    for c, r, p in zip(pairs.chosen.tolist(), pairs.rejected.tolist(), pairs.parent.tolist()):
        prefix, n = [], p
        while n >= 0:
            prefix.append(n)
            n = int(tree.parent[n])
        out.append((prefix[::-1], c, r))
    return out


__all__ = ["AGENT_REWARDS", "PAIR_SELECTORS", "TREE_LAST_STEP", "TREE_STEP_FIELDS", "Pairs", "ResponseTree", "TreeError",
           "agent_reward_range", "agent_threshold", "expected_rewards", "node_id", "pair_histories", "pseudo_parent_id", "rebuild_trees", "select_pairs",
           "tree_step_fields"]
