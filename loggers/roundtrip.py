"""``record_and_read``: record episodes into a temporary log folder and yield them back as RLDS episodes.

Builders use it to give generated data the same birth as live runs (``loggers.record`` through
EnvLogger, then ``loggers.reader``) without keeping the logs: the folder is removed once the episodes
have been read (when the generator is exhausted or closed).

``record_and_read_cached`` keeps them instead, in a folder named by the caller: a folder that is complete is
read back without playing again, so a long generation (a 1,100-shard build) resumes after an interruption
instead of starting over. A folder becomes complete atomically (recorded under ``<name>.partial``, then
renamed), and carries the caller's key (``key.json``) so that a folder recorded for other settings is refused.

Example::

    from loggers import record_and_read
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import OptimalPolicy

    episodes = list(record_and_read(WordleEnv(), OptimalPolicy(), 3, run_name="demo", seed=7))
    print([e["episode_id"] for e in episodes])   # ['demo-00000000', 'demo-00000001', 'demo-00000002']
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any, Iterator, Mapping

from loggers.reader import read_episodes
from loggers.record import record
from rlds_lang.env import LanguageEnv, Policy


def record_and_read(env: LanguageEnv, policy: Policy, episodes: int, work_dir: str | os.PathLike | None = None, *,
                    run_name: str = "run", progress: bool = False, **record_kwargs: Any) -> Iterator[dict[str, Any]]:
    """Records ``episodes`` episodes with ``loggers.record`` into a temporary folder and yields them read back.

    Args:
      env: the environment (as for ``record``).
      policy: the policy (as for ``record``).
      episodes: how many episodes.
      work_dir: where the temporary log folder is made (default: the system temp folder).
      run_name: prefix of episode ids (and of the temporary folder's name).
      progress: show ``record``'s progress bar (off by default: callers are usually inner loops).
      **record_kwargs: any other ``record`` argument (``seed``, ``seeds``, ``before_episode``, ``workers``...).
    """
    with tempfile.TemporaryDirectory(prefix=f"{run_name}-", dir=work_dir) as tmp:
        record(env, policy, episodes, tmp, run_name=run_name, progress=progress, **record_kwargs)
        yield from read_episodes(tmp)


class CacheMismatchError(ValueError):
    """A cached log folder was recorded for other settings than the ones asked for."""


def record_and_read_cached(env: LanguageEnv, policy: Policy, episodes: int, folder: str | os.PathLike,
                           key: Mapping[str, Any], *, run_name: str = "run", progress: bool = False,
                           **record_kwargs: Any) -> Iterator[dict[str, Any]]:
    """``record_and_read`` through a kept folder: read ``folder`` back if it is complete, else record it first.

    Args:
      env, policy, episodes, run_name, progress, **record_kwargs: as for ``record_and_read``.
      folder: the log folder to keep (its parent is created if needed).
      key: JSON-serialisable description of what is recorded (recipe, seeds, range); a complete folder whose
        ``key.json`` differs raises ``CacheMismatchError`` naming the folder.
    """
    folder = os.fspath(folder)
    key_json = json.dumps(key, sort_keys=True, default=str)
    if not os.path.isdir(folder):
        partial = folder + ".partial"
        shutil.rmtree(partial, ignore_errors=True)  # an interrupted attempt: never complete, so never read
        os.makedirs(partial)
        record(env, policy, episodes, os.path.join(partial, "logs"), run_name=run_name, progress=progress,
               **record_kwargs)
        with open(os.path.join(partial, "key.json"), "w", encoding="utf-8") as f:
            f.write(key_json)
        os.replace(partial, folder)
    with open(os.path.join(folder, "key.json"), encoding="utf-8") as f:
        found = f.read()
    if json.loads(found) != json.loads(key_json):
        raise CacheMismatchError(f"{folder}: recorded for {found}, asked for {key_json}; remove the folder to "
                                 "record it again")
    count = 0
    for episode in read_episodes(os.path.join(folder, "logs")):
        count += 1
        yield episode
    if count != episodes:
        raise CacheMismatchError(f"{folder}: holds {count} episodes, expected {episodes}")
