"""Declarative recipes for synthetic Wordle datasets, and the shard function that plays them.

A ``Recipe`` says which policy plays (by ``rlds_lang.wordle.policies.make_policy`` name and parameters),
in which environment configuration, for how many episodes -- or one game per answer of the answer list
(``episodes=None``: episode ``i`` plays answer ``i`` through ``set_next_answer``). With
``branch_policy`` set, every game is also branched at each of its turns (or only at ``branch_at_turn``, only
games of ``branch_min_turns`` turns or more, ``branches_per_turn`` times: ``branch_plan``): the game's own
actions are replayed up to turn ``k`` and then ``branch_policy`` takes over; branches are separate episodes whose
metadata names the parent (``parent_episode_id``) and the turn (``branch_turn``; the parents carry ``""``
and ``-1``). A branch is recorded with its parent's seed and initial answer, so the environment's
randomness replays too (``adversarial_resample`` redraws the hidden word from the environment's RNG):
its first ``branch_turn`` steps equal the parent's, which ``loggers.wordle_recipes.play_shard`` checks (``check_branch_prefix``).

``loggers.wordle_recipes.play_shard`` records one ``Shard`` (a slice of a recipe) with
``loggers.record_and_read`` (a temporary log folder read back with ``loggers.reader``), so every dataset
is born the same way as live runs; this module only describes what to play (the core never records).
Episode ids: ``{run_name}-{shard:04d}-{i:08d}`` and ``{run_name}-{shard:04d}-branch-{j:08d}``.
No TensorFlow here.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from typing import Any, Mapping, Sequence

import numpy as np

from rlds_lang.env import Observation, Policy
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import child_seed

#: episode metadata added by branching recipes (name -> spec) and its value on parent games.
BRANCH_METADATA: dict[str, Any] = {"parent_episode_id": str, "branch_turn": np.int32}
BRANCH_DEFAULTS: dict[str, Any] = {"parent_episode_id": "", "branch_turn": np.int32(-1)}


#: ``Recipe`` fields added after ``wordle_synthetic`` 1.1.0, with their defaults (``Recipe.key``).
_LATER_DEFAULTS: dict[str, Any] = {"branch_at_turn": None, "branches_per_turn": 1, "branch_min_turns": 0}


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One policy in one environment configuration (see the module docstring).

    Attributes:
      run_name: prefix of the episode ids; unique within a dataset config.
      policy: ``make_policy`` name of the policy.
      policy_params: ``make_policy`` keyword arguments, as a JSON object string (keeps the recipe hashable).
      episodes: number of episodes; ``None`` = one game per answer of the answer list, in list order.
      mode: ``WordleEnv`` hidden-word mode.
      rule: ``WordleEnv`` colouring rule.
      answers: answer list name.
      guesses: guess list name.
      seed: episode ``i`` of the recipe is seeded with ``seed + i`` (a branch takes its parent's seed); also the
        environment's construction seed.
      branch_policy: ``make_policy`` name of the policy that takes over in branches (``None``: no branches).
      branch_params: its keyword arguments as JSON.
      branch_at_turn: branch only at this turn (after this many of the game's own moves); ``None``: at every turn.
      branches_per_turn: branches per (game, turn), each with its own takeover randomness (``branch_plan``).
      branch_min_turns: branch only games that lasted at least this many turns. The ILQL paper's Section-5
        data branches each optimal game of at least 4 turns at turn 2 (``branch_plan``).
    """

    run_name: str
    policy: str
    policy_params: str = "{}"
    episodes: int | None = None
    mode: str = "fixed"
    rule: str = "official"
    answers: str = "official_answers"
    guesses: str = "official_guesses"
    seed: int = 0
    branch_policy: str | None = None
    branch_params: str = "{}"
    branch_at_turn: int | None = None
    branches_per_turn: int = 1
    branch_min_turns: int = 0

    def __post_init__(self) -> None:
        if self.branch_at_turn is not None and self.branch_at_turn < 0:
            raise ValueError(f"recipe {self.run_name!r}: branch_at_turn must be >= 0 or None, got {self.branch_at_turn}")
        if self.branches_per_turn < 1 or self.branch_min_turns < 0:
            raise ValueError(f"recipe {self.run_name!r}: need branches_per_turn >= 1 and branch_min_turns >= 0, got "
                             f"{self.branches_per_turn} and {self.branch_min_turns}")
        if self.branch_policy is None and (self.branch_at_turn, self.branches_per_turn, self.branch_min_turns) != (
                None, 1, 0):
            raise ValueError(f"recipe {self.run_name!r}: branch_at_turn, branches_per_turn and branch_min_turns "
                             "need a branch_policy")

    def key(self) -> dict[str, Any]:
        """The recipe's fields as a JSON-able dict (shard caches are keyed by it). The branch options added after
        ``wordle_synthetic`` 1.1.0 appear only when set, so the caches of recipes without them stay valid."""
        return {name: value for name, value in dataclasses.asdict(self).items()
                if name not in _LATER_DEFAULTS or value != _LATER_DEFAULTS[name]}

    def make_env(self) -> WordleEnv:
        """The recipe's environment."""
        return WordleEnv(answers=self.answers, guesses=self.guesses, rule=self.rule, mode=self.mode, seed=self.seed)

    def num_episodes(self, limit: int | None = None) -> int:
        """Episodes (branches not counted) the recipe plays, capped at ``limit``."""
        n = self.episodes if self.episodes is not None else len(self.make_env().answers)
        return n if limit is None else min(n, int(limit))


@dataclasses.dataclass(frozen=True)
class Shard:
    """Episodes ``[start, stop)`` of a recipe; ``index`` numbers the shard within the recipe."""

    recipe: Recipe
    index: int
    start: int
    stop: int


def shards(recipes: Sequence[Recipe], shard_size: int = 250, limit: int | None = None) -> list[Shard]:
    """Cuts recipes into shards of at most ``shard_size`` episodes; ``limit`` caps each recipe's episodes."""
    out = []
    for recipe in recipes:
        n = recipe.num_episodes(limit)
        for k, start in enumerate(range(0, n, shard_size)):
            out.append(Shard(recipe, k, start, min(start + shard_size, n)))
    return out


def branch_plan(recipe: Recipe, parents: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], int, int]]:
    """Every branch of the recorded ``parents`` as ``(parent, turn, copy)``, in recording order.

    A parent of ``t`` turns (RLDS steps minus the terminal one) is branched when ``t >= branch_min_turns``,
    at every turn ``0..t-1`` or only at ``branch_at_turn`` (when it is below ``t``), ``branches_per_turn``
    times (``copy`` = 0, 1, ...). Copy 0 reseeds the takeover policy with the parent's seed, as single-branch
    recipes always did; copy ``c`` > 0 with a seed derived from it (``TakeoverPolicy.reset``).
    """
    plan = []
    for parent in parents:
        turns = len(parent["steps"]) - 1
        if turns < recipe.branch_min_turns:
            continue
        at = range(turns) if recipe.branch_at_turn is None else [t for t in (recipe.branch_at_turn,) if t < turns]
        plan.extend((parent, turn, copy) for turn in at for copy in range(recipe.branches_per_turn))
    return plan


def recipe_policy(name: str, params_json: str, recipe: Recipe) -> Policy:
    """The policy a recipe names: ``make_policy(name, **params)``; the recipe's word lists and rule are added when the policy takes them."""
    from rlds_lang.wordle.policies import POLICIES, make_policy

    params = json.loads(params_json)
    if name in POLICIES:
        signature = inspect.signature(POLICIES[name])
        takes = {p.name for p in signature.parameters.values()}
        open_kwargs = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        for key, value in (("rule", recipe.rule), ("answers", recipe.answers), ("guesses", recipe.guesses)):
            if open_kwargs or key in takes:
                params.setdefault(key, value)
    return make_policy(name, **params)


class TaggedWordleEnv(WordleEnv):
    """A ``WordleEnv`` that reports extra episode metadata (``tags``), set before each episode by a hook.

    Takes ``WordleEnv``'s arguments; ``tags`` starts as ``BRANCH_DEFAULTS``. Example::

        env = TaggedWordleEnv(seed=0)
        env.tags = {"source": "demo"}
        env.reset()
        assert env.episode_metadata()["source"] == "demo"
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.tags: dict[str, Any] = dict(BRANCH_DEFAULTS)

    def episode_metadata(self) -> dict[str, Any]:
        """``WordleEnv``'s episode metadata plus the current ``tags``."""
        return {**super().episode_metadata(), **self.tags}


class TakeoverPolicy:
    """Replays a given action prefix, then lets ``takeover`` choose every following action.

    ``prefix`` and ``copy`` are set before each episode (by the recording hook); ``params()`` names the
    takeover policy, the prefix itself is recorded as the parent episode in the metadata. The episode's seed
    is its parent's (so the environment replays), and copy ``c`` > 0 of a branch reseeds the takeover policy
    with ``child_seed(seed, c)`` so that several branches from one state differ.
    """

    def __init__(self, takeover: Policy):
        self.takeover = takeover
        self.name = f"{takeover.name}_takeover"
        self.prefix: list[str] = []
        self.copy = 0

    def reset(self, seed: int) -> None:
        self.takeover.reset(seed if self.copy == 0 else child_seed(seed, self.copy))

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        if len(actions) < len(self.prefix):
            return self.prefix[len(actions)]
        return self.takeover.act(observations, actions)

    def params(self) -> Mapping[str, Any]:
        return {"takeover": self.takeover.name, "takeover_params": dict(self.takeover.params()),
                "prefix": "actions of parent_episode_id up to branch_turn"}


class AnswerByIndex:
    """``before_episode`` hook: episode ``i`` plays answer ``offset + i``."""

    def __init__(self, offset: int):
        self.offset = offset

    def __call__(self, env: WordleEnv, i: int) -> None:
        env.set_next_answer(env.answers.words[self.offset + i])


class BranchHook:
    """``before_episode`` hook of branches: sets the answer, the tags, the policy's prefix and copy number.

    ``plan`` holds ``(parent, turn, copy)`` entries (``branch_plan``). ``set_answer``: give the branch its
    parent's initial answer through ``set_next_answer`` -- when the parents were given theirs so
    (``AnswerByIndex``); parents whose environment drew its answer must leave the branch's environment to draw
    it too, from the same seed, because a set answer skips that draw and the later redraws would differ.
    """

    def __init__(self, policy: TakeoverPolicy, plan: Sequence[tuple[Mapping[str, Any], int, int]],
                 set_answer: bool = True):
        self.policy = policy
        self.plan = plan
        self.set_answer = set_answer

    def __call__(self, env: TaggedWordleEnv, j: int) -> None:
        parent, turn, copy = self.plan[j]
        if self.set_answer:
            env.set_next_answer(parent["initial_answer"])
        env.tags = {"parent_episode_id": parent["episode_id"], "branch_turn": np.int32(turn)}
        self.policy.prefix = [s["action"] for s in parent["steps"][:turn]]
        self.policy.copy = copy


class BranchPrefixError(AssertionError):
    """A branch did not replay its parent's trajectory up to ``branch_turn``; the message names both episodes."""


def _same(a: Any, b: Any) -> bool:
    """Equality of two (nested dict) step values, arrays compared element-wise with their shapes."""
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        return isinstance(a, Mapping) and isinstance(b, Mapping) and a.keys() == b.keys() and all(
            _same(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b))


def check_branch_prefix(parent: Mapping[str, Any], branch: Mapping[str, Any]) -> None:
    """Raises ``BranchPrefixError`` unless ``branch`` replays ``parent`` up to its ``branch_turn``.

    Both are RLDS episodes as ``loggers.reader`` yields them. Steps ``0..branch_turn-1`` must have the
    same observation, action and reward, and step ``branch_turn`` the same observation (the one the
    takeover policy acts on).
    """
    turn = int(branch["branch_turn"])
    where = f"branch {branch['episode_id']} (parent {parent['episode_id']}, branch_turn {turn})"
    if turn >= len(parent["steps"]) or turn >= len(branch["steps"]):
        raise BranchPrefixError(f"{where}: branch_turn is past the end of the parent ({len(parent['steps'])} steps) "
                                f"or of the branch ({len(branch['steps'])} steps)")
    for k in range(turn + 1):
        keys = ("observation",) if k == turn else ("observation", "action", "reward")
        for key in keys:
            if not _same(parent["steps"][k][key], branch["steps"][k][key]):
                raise BranchPrefixError(f"{where}: step {k} {key} differs: parent {parent['steps'][k][key]!r}, "
                                        f"branch {branch['steps'][k][key]!r}")


__all__ = ["BRANCH_DEFAULTS", "BRANCH_METADATA", "BranchPrefixError", "Recipe", "Shard", "TaggedWordleEnv",
           "TakeoverPolicy", "AnswerByIndex", "BranchHook", "branch_plan", "check_branch_prefix", "recipe_policy", "shards"]
