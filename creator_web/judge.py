"""Judging pairs of clips: pairs drawn from two datasets, and each judgement recorded as an RLDS episode.

Until the preference pipeline's human queue (``rlds_lang.preferences.labellers.HumanQueueLabeller``) is
served here, a pair is two whole episodes (each one ``Clip``) drawn at random from two recorded datasets
of the data folder, never the same unordered pair twice in a session. A judgement is logged through
``loggers.live`` as a one-step episode of ``JudgementEnv``: the observation is the pair as shown (JSON),
the action is the label (``left``/``right``/``equal``/``skip``), and the episode metadata names both
clips, the labeller, the time taken and the session. ``record_judgement`` is the one place that writes a
judgement, so switching to the preferences log format is a change there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import secrets
from typing import Any, Mapping

import numpy as np
from dm_env import specs

from creator_web.sessions import Session
from creator_web.storage import DataDir, next_index
from creator_web.tasks import render_steps
from loggers.live import LiveEpisode
from rlds_lang.env import LanguageEnv, Observation, text_spec
from rlds_lang.preferences.types import Clip, Judgement, Label


def episode_clip(dataset: str, episode: Mapping[str, Any]) -> Clip:
    """The whole ``episode`` as one clip (id ``<dataset>/<episode_id>:0``)."""
    steps = episode["steps"]
    texts = [s["observation"]["text"] if isinstance(s["observation"], Mapping) else s["observation"] for s in steps]
    episode_id = str(episode.get("episode_id", ""))
    return Clip(f"{dataset}/{episode_id}:0", episode_id, 0, len(steps), observations=texts,
                actions=[s["action"] for s in steps], rewards=[float(s["reward"]) for s in steps],
                padding=[False] * len(steps))


def clip_view(clip: Clip, task_name: str) -> dict[str, Any]:
    """A clip as the page draws it (Wordle: board rows; a task without a drawing: a transcript)."""
    return {"clip_id": clip.clip_id, "episode_id": clip.source_episode_id,
            **render_steps(task_name, [str(a) for a in clip.actions], [str(o) for o in clip.observations])}


def next_pair(data: DataDir, session: Session, left: str, right: str) -> dict[str, Any] | None:
    """A new pair (left clip from dataset ``left``, right from ``right``) for ``session``; ``None`` when none is left."""
    left_eps, right_eps = data.episodes(left), data.episodes(right)
    if not left_eps or not right_eps:
        return None
    rng = random.Random(secrets.randbits(64))
    total = len(left_eps) * len(right_eps)
    # Small datasets: every pair in random order; large ones: random draws (bounded), so nothing is enumerated.
    order = rng.sample(range(total), total) if total <= 20_000 else (rng.randrange(total) for _ in range(20_000))
    for flat in order:
        i, j = divmod(flat, len(right_eps))
        a, b = episode_clip(left, left_eps[i]), episode_clip(right, right_eps[j])
        key = (a.clip_id, b.clip_id) if a.clip_id <= b.clip_id else (b.clip_id, a.clip_id)
        if a.clip_id == b.clip_id or key in session.judged:
            continue
        pair_id = secrets.token_hex(8)
        session.pending = {pair_id: {"left": a, "right": b, "datasets": (left, right)}}
        return {"pair_id": pair_id, "left": clip_view(a, str(left_eps[i].get("task", ""))),
                "right": clip_view(b, str(right_eps[j].get("task", ""))),
                "datasets": [left, right]}
    return None


class JudgementEnv(LanguageEnv):
    """A one-step environment whose observation is a pair of clips and whose action is the label."""

    task_name = "preference"

    def __init__(self, judgement: Judgement, extra: Mapping[str, Any]):
        super().__init__(seed=0)
        self.judgement, self.extra = judgement, dict(extra)

    def observation_spec(self) -> dict[str, specs.Array]:
        return {"text": text_spec("text")}

    def _reset(self) -> Observation:
        pair = {"left": dataclasses.asdict(self.judgement.left), "right": dataclasses.asdict(self.judgement.right)}
        return {"text": json.dumps(pair, sort_keys=True, ensure_ascii=False, default=str)}

    def _step(self, action: str) -> tuple[Observation, float, bool]:
        Label.parse(action, "judgement label")
        return {"text": ""}, 0.0, True

    def episode_metadata(self) -> dict[str, Any]:
        j = self.judgement
        return {"left_clip_id": j.left.clip_id, "right_clip_id": j.right.clip_id,
                "left_episode_id": j.left.source_episode_id, "right_episode_id": j.right.source_episode_id,
                "label": j.label.value, "labeller": j.labeller, "seconds": np.float64(j.seconds),
                "selection": j.selection, "disagreement": np.float64(j.disagreement), **self.extra}


def record_judgement(data: DataDir, session: Session, judgement: Judgement, datasets: tuple[str, str]) -> str:
    """Logs ``judgement`` as RLDS under ``judgements/<session_id>/``; returns its log folder."""
    folder = data.path("judgements", session.session_id)
    index = next_index(folder, "j_")
    extra = {"annotator": session.annotator, "session_id": session.session_id,
             "left_dataset": datasets[0], "right_dataset": datasets[1]}
    env = JudgementEnv(judgement, extra)
    log_dir = os.path.join(folder, f"j_{index:05d}")
    with LiveEpisode(env, log_dir, episode_id=f"judgement-{session.session_id}-{index:05d}",
                     policy=session.policy, policy_params=json.dumps({"annotator": session.annotator}),
                     seed=0, dataset_metadata={"task": "preference", "source": "creator_web"}) as live:
        live.reset()
        live.step(judgement.label.value)
    return log_dir


def judge(data: DataDir, session: Session, pair_id: str, label: Label, seconds: float) -> str:
    """Records the session's answer about pending pair ``pair_id``; ``KeyError`` if it is not pending."""
    pending = session.pending.get(pair_id)
    if pending is None:
        raise KeyError(f"pair {pair_id!r} is not the pair shown to this session")
    judgement = Judgement(pending["left"], pending["right"], label, labeller=session.policy,
                          seconds=float(seconds), selection="random")
    log_dir = record_judgement(data, session, judgement, pending["datasets"])
    session.judged.add(judgement.pair_key)
    session.pending = {}
    return log_dir


__all__ = ["JudgementEnv", "clip_view", "episode_clip", "judge", "next_pair", "record_judgement"]
