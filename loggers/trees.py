"""Growing response trees in any language environment and recording them as RLDS episodes.

``grow_tree`` starts from one seeded start state; at each decision point it samples ``branching`` responses
from the policy (each from its own seed, derived from the tree's seed and the node, so a tree is a pure
function of its seed), and continues every branch to the end of the episode or ``max_depth`` responses.
The environment is never copied: like ``rlds_lang.wordle.recipes.TakeoverPolicy`` branches, every node is
reached by replaying its prefix from the tree's seed (so seeded environment randomness replays too).
Policies with ``act_batch(histories, seeds)`` (``trainers.core.policy.LanguageModelPolicy``) sample every
branch of a level in one batch; others are ``reset`` with the branch seed and asked to ``act``.

``record_trees`` grows the trees, computes each node's expected reward and the preference pairs
(``rlds_lang.trees``) and records every root-to-leaf path as one episode through ``loggers.record``:
the path's seed is its tree's seed, a replay policy plays the path's responses, and ``TreeEnv`` adds the
node fields (``rlds_lang.trees.TREE_STEP_FIELDS``) to each step and ``tree_id``/``path_index`` to the
episode metadata. Shared prefixes are the same node ids with the same data in every path through them.
Read back, ``rlds_lang.trees.rebuild_trees`` recovers the trees (``record_trees`` checks the rewards
replayed exactly).

Size: one module, a little over 400 lines, because growing a tree, replaying its paths and recording them
share the node structures and the seeding rule; the tree algebra itself (values, pairs) is in ``rlds_lang.trees``.

Example::

    from loggers.trees import TreeSpec, record_trees
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import RandomMixturePolicy

    spec = TreeSpec(branching=2, max_depth=3, reward_range=(-6.0, 0.0))
    result = record_trees(WordleEnv(), RandomMixturePolicy(), spec, trees=2, data_dir="/tmp/trees")
    print(result.num_trees, result.num_paths, result.num_pairs)
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Iterator, Mapping, Sequence

import dm_env
import numpy as np

from loggers.reader import read_episodes
from loggers.record import record
from rlds_lang.env import LanguageEnv, Observation, Policy, as_text, innermost, policy_params_json
from rlds_lang.trees import (AGENT_REWARDS, TREE_LAST_STEP, ResponseTree, TreeError, expected_rewards,
                             rebuild_trees, select_pairs, tree_step_fields)

#: episode metadata of response-tree episodes (name -> spec).
TREE_EPISODE_METADATA: dict[str, Any] = {"tree_id": str, "path_index": np.int32}


@dataclasses.dataclass(frozen=True)
class TreeSpec:
    """How trees grow and how pairs are picked.

    Attributes:
      branching: responses sampled at every decision point (of depth < ``branch_depth``).
      max_depth: responses per path at most (None: to the end of the episode).
      branch_depth: decision points at depth >= this get one response: each branch then plays on to the end
        (None: branch everywhere). ``branching=1`` grows plain episodes (expert iteration's samples).
      branch_from: decision points at depth < this get one response too (a shared trunk), so trees can branch
        where the policy is uncertain (a Wordle policy's first guesses are nearly fixed) at the same size.
      reward_range: ``(min, max)`` possible total reward of an episode (Wordle: ``(-6, 0)``), or one such pair per
        agent (``rlds_lang.trees.agent_reward_range``).
      pair_method: ``positive_negative`` or ``interval`` (``rlds_lang.trees.select_pairs``).
      threshold: ``positive_negative``'s threshold, shared or a tuple with one per agent (None: the mid-point of
        the acting agent's ``reward_range``).
      interval_threshold_proportion: ``interval``'s minimum gap as a share of the reward range.
      strict_threshold: ``positive_negative`` leaves values exactly at the threshold out (default: positive).
      distinct_tries: at a decision point with several responses, a response that repeats an earlier
        sibling's is sampled again (a fresh seed each time) up to this many times, so that a peaked policy
        still offers different responses to compare (a repeated response can never form a pair); 0 keeps
        plain independent samples. The responses are then those of the policy conditioned on differing while
        the tries last, not independent draws.
    """

    branching: int = 2
    max_depth: int | None = None
    branch_depth: int | None = None
    branch_from: int = 0
    reward_range: tuple[float, float] | tuple[tuple[float, float], ...] = (0.0, 1.0)
    pair_method: str = "interval"
    threshold: float | tuple[float | None, ...] | None = None
    interval_threshold_proportion: float = 0.1
    strict_threshold: bool = False
    distinct_tries: int = 0

    def __post_init__(self) -> None:
        if self.branching < 1:
            raise ValueError(f"TreeSpec.branching must be >= 1, got {self.branching}")
        if self.branch_from < 0 or (self.branch_depth is not None and self.branch_from >= self.branch_depth):
            raise ValueError(f"TreeSpec.branch_from must be >= 0 and < branch_depth, got {self.branch_from} "
                             f"(branch_depth {self.branch_depth})")
        if self.distinct_tries < 0:
            raise ValueError(f"TreeSpec.distinct_tries must be >= 0, got {self.distinct_tries}")
        if self.max_depth is not None and self.max_depth < 1:
            raise ValueError(f"TreeSpec.max_depth must be >= 1 or None, got {self.max_depth}")

    def as_metadata(self) -> dict[str, Any]:
        """The spec as dataset-level metadata."""
        as_lists = lambda v: [as_lists(x) for x in v] if isinstance(v, (tuple, list)) else v  # noqa: E731
        return {f"tree_{k}": as_lists(v) for k, v in dataclasses.asdict(self).items()}


def branch_seed(tree_seed: int, parent: int, k: int) -> int:
    """The sampling seed of response ``k`` under node ``parent`` (-1: the start) of the tree seeded ``tree_seed``."""
    state = np.random.SeedSequence([int(tree_seed) % 2**32, int(parent) + 1, int(k)]).generate_state(1, np.uint32)
    return int(state[0])


@dataclasses.dataclass
class _Replay:
    observations: list[Observation]
    rewards: list[Any]
    done: bool


def step_rewards(env: LanguageEnv, timestep: dm_env.TimeStep) -> Any:
    """The reward of the step just taken: the environment's ``agent_rewards()`` (one per agent) if it has one,
    else the timestep's scalar reward."""
    method = getattr(env, "agent_rewards", None)
    return np.asarray(method(), np.float64) if callable(method) else float(timestep.reward)


def replay(env: LanguageEnv, seed: int, actions: Sequence[str]) -> _Replay:
    """Plays ``actions`` from the start state seeded ``seed``: observations, rewards (``step_rewards``), whether
    the episode ended."""
    env.seed(seed)
    timestep = env.reset()
    observations, rewards = [timestep.observation], []
    for action in actions:
        if timestep.last():
            raise TreeError(f"replay of seed {seed}: the episode ended before action {len(rewards)} {action!r}")
        timestep = env.step(action)
        observations.append(timestep.observation)
        rewards.append(step_rewards(env, timestep))
    return _Replay(observations, rewards, timestep.last())


def acting_agent(env: LanguageEnv) -> int:
    """Which agent acts in the environment's current state: its ``acting_agent()`` if it has one, else 0."""
    method = getattr(env, "acting_agent", None)
    return int(method()) if callable(method) else 0


def sample_responses(policy: Policy, histories: Sequence[tuple[list[Observation], list[str]]],
                     seeds: Sequence[int]) -> list[str]:
    """One response per history, each seeded by its own seed (batched when the policy has ``act_batch``)."""
    act_batch = getattr(policy, "act_batch", None)
    if callable(act_batch):
        return [as_text(a, "action") for a in act_batch(list(histories), seeds=list(seeds))]
    out = []
    for (observations, actions), seed in zip(histories, seeds):
        policy.reset(seed)
        out.append(as_text(policy.act(observations, actions), "action"))
    return out


def resample_copies(policy: Policy, histories: Sequence[tuple[list[Observation], list[str]]], seeds: Sequence[int],
                    groups: Sequence[Any], responses: Sequence[str], tries: int) -> list[str]:
    """``responses`` with each repeat of an earlier response of the same group (``groups[i]``: the decision point
    of response ``i``) sampled again, up to ``tries`` times, with seeds derived from ``seeds[i]`` and the try."""
    responses = list(responses)
    for attempt in range(1, tries + 1):
        seen: dict[Any, set[str]] = {}
        redo = []
        for i, (group, response) in enumerate(zip(groups, responses)):
            if response in seen.setdefault(group, set()):
                redo.append(i)
            else:
                seen[group].add(response)
        if not redo:
            break
        fresh = [int(np.random.SeedSequence([seeds[i], attempt]).generate_state(1, np.uint32)[0]) for i in redo]
        for i, response in zip(redo, sample_responses(policy, [histories[i] for i in redo], fresh)):
            responses[i] = response
    return responses


def grow_trees(env: LanguageEnv, policy: Policy, spec: TreeSpec, seeds: Sequence[int],
               tree_ids: Sequence[str]) -> list[ResponseTree]:
    """The response trees of ``policy`` from the start states seeded ``seeds`` (see the module docstring).

    All trees grow level by level in lockstep, so a batched policy samples every open branch of a level at once.
    Each response belongs to the agent acting at its decision point (``acting_agent``); its reward is the
    environment's reward per agent when it has ``agent_rewards()``, else the scalar reward shared by all agents.
    """
    parents: list[list[int]] = [[] for _ in seeds]
    agents: list[list[int]] = [[] for _ in seeds]
    actions: list[list[str]] = [[] for _ in seeds]
    rewards: list[list[float]] = [[] for _ in seeds]
    prefixes: list[dict[int, list[str]]] = [{-1: []} for _ in seeds]
    open_nodes = [(t, -1) for t in range(len(seeds))]  # (tree, node whose children come next; -1: the start)
    depth = 0
    while open_nodes and (spec.max_depth is None or depth < spec.max_depth):
        branches = spec.branch_from <= depth and (spec.branch_depth is None or depth < spec.branch_depth)
        width = spec.branching if branches else 1
        histories, branch_seeds, owners = [], [], []
        for t, node in open_nodes:
            state = replay(env, seeds[t], prefixes[t][node])
            agent = acting_agent(env)
            for k in range(width):
                histories.append((state.observations, list(prefixes[t][node])))
                branch_seeds.append(branch_seed(seeds[t], node, k))
                owners.append((t, node, agent))
        responses = sample_responses(policy, histories, branch_seeds)
        if width > 1 and spec.distinct_tries:
            responses = resample_copies(policy, histories, branch_seeds, [o[:2] for o in owners], responses,
                                        spec.distinct_tries)
        next_open = []
        for (t, node, agent), response in zip(owners, responses):
            child = len(parents[t])
            path = prefixes[t][node] + [response]
            state = replay(env, seeds[t], path)
            parents[t].append(node)
            agents[t].append(agent)
            actions[t].append(response)
            rewards[t].append(state.rewards[-1])
            prefixes[t][child] = path
            if not state.done:
                next_open.append((t, child))
        open_nodes = next_open
        depth += 1
    return [ResponseTree(tree_id, np.array(p, dtype=np.int64), np.array(r), a, agent=np.array(g, dtype=np.int64))
            for tree_id, p, r, a, g in zip(tree_ids, parents, rewards, actions, agents)]


def grow_tree(env: LanguageEnv, policy: Policy, spec: TreeSpec, seed: int, tree_id: str) -> ResponseTree:
    """One tree of ``grow_trees``."""
    return grow_trees(env, policy, spec, [seed], [tree_id])[0]


class TreeEnv(LanguageEnv):
    """Wraps an environment to play one tree path: adds the node fields to each step, the path to the
    episode metadata, and ends the episode (truncation) after ``max_steps`` responses of a depth-limited path."""

    def __init__(self, env: LanguageEnv):
        super().__init__(env.current_seed)
        self._environment = env
        self.task_name = env.task_name
        self.fields: list[dict[str, Any]] = []
        self.tags: dict[str, Any] = {"tree_id": "", "path_index": np.int32(-1)}
        self.max_steps: int | None = None

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self._environment.seed(seed)

    def observation_spec(self):
        return self._environment.observation_spec()

    def _reset(self) -> Observation:
        return self._environment.reset().observation

    def _step(self, action: str) -> tuple[Observation, float, bool]:
        timestep = self._environment.step(action)
        return timestep.observation, float(timestep.reward), timestep.last()

    def reset(self) -> dm_env.TimeStep:
        self._needs_reset, self._num_steps = False, 0
        return self._environment.reset()

    def step(self, action: Any) -> dm_env.TimeStep:
        if self._needs_reset:
            return self.reset()
        timestep = self._environment.step(action)
        self._num_steps += 1
        if timestep.last():
            self._needs_reset = True
        elif self.max_steps is not None and self._num_steps >= self.max_steps:
            self._needs_reset = True
            return dm_env.truncation(timestep.reward, timestep.observation)
        return timestep

    def episode_metadata(self) -> dict[str, Any]:
        return {**self._environment.episode_metadata(), **self.tags}

    def last_fields(self) -> dict[str, Any]:
        """The node fields of a path's last step (it holds no response): neutral values of the same fields."""
        if self.fields and AGENT_REWARDS in self.fields[0]:
            return {**TREE_LAST_STEP, AGENT_REWARDS: np.zeros_like(self.fields[0][AGENT_REWARDS])}
        return TREE_LAST_STEP

    def step_metadata(self) -> dict[str, Any]:
        turn = self._num_steps
        fields = self.fields[turn] if turn < len(self.fields) else self.last_fields()
        return {**self._environment.step_metadata(), **fields}


class PathReplayPolicy:
    """Plays the responses of one tree path (set per episode); named and parameterised like the sampling policy."""

    def __init__(self, sampler: Policy, spec: TreeSpec):
        self.name = sampler.name
        self._params = {"sampler": dict(sampler.params()), **spec.as_metadata()}
        self.path: list[str] = []

    def reset(self, seed: int) -> None:
        """Nothing to seed: the responses were sampled when the tree grew."""

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        if len(actions) >= len(self.path):
            raise TreeError(f"path replay: asked for response {len(actions)} of a {len(self.path)}-response path")
        return self.path[len(actions)]

    def params(self) -> Mapping[str, Any]:
        return self._params


@dataclasses.dataclass
class TreePath:
    """One root-to-leaf path to record: its tree, node indices, seed, index in the tree and the tree's node fields."""

    tree: ResponseTree
    nodes: list[int]
    seed: int
    index: int
    fields: list[dict[str, Any]]


class PathHook:
    """``before_episode`` hook: episode ``i`` plays path ``paths[i]`` (responses, node fields, tags)."""

    def __init__(self, policy: PathReplayPolicy, paths: Sequence[TreePath], spec: TreeSpec):
        self.policy, self.paths, self.spec = policy, paths, spec

    def __call__(self, env: TreeEnv, i: int) -> None:
        path = self.paths[i]
        self.policy.path = [path.tree.actions[n] for n in path.nodes]
        env.fields = [path.fields[n] for n in path.nodes]
        env.tags = {"tree_id": path.tree.tree_id, "path_index": np.int32(path.index)}
        env.max_steps = len(path.nodes) if self.spec.max_depth is not None else None


@dataclasses.dataclass
class TreeRecordResult:
    """What ``record_trees`` wrote: trees, paths (= episodes), nodes, pairs, and where."""

    data_dir: str
    num_trees: int
    num_paths: int
    num_nodes: int
    num_pairs: int
    seconds: float
    trees: list[ResponseTree]


def plan_paths(env: LanguageEnv, policy: Policy, spec: TreeSpec, trees: int, seed: int, run_name: str,
               seeds: Sequence[int] | None = None) -> tuple[list[ResponseTree], list[TreePath], int]:
    """Grows ``trees`` trees (tree ``t`` seeded ``seed + t`` or ``seeds[t]``), scores and pairs them:
    ``(trees, paths to record, number of pairs)``. Pairs are drawn from one generator seeded ``seed``."""
    rng = np.random.default_rng(seed)
    tree_seeds = [int(s) for s in seeds] if seeds is not None else [seed + t for t in range(trees)]
    grown = grow_trees(env, policy, spec, tree_seeds, [f"{run_name}-tree{t:06d}" for t in range(len(tree_seeds))])
    paths, num_pairs = [], 0
    for tree, tree_seed in zip(grown, tree_seeds):
        values = expected_rewards(tree)
        pairs = select_pairs(tree, values, spec.pair_method, spec.reward_range, seed=rng, threshold=spec.threshold,
                             interval_threshold_proportion=spec.interval_threshold_proportion,
                             strict_threshold=spec.strict_threshold)
        fields = tree_step_fields(tree, values, pairs)
        paths += [TreePath(tree, nodes, tree_seed, k, fields) for k, nodes in enumerate(tree.paths())]
        num_pairs += len(pairs.chosen)
    return grown, paths, num_pairs


def check_replayed(trees: Sequence[ResponseTree], episodes: Iterator[Mapping[str, Any]]) -> None:
    """Raises ``TreeError`` unless the recorded episodes rebuild exactly the grown trees (responses and rewards)."""
    rebuilt = {t.tree_id: t for t in rebuild_trees(episodes)}
    for tree in trees:
        got = rebuilt.get(tree.tree_id)
        if got is None:
            raise TreeError(f"tree {tree.tree_id} was not found in the recorded episodes")
        ours = {i: (tree.actions[n], tree.rewards[n].tolist(), int(tree.agent[n])) for n, i in enumerate(tree.ids)}
        theirs = {i: (got.actions[n], got.rewards[n].tolist(), int(got.agent[n])) for n, i in enumerate(got.ids)}
        if ours != theirs:
            diff = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
            raise TreeError(f"tree {tree.tree_id}: the recorded episodes differ from the grown tree at nodes "
                            f"{diff[:3]} (is the environment deterministic given its seed?)")


def record_paths(env: LanguageEnv, sampler: Policy, spec: TreeSpec, paths: Sequence[TreePath],
                 data_dir: str | os.PathLike, *, run_name: str = "trees", workers: int = 1,
                 metadata: Mapping[str, Any] | None = None, progress: bool = False) -> None:
    """Records ``paths`` (grown with ``sampler`` under ``spec``) as episodes under ``data_dir`` via ``loggers.record``."""
    env = innermost(env)
    replayer = PathReplayPolicy(sampler, spec)
    meta = {**spec.as_metadata(), "sampler": sampler.name, "sampler_params": policy_params_json(sampler),
            **(metadata or {})}
    record(TreeEnv(env), replayer, len(paths), data_dir, seeds=[p.seed for p in paths], run_name=run_name,
           workers=workers, before_episode=PathHook(replayer, paths, spec), metadata=meta, progress=progress)


def record_trees(env: LanguageEnv, policy: Policy, spec: TreeSpec, trees: int, data_dir: str | os.PathLike, *,
                 seed: int = 0, seeds: Sequence[int] | None = None, run_name: str = "trees", workers: int = 1,
                 metadata: Mapping[str, Any] | None = None, progress: bool = False,
                 check: bool = True) -> TreeRecordResult:
    """Grows ``trees`` trees and records every root-to-leaf path under ``data_dir`` (see the module docstring).

    ``data_dir`` must be new or empty (``loggers.record``). With ``check`` the logs are read back and must
    rebuild the grown trees exactly.
    """
    started = time.perf_counter()
    env = innermost(env)
    grown, paths, num_pairs = plan_paths(env, policy, spec, trees, seed, run_name, seeds)
    record_paths(env, policy, spec, paths, data_dir, run_name=run_name, workers=workers, metadata=metadata,
                 progress=progress)
    if check:
        check_replayed(grown, read_episodes(data_dir))
    return TreeRecordResult(os.fspath(data_dir), len(grown), len(paths), sum(t.num_nodes for t in grown), num_pairs,
                            time.perf_counter() - started, grown)


def record_and_read_trees(env: LanguageEnv, policy: Policy, spec: TreeSpec, seeds: Sequence[int], run_name: str,
                          work_dir: str | os.PathLike | None = None) -> Iterator[dict[str, Any]]:
    """``record_trees`` into a temporary folder (removed afterwards), yielding the episodes read back (builders)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix=f"{run_name}-", dir=work_dir) as tmp:
        record_trees(env, policy, spec, len(seeds), os.path.join(tmp, "logs"), seeds=seeds, run_name=run_name)
        yield from read_episodes(os.path.join(tmp, "logs"))


__all__ = ["TREE_EPISODE_METADATA", "PathHook", "PathReplayPolicy", "TreeEnv", "TreeRecordResult", "TreeSpec",
           "TreePath", "acting_agent", "branch_seed", "step_rewards", "check_replayed", "grow_tree", "grow_trees", "record_paths", "plan_paths", "record_and_read_trees", "record_trees", "replay", "resample_copies", "sample_responses"]
