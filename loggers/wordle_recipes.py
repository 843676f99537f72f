"""Recording recipes of Wordle datasets: play a recipe's shard, or replay retrofitted tweets, through ``loggers.record``.

The core (``rlds_lang.wordle.recipes``, ``rlds_lang.wordle.retrofit``) says *what* is played -- recipes,
shards, takeover policies, retrofitted guesses -- and never records; this module plays it through
``loggers.record_and_read`` so generated data is born exactly like live runs. Builders and tests call
``play_shard`` and ``record_retrofits``.

Example::

    from loggers.wordle_recipes import play_shard
    from rlds_lang.wordle.recipes import Recipe, Shard

    recipe = Recipe("demo", "optimal", episodes=2)
    episodes = list(play_shard(Shard(recipe, 0, 0, 2)))
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from typing import Any, Iterator, Sequence

from loggers.roundtrip import record_and_read, record_and_read_cached
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.game import Rule
from rlds_lang.wordle.recipes import (AnswerByIndex, BranchHook, Shard, TaggedWordleEnv, TakeoverPolicy,
                                      branch_plan, check_branch_prefix, recipe_policy)
from rlds_lang.wordle.retrofit import RetrofitReplayPolicy, RetrofittedGame
from rlds_lang.wordle.words import WordList


def _record_and_read(env: WordleEnv, policy: Any, episodes: int, *, shard: Shard, work_dir: str | None,
                     cache_dir: str | None, run_name: str, **record_kwargs: Any) -> Iterator[dict[str, Any]]:
    """``record_and_read``, or its cached form keyed by the shard when ``cache_dir`` is given."""
    if cache_dir is None:
        return record_and_read(env, policy, episodes, work_dir, run_name=run_name, **record_kwargs)
    key = {"shard": {**dataclasses.asdict(shard), "recipe": shard.recipe.key()}, "run_name": run_name,
           "episodes": episodes}
    return record_and_read_cached(env, policy, episodes, os.path.join(cache_dir, run_name), key, run_name=run_name,
                                  **record_kwargs)


def play_shard(shard: Shard, work_dir: str | None = None, cache_dir: str | None = None) -> Iterator[dict[str, Any]]:
    """Records the shard's episodes (and branches) with ``loggers.record``, yields them as RLDS episodes.

    Logs go to temporary folders under ``work_dir`` (default: the system temp folder), removed once read
    back; with ``cache_dir`` they are kept there instead (``<run>-<index>`` and ``<run>-<index>-branch``,
    ``loggers.roundtrip.record_and_read_cached``) and a shard found complete there is read, not played again.
    Branches are recorded with their parent's seed and initial answer and checked to replay the
    parent up to ``branch_turn`` (``BranchPrefixError`` otherwise).
    """
    recipe = shard.recipe
    run = f"{recipe.run_name}-{shard.index:04d}"
    branching = recipe.branch_policy is not None
    env = TaggedWordleEnv if branching else WordleEnv
    env = env(answers=recipe.answers, guesses=recipe.guesses, rule=recipe.rule, mode=recipe.mode, seed=recipe.seed)
    hook = AnswerByIndex(shard.start) if recipe.episodes is None else None
    play = functools.partial(_record_and_read, shard=shard, work_dir=work_dir, cache_dir=cache_dir)
    parents = play(env, recipe_policy(recipe.policy, recipe.policy_params, recipe), shard.stop - shard.start,
                   seed=recipe.seed + shard.start, run_name=run, before_episode=hook)
    if not branching:
        yield from parents
        return
    parents = list(parents)
    yield from parents
    plan = branch_plan(recipe, parents)
    if not plan:
        return
    policy = TakeoverPolicy(recipe_policy(recipe.branch_policy, recipe.branch_params, recipe))
    branches = play(env, policy, len(plan), seeds=[int(p["seed"]) for p, _, _ in plan], run_name=f"{run}-branch",
                    before_episode=BranchHook(policy, plan, set_answer=hook is not None))
    by_id = {p["episode_id"]: p for p in parents}
    for branch in branches:
        check_branch_prefix(by_id[branch["parent_episode_id"]], branch)
        yield branch


class RetrofitHook:
    """``before_episode`` hook: game ``i`` sets the answer, the metadata tags and the policy's guesses."""

    def __init__(self, policy: RetrofitReplayPolicy, games: Sequence[RetrofittedGame]):
        self.policy = policy
        self.games = games

    def __call__(self, env: Any, i: int) -> None:
        game = self.games[i]
        env.set_next_answer(game.fit.answer)
        env.tags = game.tags()
        self.policy.guesses = game.fit.guesses


def record_retrofits(games: Sequence[RetrofittedGame], run_name: str, answers: WordList | str = "official_answers",
                     guesses: WordList | str = "official_guesses", rule: Rule | str = Rule.OFFICIAL,
                     work_dir: str | None = None) -> Iterator[dict[str, Any]]:
    """Records ``games`` through ``loggers.record`` in a ``WordleEnv`` (fixed answer) and yields the RLDS
    episodes read back (ids ``{run_name}-{i:08d}``); the log folder is temporary (``loggers.record_and_read``)."""
    rule = Rule(rule).value
    env = TaggedWordleEnv(answers=answers, guesses=guesses, rule=rule, mode="fixed")
    policy = RetrofitReplayPolicy(rule)
    return record_and_read(env, policy, len(games), work_dir, run_name=run_name,
                           before_episode=RetrofitHook(policy, games))


def _count_shard(shard: Shard, cache_dir: str) -> int:
    """Plays (or reads back) one shard into ``cache_dir``; the number of episodes it holds."""
    return sum(1 for _ in play_shard(shard, cache_dir=cache_dir))


def prefill_shard_cache(shards: Sequence[Shard], cache_dir: str | os.PathLike, workers: int = 2,
                        progress: bool = True) -> int:
    """Records every shard into the shard cache ``cache_dir`` on ``workers`` processes; the episodes it holds.

    A build with that cache (``RLDS_LANG_SHARD_CACHE``) then only reads the shards back, so one Beam worker
    serialises what several processes recorded: the parallel part needs no Beam multi-processing runner
    (which lost shards of ours, see the README). Shards already complete are read, not played again, so an
    interrupted prefill resumes; each process is started fresh (``spawn``), never forked from a parent that
    has loaded TensorFlow or torch.
    """
    import multiprocessing

    from tqdm.auto import tqdm

    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    count = functools.partial(_count_shard, cache_dir=os.fspath(cache_dir))
    total = 0
    with contextlib.ExitStack() as stack:
        bar = stack.enter_context(tqdm(total=len(shards), desc="record shards", unit="shard", disable=not progress))
        if workers == 1:
            results = map(count, shards)
        else:
            results = stack.enter_context(multiprocessing.get_context("spawn").Pool(workers)).imap_unordered(
                count, shards)
        for n in results:
            total += n
            bar.update()
    return total


__all__ = ["RetrofitHook", "play_shard", "prefill_shard_cache", "record_retrofits"]
