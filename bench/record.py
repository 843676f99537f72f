"""Benchmark of recording, side by side in one run: the bare environment loop, raw EnvLogger around the same
environment, and ``loggers.record`` at each durability setting, on the same replayed Wordle games; then
expert (optimal-policy) games recorded per second end to end on ``W`` workers.

Run: ``PYTHONPATH=. python bench/record.py [--games N] [--repeats R] [--workers W] [--expert-games M]
[--lmrl-gym-games K]``. Prints figures; asserts nothing. Each logging row is the best of ``R`` runs, the rows
interleaved run by run so that load from other processes falls on all of them alike; ratios are taken within
the run. Raw EnvLogger is ``envlogger.EnvLogger`` with its default Riegeli backend (flushed at random, 1 step
in 5,000, and at close: it promises nothing for a killed run) and the same step and episode metadata as
``record``. The expert row extrapolates its rate to 100,000 games (the target: under 2 minutes on 2 workers),
adding once the workers' start-up, which it times apart.
A row compares raw EnvLogger and ``record`` (per episode) on ``N`` expert games of 4-5 steps each, where the
fixed cost of a log directory (its lock, journal, manifest and the check of its close) weighs most per episode.
The last rows time the recipe of the ``wordle_synthetic/lmrl_gym`` builder config (``loggers.wordle_recipes``:
LMRL-Gym's behaviour policy played, logged and read back, shards over ``W`` processes as Beam's workers would)
and extrapolate it to the published 1,100,000 games (TFDS serialisation not included).

Minari's ``DataCollector`` is compared when Minari is installed (``bench/minari_row.py``: a gymnasium adapter of
the same environment, the same games); it is not part of our stack, and without it the row says so.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import tempfile
import time
from typing import Callable

import envlogger

from loggers import read_episodes, record
from loggers.durability import PER_EPISODE, Durability
from loggers.metadata import env_step_metadata, episode_metadata
from loggers.wordle_recipes import play_shard
from rlds_lang.env import run_episode
from rlds_lang.wordle import lmrl_gym
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy
from rlds_lang.wordle.recipes import Shard
from rlds_lang.wordle.words import official_answers

#: the group commit setting benchmarked beside per-episode durability.
GROUP = Durability.group(episodes=100, milliseconds=1000.0)


class ReplayGuesses:
    """Replays precomputed guesses so that env/logging cost is measured without policy cost."""

    name = "replay_guesses"

    def __init__(self, games: list[list[str]]):
        self.games, self.index = games, -1

    def reset(self, seed: int) -> None:
        self.index = seed

    def params(self) -> dict:
        return {}

    def act(self, observations, actions) -> str:
        return self.games[self.index][len(actions)]


def _answer_by_index(env: WordleEnv, i: int) -> None:
    env.set_next_answer(official_answers().words[i % len(official_answers())])


def _count_shard(shard: Shard) -> int:
    return sum(1 for _ in play_shard(shard))


def lmrl_gym_rate(games: int, workers: int, shard_size: int = 1000) -> tuple[int, float]:
    """``(games, seconds)`` of recording ``games`` games of the ``lmrl_gym`` builder recipe in shards over
    ``workers`` processes (each shard: play, log with EnvLogger, read back)."""
    recipe = lmrl_gym.recipe("train", episodes=games)
    shards = [Shard(recipe, k, start, min(start + shard_size, games))
              for k, start in enumerate(range(0, games, shard_size))]
    started = time.perf_counter()
    if workers <= 1:
        done = sum(map(_count_shard, shards))
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            done = sum(pool.map(_count_shard, shards))
    return done, time.perf_counter() - started


def _bare(env: WordleEnv, replay: ReplayGuesses, games: int) -> None:
    for i in range(games):
        _answer_by_index(env, i)
        run_episode(env, replay, seed=i)


def _raw_envlogger(env: WordleEnv, replay: ReplayGuesses, games: int,
                   answer: Callable[[WordleEnv, int], None] = _answer_by_index) -> None:
    """The same games through ``envlogger.EnvLogger`` as it comes (default backend), writing the same metadata."""
    state = {"index": 0}

    def episode_fn(timestep, action, wrapped):
        if not timestep.last():
            return None
        return episode_metadata(wrapped, episode_id=f"raw-{state['index']:08d}", policy=replay.name,
                                policy_params="{}", seed=state["index"])

    with tempfile.TemporaryDirectory() as tmp:
        with envlogger.EnvLogger(env, data_directory=tmp, step_fn=env_step_metadata, episode_fn=episode_fn,
                                 metadata={"task": env.task_name}) as logged:
            for i in range(games):
                state["index"] = i
                answer(env, i)
                run_episode(logged, replay, seed=i)


def _ours(durability: Durability, answer: Callable[[WordleEnv, int], None] = _answer_by_index,
          ) -> Callable[[WordleEnv, ReplayGuesses, int], None]:
    def run(env: WordleEnv, replay: ReplayGuesses, games: int) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            result = record(env, replay, games, f"{tmp}/logged", before_episode=answer, progress=False,
                            durability=durability)
            assert result.num_episodes == games
    return run


def _best_of(rows: dict[str, Callable[[WordleEnv, ReplayGuesses, int], None]], replay: ReplayGuesses, games: int,
             repeats: int) -> dict[str, float]:
    """``{row: best seconds}`` over ``repeats`` rounds, the rows interleaved within each round."""
    env, best = WordleEnv(seed=0), {name: float("inf") for name in rows}
    for _ in range(repeats):
        for name, run in rows.items():
            started = time.perf_counter()
            run(env, replay, games)
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def _expert_seconds(env: WordleEnv, games: int, workers: int, data_dir: str) -> float:
    """Seconds ``record`` takes for ``games`` optimal-policy games on ``workers`` processes."""
    started = time.perf_counter()
    result = record(env, OptimalPolicy(), games, data_dir, before_episode=_answer_by_index, workers=workers,
                    progress=False)
    assert result.num_episodes == games
    return time.perf_counter() - started


def _expert_games(count: int, keep: Callable[[list[str]], bool] = lambda guesses: True,
                  ) -> tuple[list[list[str]], list[int]]:
    """``(guesses, answer indices)`` of the first ``count`` expert games ``keep`` accepts (answer ``i`` of the
    official list in game ``i``, scanning on past rejected answers)."""
    env, policy = WordleEnv(seed=0), OptimalPolicy()
    played, answers, i = [], [], 0
    while len(played) < count:
        _answer_by_index(env, i)
        guesses = run_episode(env, policy, seed=i).actions
        if keep(guesses):
            played.append(guesses)
            answers.append(i)
        i += 1
    return played, answers


def short_games(games: int, repeats: int) -> tuple[int, dict[str, float]]:
    """``(steps, {"raw": seconds, "record": seconds})``: raw EnvLogger and ``record`` (per episode) on ``games``
    expert games of 4-5 EnvLogger steps (3-4 guesses) each, best of ``repeats`` interleaved rounds: the cost per
    episode when episodes are short, where what a log directory's open and close add weighs most."""
    played, answers = _expert_games(games, lambda guesses: len(guesses) + 1 in (4, 5))

    def answer(env: WordleEnv, i: int) -> None:
        env.set_next_answer(official_answers().words[answers[i] % len(official_answers())])

    rows = {"raw": functools.partial(_raw_envlogger, answer=answer), "record": _ours(PER_EPISODE, answer)}
    return sum(len(g) + 1 for g in played), _best_of(rows, ReplayGuesses(played), games, repeats)


def side_by_side(games: int, repeats: int) -> tuple[int, dict[str, float]]:
    """``(steps, {row: best seconds})`` of the bare loop, raw EnvLogger and ``record`` at each durability setting
    on the same ``games`` replayed expert games, rows interleaved within each of ``repeats`` rounds."""
    played, _ = _expert_games(games)
    replay = ReplayGuesses(played)
    rows = {"bare environment loop": _bare, "raw envlogger.EnvLogger": _raw_envlogger,
            f"record, per episode ({PER_EPISODE.loss_bound()})": _ours(PER_EPISODE),
            f"record, group commit {GROUP.episodes} ep / {GROUP.milliseconds:g} ms": _ours(GROUP)}
    try:
        import jax  # noqa: F401
        import minari  # noqa: F401
        rows["Minari DataCollector (gymnasium adapter, same games)"] = _minari
    except ImportError as missing:
        print(f"Minari DataCollector: not measured ({missing}; pip install \"minari[create]\" to compare)")
    return sum(len(g) + 1 for g in played), _best_of(rows, replay, games, repeats)


def _minari(env: WordleEnv, replay: ReplayGuesses, games: int) -> None:
    from bench.minari_row import minari_seconds

    minari_seconds(env, replay.games[:games], _answer_by_index)


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--expert-games", type=int, default=5000,
                        help="games for the end-to-end expert row (100000 measures the target directly)")
    parser.add_argument("--lmrl-gym-games", type=int, default=0,
                        help="games of the lmrl_gym builder recipe to time (0 skips the row)")
    args = parser.parse_args()

    steps, best = side_by_side(args.games, args.repeats)
    raw = best["raw envlogger.EnvLogger"]
    print(f"games: {args.games}, steps: {steps} (same games in every row), best of {args.repeats}")
    for name, seconds in best.items():
        print(f"{name:62s} {steps / seconds:9.0f} steps/s  {raw / seconds:5.2f}x raw EnvLogger")
    short_steps, short = short_games(args.games, args.repeats)
    print(f"{args.games} games of 4-5 steps ({short_steps} steps), best of {args.repeats}: raw EnvLogger "
          f"{args.games / short['raw']:.0f} episodes/s, record per episode {args.games / short['record']:.0f} "
          f"episodes/s: {short['raw'] / short['record']:.2f}x raw EnvLogger")

    with tempfile.TemporaryDirectory() as tmp:
        env = WordleEnv(seed=0)
        record(env, OptimalPolicy(), args.games, f"{tmp}/logged", before_episode=_answer_by_index, progress=False)
        started = time.perf_counter()
        read_back = sum(1 for _ in read_episodes(f"{tmp}/logged"))
        print(f"read back steps/s (loggers.read_episodes): {steps / (time.perf_counter() - started):.0f} "
              f"({read_back} episodes)")

        startup = _expert_seconds(env, args.workers, args.workers, f"{tmp}/startup")  # one game per worker
        seconds = _expert_seconds(env, args.expert_games, args.workers, f"{tmp}/expert")
    rate = args.expert_games / seconds
    if seconds > 2 * startup:  # enough games to tell the steady rate from the start-up
        steady = args.expert_games / (seconds - startup)
        estimate, how = startup + 100_000 / steady, "start-up + 100,000 games at the steady rate"
        steady_note = f"; without the workers' start-up ({startup:.1f} s, timed on {args.workers} games): {steady:.0f}"
    else:
        estimate, how, steady_note = 100_000 / rate, "too few games to time apart from the start-up", ""
    print(f"expert games recorded/s (optimal policy + env + logging, per-episode durability, {args.workers} "
          f"workers, {args.expert_games} games in {seconds:.1f} s): {rate:.0f}{steady_note}")
    print(f"-> 100,000 expert games would take {estimate:.0f} s ({how}; target < 120 s; --expert-games 100000 "
          "measures it)")
    if args.lmrl_gym_games > 0:
        done, seconds = lmrl_gym_rate(args.lmrl_gym_games, args.workers,
                                      shard_size=max(1, min(1000, -(-args.lmrl_gym_games // args.workers))))
        total = lmrl_gym.TRAIN_GAMES + lmrl_gym.EVAL_GAMES
        print(f"lmrl_gym recipe games recorded/s (behaviour policy + env + logging + read back, {args.workers} "
              f"workers, {done} games in {seconds:.1f} s): {done / seconds:.1f}")
        print(f"-> the published 1,100,000 games would take {total / (done / seconds) / 3600:.2f} h at this rate "
              f"({total / (done / seconds) * args.workers / 3600:.2f} CPU-hours)")


if __name__ == "__main__":
    main()
