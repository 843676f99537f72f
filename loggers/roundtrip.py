"""``record_and_read``: record episodes into a temporary log folder and yield them back as RLDS episodes.

Builders use it to give generated data the same birth as live runs (``loggers.record`` through
EnvLogger, then ``loggers.reader``) without keeping the logs: the folder is removed once the episodes
have been read (when the generator is exhausted or closed).

Example::

    from loggers import record_and_read
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import OptimalPolicy

    episodes = list(record_and_read(WordleEnv(), OptimalPolicy(), 3, run_name="demo", seed=7))
    print([e["episode_id"] for e in episodes])   # ['demo-00000000', 'demo-00000001', 'demo-00000002']
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Iterator

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
