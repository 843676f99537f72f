"""Judging pairs of clips: from the preference pipeline's human queue, or drawn from two datasets; each
judgement recorded in the preferences format.

Two sources of pairs:

- the pipeline's queue: a server started with a ``rlds_lang.preferences.labellers.HumanQueueLabeller``
  (``create_app(..., human=labeller)``) shows the pairs the pipeline asks about (``queued_pair``) and sends
  each answer back on the labeller's answer queue; the pipeline that asked records the judgement in its
  preferences database and RLDS log, so nothing is written here (one judgement, one record);
- otherwise two whole episodes (each one ``Clip``) drawn at random from two recorded datasets of the data
  folder, never the same unordered pair twice in a session. Such a judgement is logged here in the
  preferences format of ``loggers.preferences`` (its clips as episodes, the judgement as a step of a session
  episode: observation = the clip ids and renderings, action = the label ``left``/``right``/``equal``/``skip``,
  step metadata = labeller, seconds, selection), so ``loggers.preferences_dataset.read_judgements`` and
  ``builders/preferences`` read the browser's judgements like any other. ``record_judgement`` is the one place
  that writes one.
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
from rlds_lang.preferences.labellers import HumanQueueLabeller
from rlds_lang.preferences.types import Clip, Judgement, Label


def episode_clip(dataset: str, episode: Mapping[str, Any]) -> Clip:
    """The whole ``episode`` as one clip (id ``<dataset>/<episode_id>:0``)."""
    steps = episode["steps"]
    texts = [s["observation"]["text"] if isinstance(s["observation"], Mapping) else s["observation"] for s in steps]
    episode_id = str(episode.get("episode_id", ""))
    return Clip(f"{dataset}/{episode_id}:0", episode_id, 0, len(steps), observations=texts,
                actions=[s["action"] for s in steps], rewards=[float(s["reward"]) for s in steps],
                padding=[False] * len(steps))


def clip_view(clip: Clip, task_name: str, as_text: bool = False) -> dict[str, Any]:
    """A clip as the page draws it (Wordle: board rows; a task without a drawing, or any task ``as_text``: a
    transcript whose rows also carry each step's reward)."""
    view = render_steps(task_name, [str(a) for a in clip.actions], [str(o) for o in clip.observations], as_text)
    if view["kind"] == "text":
        for row, reward in zip(view["rows"], clip.rewards):
            row["reward"] = float(reward)
    return {"clip_id": clip.clip_id, "episode_id": clip.source_episode_id, **view}


def next_pair(data: DataDir, session: Session, left: str, right: str, as_text: bool = False
              ) -> dict[str, Any] | None:
    """A new pair (left clip from dataset ``left``, right from ``right``) for ``session``, drawn as transcripts
    when ``as_text``; ``None`` when none is left."""
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
        return {"pair_id": pair_id, "left": clip_view(a, str(left_eps[i].get("task", "")), as_text),
                "right": clip_view(b, str(right_eps[j].get("task", "")), as_text),
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


def queued_pair(human: HumanQueueLabeller, session: Session, task: str, wait: float, as_text: bool = False
                ) -> dict[str, Any] | None:
    """The next pair the pipeline asks about (waiting up to ``wait`` seconds), now pending for ``session``;
    ``None`` when the pipeline has none waiting."""
    query = human.next_query(timeout=wait)
    if query is None:
        return None
    pair_id = secrets.token_hex(8)
    session.pending = {pair_id: {"left": query.left, "right": query.right, "query_id": query.query_id}}
    return {"pair_id": pair_id, "left": clip_view(query.left, task, as_text),
            "right": clip_view(query.right, task, as_text),
            "datasets": ["pipeline", "pipeline"], "source": "pipeline"}


def judge(data: DataDir, session: Session, pair_id: str, label: Label, seconds: float,
          human: HumanQueueLabeller | None = None) -> dict[str, Any]:
    """Takes the session's answer about pending pair ``pair_id`` (``KeyError`` if it is not pending): a queued
    pair's answer goes back to the pipeline (``{"answered": query_id}``), any other is logged here
    (``{"recorded": log folder}``)."""
    pending = session.pending.get(pair_id)
    if pending is None:
        raise KeyError(f"pair {pair_id!r} is not the pair shown to this session")
    left, right = pending["left"], pending["right"]
    key = (left.clip_id, right.clip_id) if left.clip_id <= right.clip_id else (right.clip_id, left.clip_id)
    if "query_id" in pending:
        if human is None:
            raise KeyError(f"pair {pair_id!r} came from a preference queue this server no longer serves")
        human.answer(pending["query_id"], label, annotator=session.annotator, seconds=float(seconds))
        outcome: dict[str, Any] = {"answered": pending["query_id"]}
    else:
        judgement = Judgement(left, right, label, labeller=session.policy, seconds=float(seconds),
                              selection="random")
        outcome = {"recorded": record_judgement(data, session, judgement, pending["datasets"])}
    session.judged.add(key)
    session.pending = {}
    return outcome


__all__ = ["clip_view", "episode_clip", "judge", "next_pair", "queued_pair", "record_judgement"]
