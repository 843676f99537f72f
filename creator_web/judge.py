"""Judging pairs of clips: pairs drawn from two datasets, and each judgement recorded as an RLDS episode.

Until the preference pipeline's human queue (``rlds_lang.preferences.labellers.HumanQueueLabeller``) is
served here, a pair is two whole episodes (each one ``Clip``) drawn at random from two recorded datasets
of the data folder, never the same unordered pair twice in a session. A judgement is logged in the
preferences format of ``loggers.preferences`` (its clips as episodes, the judgement as a step of a session
episode: observation = the clip ids and renderings, action = the label ``left``/``right``/``equal``/``skip``,
step metadata = labeller, seconds, selection), so ``loggers.preferences_dataset.read_judgements`` and
``builders/preferences`` read the browser's judgements like any other. ``record_judgement`` is the one place
that writes a judgement.
"""

from __future__ import annotations

import os
import random
import secrets
from typing import Any, Mapping

import numpy as np

from creator_web.sessions import Session
from creator_web.storage import DataDir, next_index
from creator_web.tasks import render_steps
from loggers.preferences import PreferenceRecorder
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


def record_judgement(data: DataDir, session: Session, judgement: Judgement, datasets: tuple[str, str]) -> str:
    """Logs ``judgement`` in the preferences format (``loggers.preferences``) under ``judgements/<session_id>/``.

    Each judgement gets its own folder ``j_NNNNN`` holding its two clips (``segments/``) and a one-judgement
    session episode (``sessions/``, closed at once so it is durable), whose metadata adds the annotator, the
    index and both datasets; ``loggers.preferences_dataset.read_judgements`` reads them like any preference log.
    Returns the judgement's folder.
    """
    folder = data.path("judgements", session.session_id)
    index = next_index(folder, "j_")
    log_dir = os.path.join(folder, f"j_{index:05d}")
    extra = {"annotator": session.annotator, "judgement_index": np.int64(index), "left_dataset": datasets[0],
             "right_dataset": datasets[1], "source": "creator_web"}
    with PreferenceRecorder(log_dir, run_name="clips") as recorder:
        recorder.session(session.session_id, labeller=session.policy, metadata=extra).write(judgement)
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


__all__ = ["clip_view", "episode_clip", "judge", "next_pair", "record_judgement"]
