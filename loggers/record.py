"""``record``: play a policy in a language environment and log every step losslessly with EnvLogger.

Each episode gets a seed (``seed + index``, or ``seeds[index]`` from an explicit list) given to the
environment and the policy, an id (``{run_name}-{index:08d}``) and episode metadata: the id, the task,
the policy's name and parameters (canonical JSON), the seed, and the environment's own
``episode_metadata()`` (configuration, hidden state). Work is split into chunks, one EnvLogger log
directory per chunk under ``data_dir``, spread over ``workers`` processes, with a progress bar. A chunk
is readable as soon as it is closed; until then its finished episodes are committed to a journal as
``durability`` says (``loggers.durability``: by default each one when it ends, so a killed run loses at
most the episode in flight; group commit trades a bounded loss for speed), see ``loggers.writer``.

Example::

    from loggers import record
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import OptimalPolicy

    result = record(WordleEnv(), OptimalPolicy(), episodes=20, data_dir="/tmp/wordle_logs")
    print(result.num_episodes, result.num_steps)
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import time
from typing import Any, Callable, Mapping, Sequence

import dm_env
import envlogger
import numpy as np
from tqdm.auto import tqdm

from loggers.durability import PER_EPISODE, Durability
from loggers.folder_lock import FolderLock
from loggers.metadata import env_step_metadata, episode_metadata
from loggers.plain_env import as_language_env, as_policy
from loggers.workers import check_main_guard, run_spawned
from loggers.writer import DurableRiegeliWriter
from rlds_lang.env import LanguageEnv, Policy, policy_params_json, run_episode
from rlds_lang.spec_schema import SPECS_KEY, describe_environment, to_json

#: a hook run before each episode with the (unwrapped) environment and the episode index.
BeforeEpisode = Callable[[LanguageEnv, int], None]


@dataclasses.dataclass
class RecordResult:
    """What ``record`` wrote."""

    data_dir: str
    num_episodes: int
    num_steps: int
    seconds: float
    log_dirs: list[str]


@dataclasses.dataclass
class _Chunk:
    """Episodes ``[start, stop)`` written to log directory ``chunk_{index}``; ``seeds[k]`` seeds episode ``start + k``."""

    index: int
    start: int
    stop: int
    seeds: tuple[int, ...]


def _episode_metadata_fn(policy: Policy, run_name: str, state: dict[str, Any]):
    params = policy_params_json(policy)

    def episode_fn(timestep: dm_env.TimeStep, action: Any, env: LanguageEnv) -> Mapping[str, Any] | None:
        if not timestep.last():
            return None
        return episode_metadata(env, episode_id=f"{run_name}-{state['index']:08d}", policy=policy.name,
                                policy_params=params, seed=state["seed"])

    return episode_fn


def _record_chunk(env: LanguageEnv, policy: Policy, chunk: _Chunk, data_dir: str, run_name: str,
                  before_episode: BeforeEpisode | None, metadata: Mapping[str, Any], durability: Durability,
                  on_episode: Callable[[int], None] | None = None) -> tuple[str, int, int]:
    """Records episodes ``[chunk.start, chunk.stop)`` into ``data_dir/chunk_XXXXX``."""
    log_dir = os.path.join(data_dir, f"chunk_{chunk.index:05d}")
    os.makedirs(log_dir, exist_ok=True)
    state: dict[str, Any] = {"index": chunk.start, "seed": chunk.seeds[0]}
    steps = 0
    with envlogger.EnvLogger(env, data_directory=log_dir, backend=DurableRiegeliWriter,
                             episode_fn=_episode_metadata_fn(policy, run_name, state),
                             step_fn=env_step_metadata, metadata=dict(metadata), durability=durability) as logged:
        for i, episode_seed in zip(range(chunk.start, chunk.stop), chunk.seeds):
            state["index"], state["seed"] = i, episode_seed
            if before_episode is not None:
                before_episode(env, i)
            episode = run_episode(logged, policy, seed=episode_seed)
            steps += episode.num_actions + 1
            if on_episode is not None:
                on_episode(1)
    return log_dir, chunk.stop - chunk.start, steps


def _worker(payload: bytes) -> tuple[str, int, int]:
    env, policy, chunk, data_dir, run_name, before_episode, metadata, durability = pickle.loads(payload)
    return _record_chunk(env, policy, chunk, data_dir, run_name, before_episode, metadata, durability)


def _episode_seeds(episodes: int, seed: int, seeds: Sequence[int] | None) -> list[int]:
    """Every episode's seed: ``seed + i``, or ``seeds[i]`` (checked: one integer per episode)."""
    if seeds is None:
        return [int(seed) + i for i in range(episodes)]
    seeds = list(seeds)
    if len(seeds) != episodes:
        raise ValueError(f"seeds has {len(seeds)} entries but episodes={episodes}: give exactly one seed per episode")
    out = []
    for i, value in enumerate(seeds):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"seeds[{i}] must be an integer, got {type(value).__name__}: {value!r}")
        out.append(int(value))
    return out


def record(env: dm_env.Environment, policy: Policy | Callable[..., Any], episodes: int,
           data_dir: str | os.PathLike, *, seed: int = 0,
           seeds: Sequence[int] | None = None, run_name: str = "run", workers: int = 1,
           chunk_size: int | None = None, before_episode: BeforeEpisode | None = None,
           metadata: Mapping[str, Any] | None = None, progress: bool = True,
           durability: Durability = PER_EPISODE) -> RecordResult:
    """Records ``episodes`` episodes of ``policy`` in ``env`` under ``data_dir`` (see the module docstring).

    Args:
      env: the environment (unwrapped; each worker gets a pickled copy): a ``rlds_lang.env.LanguageEnv``, or any
        ``dm_env.Environment`` whose specs hold text, numbers or arrays (``loggers.plain_env``). Its specs'
        description (``rlds_lang.spec_schema``) is stored with the dataset-level metadata, so the logs build
        into a dataset without a hand-written builder (``rlds-lang build DIR --name NAME``).
      policy: the policy (each worker gets a pickled copy): a ``rlds_lang.env.Policy`` or a function
        ``act(observations, actions) -> action``.
      episodes: how many episodes.
      data_dir: output folder; must be empty or absent (nothing already recorded is overwritten). It is locked
        while ``record`` runs: a second recorder started into it gets ``loggers.folder_lock.FolderLockedError``
        naming the holder's process id. A recording whose environment or policy fails before any episode is
        finished removes the folder again if it made it (one whose files could not be written is kept).
      seed: episode ``i`` is seeded with ``seed + i`` (unless ``seeds`` is given).
      seeds: explicit per-episode seeds, one per episode: episode ``i`` is seeded with ``seeds[i]`` (seeds may
        repeat, e.g. to replay one episode's randomness); its ``seed`` metadata is that seed, and the
        dataset-level metadata says ``explicit_seeds: True``. Its length must be ``episodes``.
      run_name: prefix of episode ids; make it unique per dataset.
      workers: processes to spread the chunks over (1 = in this process). They are spawned: a script calling
        ``record`` with several workers keeps its top-level code under ``if __name__ == "__main__":``, else
        ``loggers.workers.MissingMainGuardError`` is raised before anything is recorded; a worker that dies
        raises ``RuntimeError``; workers die with this process (killed, they stop writing at once).
      chunk_size: episodes per log directory (default: at most 1,000; with several workers, about four chunks
        per worker).
      before_episode: hook called with the environment and the episode index before each episode.
      metadata: dataset-level metadata stored by EnvLogger beside the environment specs.
      progress: show a progress bar.
      durability: when finished episodes are committed, i.e. what a killed run may lose
        (``loggers.durability``): ``PER_EPISODE`` (default) loses at most the episode in flight;
        ``Durability.group(episodes=N, milliseconds=T)`` at most that and the episodes finished since the
        last commit (fewer than N, none older than T ms).

    Raises:
      loggers.log_folder.LogWriteError: a file could not be written (a full disk): recording stopped; the message
        names the log directory and the file, and every episode committed before stays readable.
    """
    if episodes < 0:
        raise ValueError(f"episodes must be >= 0, got {episodes}")
    env, policy = as_language_env(env), as_policy(policy)
    episode_seeds = _episode_seeds(episodes, seed, seeds)
    data_dir = os.fspath(data_dir)
    workers = max(1, int(workers))
    if chunk_size is None:
        # several chunks per worker balance the load; one worker gains nothing from more log directories, and
        # each costs a close (an fsync of four files)
        per_chunk = -(-episodes // (workers * 4)) if workers > 1 else episodes
        chunk_size = max(1, min(1000, per_chunk))
    chunks = [_Chunk(k, s, min(s + chunk_size, episodes), tuple(episode_seeds[s:s + chunk_size]))
              for k, s in enumerate(range(0, episodes, chunk_size))]
    spawn = workers > 1 and len(chunks) > 1
    if spawn:
        check_main_guard(f"record(..., workers={workers})")
    meta = {"task": env.task_name, "policy": policy.name, "policy_params": policy_params_json(policy),
            "run_name": run_name, "seed": int(seed), "explicit_seeds": seeds is not None,
            SPECS_KEY: to_json(describe_environment(env)), **(metadata or {})}
    created = not os.path.exists(data_dir)
    os.makedirs(data_dir, exist_ok=True)
    with FolderLock(data_dir, "record"):  # checked empty under the lock: two record calls never share a folder
        if os.listdir(data_dir):
            raise FileExistsError(f"{data_dir} is not empty: record into a new folder so nothing recorded is lost")
        try:
            return _record_chunks(env, policy, chunks, data_dir, run_name, workers, spawn, before_episode,
                                  durability, progress, meta)
        except BaseException as error:
            if created and not isinstance(error, OSError):  # under the lock: no other writer is in the folder
                _remove_if_nothing_finished(data_dir)
            raise


def _remove_if_nothing_finished(data_dir: str) -> None:
    """Removes the folder a failed ``record`` made when it holds no finished episode (nothing acknowledged to
    keep): the environment or the policy failed before an episode ended. A folder holding one, one that cannot be
    read, or one whose files could not be written (an ``OSError`` such as ``loggers.log_folder.LogWriteError``:
    its message names them) is kept."""
    from loggers.reader import read_episodes

    try:
        if next(iter(read_episodes(data_dir)), None) is not None:
            return
    except Exception:  # noqa: BLE001 - unreadable: keep it for inspection rather than guess
        return
    shutil.rmtree(data_dir, ignore_errors=True)


def _record_chunks(env: LanguageEnv, policy: Policy, chunks: list[_Chunk], data_dir: str, run_name: str, workers: int,
                   spawn: bool, before_episode: BeforeEpisode | None, durability: Durability, progress: bool,
                   meta: dict[str, Any]) -> RecordResult:
    """Records every chunk into its log directory under ``data_dir`` (in this process, or spawned workers)."""
    episodes = sum(chunk.stop - chunk.start for chunk in chunks)
    started = time.perf_counter()
    dirs: list[str] = []
    total_eps = total_steps = 0
    with tqdm(total=episodes, desc=f"record {env.task_name}/{policy.name}", unit="ep", disable=not progress) as bar:
        if not spawn:
            for chunk in chunks:
                d, n, s = _record_chunk(env, policy, chunk, data_dir, run_name, before_episode, meta, durability,
                                        bar.update)
                dirs.append(d)
                total_eps, total_steps = total_eps + n, total_steps + s
        else:
            payloads = [pickle.dumps((env, policy, c, data_dir, run_name, before_episode, meta, durability))
                        for c in chunks]
            for d, n, s in run_spawned(_worker, payloads, workers):
                dirs.append(d)
                total_eps, total_steps = total_eps + n, total_steps + s
                bar.update(n)
    return RecordResult(data_dir, total_eps, total_steps, time.perf_counter() - started, sorted(dirs))
