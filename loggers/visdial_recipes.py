"""Recording recipe of Visual Dialogue datasets: replay human dialogues through ``VisDialEnv`` with ``loggers.record``.

Dataset mode needs no server: the environment's ``CachedBackend`` gives each round's recorded answer and
published reward-cache entry, and ``DataQuestionPolicy`` asks the recorded questions. ``env_stops`` and
``10_stop`` give one episode per dialogue (``env_stops`` ends where the cutoff rule fires);
``agent_stops`` gives one episode per prefix of 0..rounds rounds, each shorter one ending with ``<stop>``
(the whole dialogue ends by itself after its last round, as in the reference data). The episodes
carry the image (``image_id``, ``dialogue_index``, ``split``) and the reward settings as metadata.

Example::

    from loggers.visdial_recipes import record_dialogues
    from rlds_lang.visdial.rewards import RewardConfig

    episodes = list(record_dialogues(dialogues, {"rank": rows}, RewardConfig("env_stops"), run_name="visdial-val"))
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from loggers.roundtrip import record_and_read
from rlds_lang.visdial.backend import CachedBackend
from rlds_lang.visdial.data import Dialogue
from rlds_lang.visdial.env import DataQuestionPolicy, VisDialEnv
from rlds_lang.visdial.rewards import RewardConfig


def replay_plan(dialogues: Sequence[Dialogue], config: RewardConfig) -> list[tuple[Dialogue, int | None]]:
    """``(dialogue, stop_after)`` of every episode: every prefix in ``agent_stops``, else whole dialogues."""
    if config.mode == "agent_stops":
        return [(d, k) for d in dialogues for k in range(min(d.rounds, config.max_rounds) + 1)]
    return [(d, None) for d in dialogues]


class ReplayHook:
    """``before_episode`` hook: episode ``i`` replays ``plan[i]`` (its image, questions and stop point)."""

    def __init__(self, policy: DataQuestionPolicy, plan: Sequence[tuple[Dialogue, int | None]]):
        self.policy = policy
        self.plan = plan

    def __call__(self, env: VisDialEnv, i: int) -> None:
        dialogue, stop_after = self.plan[i]
        env.set_next_dialogue(dialogue)
        self.policy.questions, self.policy.stop_after = dialogue.questions, stop_after


def record_dialogues(dialogues: Sequence[Dialogue], rows: Mapping[str, Sequence[Sequence[float]]],
                     config: RewardConfig, run_name: str, *, work_dir: str | None = None) -> Iterator[dict[str, Any]]:
    """Records the replay of ``dialogues`` and yields the RLDS episodes read back (ids ``{run_name}-{i:08d}``).

    ``rows[kind]`` holds the reward-cache rows indexed by ``Dialogue.index`` (``rank`` and/or ``distance``).
    """
    plan = replay_plan(dialogues, config)
    if not plan:
        return iter(())
    env = VisDialEnv(dialogues, CachedBackend(rows), config)
    policy = DataQuestionPolicy()
    return record_and_read(env, policy, len(plan), work_dir, run_name=run_name,
                           before_episode=ReplayHook(policy, plan))


__all__ = ["ReplayHook", "record_dialogues", "replay_plan"]
