"""Preference clips and judgements recorded as RLDS through EnvLogger (Riegeli), and read back losslessly.

Layout under a log root (``PreferenceRecorder``; readers find the logs at any depth by their dataset metadata
``task``: ``preference_segment`` or ``preference_session``)::

    ROOT/segments/<writer>/     one EnvLogger log directory per clip writer; each clip is an episode
    ROOT/sessions/<session>/    one log directory per labelling session; the session is one episode

A clip's episode has the clip's steps as its RLDS steps (observation ``o_t`` as the labeller sees it,
action ``a_t``, the true reward ``r_t``; step metadata ``padding`` and ``source_step``, the step's index in
its source episode) plus the neutral last step RLDS requires; its episode metadata holds ``episode_id``
(= the clip id), ``clip_id``, ``source_episode_id`` and the step range ``start``/``stop``.

A session's episode has one RLDS step per judgement: observation ``{"text": "<left id> | <right id>",
"left_id", "right_id", "left_rendering", "right_rendering"}`` (the clip ids and what the labeller was
shown, ``render_clip``), action = the label (``left``/``right``/``equal``/``skip``), step metadata
``labeller``, ``seconds``, ``selection``, ``disagreement`` and again ``label``. Each judgement is flushed
to disk as it is written; the episode is closed (indexed, with its metadata) by ``close``. A session killed
before closing is still read (``include_unfinished``): its last judgement's label, whose RLDS action only
the next step would carry, comes from the ``label`` step metadata -- so no flushed judgement is lost.

Nothing is converted on the way: text comes back byte-for-byte and arrays with their dtype and shape.
``encode_value``/``decode_value`` serialise one step's contents with EnvLogger's codec for the TFDS builder.

Example::

    from loggers.preferences import PreferenceRecorder, read_preference_logs

    with PreferenceRecorder("/tmp/prefs", run_name="run1") as recorder:
        with recorder.session("s1") as session:
            session.write(judgement)            # records its clips too (once per clip id)
    judgements = list(read_preference_logs("/tmp/prefs"))
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Iterator, Mapping

import dm_env
import numpy as np
from envlogger import step_data
from envlogger.converters import codec
from envlogger.proto import storage_pb2

from loggers.reader import dataset_metadata, log_dirs, read_log_dir
from loggers.writer import DurableRiegeliWriter
from rlds_lang.preferences.database import STRADDLING, TRAIN, VALIDATION, EpisodeSplit
from rlds_lang.preferences.types import Clip, Judgement, Label
from rlds_lang.schema import map_nested, text_leaf

SEGMENTS_DIR = "segments"
SESSIONS_DIR = "sessions"
#: the splits of the judgements (``judgement_examples``): by episode, and those straddling the two sides.
JUDGEMENT_SPLITS = (TRAIN, VALIDATION, STRADDLING)
#: the ``task`` of the recorded episodes.
SEGMENT_TASK, SESSION_TASK = "preference_segment", "preference_session"
#: characters of a rendered text step kept in a rendering.
RENDER_LIMIT = 2000


def render_clip(clip: Clip) -> str:
    """What a labeller is shown of a clip, as text: each real step's observation text and action; for array
    observations a one-line description (the images themselves are in the clip's episode)."""
    lines = []
    for t in range(clip.stop - clip.start):
        observation, action = clip.observations[t], clip.actions[t]
        if isinstance(observation, Mapping) and "text" in observation:
            observation = observation["text"]
        if isinstance(observation, (str, bytes)) and isinstance(action, (str, bytes)):
            lines.append(f"{_text(observation)[:RENDER_LIMIT]}\n> {_text(action)[:RENDER_LIMIT]}")
        else:
            obs = np.asarray(observation)
            lines.append(f"step {clip.start + t}: observation {obs.dtype}{list(obs.shape)}, "
                         f"action {np.asarray(action).tolist()}")
    return "\n".join(lines)


def _text(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def encode_value(value: Any) -> bytes:
    """``value`` (nested dicts/lists of text, numbers and arrays) as bytes, losslessly (EnvLogger's codec)."""
    return codec.encode(value).SerializeToString()


def decode_value(data: bytes) -> Any:
    """The inverse of ``encode_value`` (text as ``str``)."""
    return map_nested(text_leaf, codec.decode(storage_pb2.Data.FromString(bytes(data))))


class _Log:
    """One EnvLogger log directory written step by step (no environment: the steps are given)."""

    def __init__(self, log_dir: str, metadata: Mapping[str, Any], flush_every_step: bool):
        if os.path.isdir(log_dir) and os.listdir(log_dir):
            raise FileExistsError(f"{log_dir} is not empty: preferences are recorded into a new folder")
        os.makedirs(log_dir, exist_ok=True)
        self.log_dir = log_dir
        kwargs = {"flush_scheduler": (lambda _: True)} if flush_every_step else {}
        self._writer = DurableRiegeliWriter(log_dir, metadata=dict(metadata), **kwargs)
        self.closed = False

    def step(self, timestep: dm_env.TimeStep, action: Any, custom: Mapping[str, Any]) -> None:
        """Writes one EnvLogger step: ``timestep``, the action that led to it, its step metadata."""
        self._writer.record_step(step_data.StepData(timestep, action, dict(custom)), timestep.first())

    def end_episode(self, metadata: Mapping[str, Any]) -> None:
        """Gives the episode that just ended its metadata (which makes it durable)."""
        self._writer.set_episode_metadata(dict(metadata))

    def close(self) -> None:
        """Closes the log directory (indexed, durable)."""
        if not self.closed:
            self.closed = True
            self._writer.close()


def _episode_meta(episode_id: str, task: str, policy: str, **extra: Any) -> dict[str, Any]:
    """The common episode metadata of ``loggers.metadata`` (no environment: no env metadata)."""
    return {"episode_id": episode_id, "task": task, "policy": policy, "policy_params": "{}", "seed": np.int64(0),
            **extra}


class ClipWriter:
    """Writes clips as episodes into one log directory, each clip id once."""

    def __init__(self, log_dir: str | os.PathLike):
        self._log = _Log(os.fspath(log_dir), {"task": SEGMENT_TASK}, flush_every_step=False)
        self.written: set[str] = set()

    def write(self, clip: Clip) -> bool:
        """Records ``clip`` unless its id was already written; returns whether it was written."""
        if clip.clip_id in self.written:
            return False
        n = len(clip)
        if n == 0:
            raise ValueError(f"clip {clip.clip_id} has no steps: nothing to record")

        def meta(t: int) -> dict[str, Any]:
            """Step metadata of raw step ``t`` (the closing step counts as padding)."""
            pad = bool(clip.padding[t]) if t < n else True
            return {"padding": np.bool_(pad), "source_step": np.int64(clip.start + t)}

        self._log.step(dm_env.restart(clip.observations[0]), None, meta(0))
        for t in range(1, n + 1):
            observation = clip.observations[min(t, n - 1)]
            reward = np.float64(clip.rewards[t - 1])
            timestep = dm_env.transition(reward, observation) if t < n else dm_env.termination(reward, observation)
            self._log.step(timestep, clip.actions[t - 1], meta(t))
        self._log.end_episode(_episode_meta(clip.clip_id, SEGMENT_TASK, "segmenter", clip_id=clip.clip_id,
                                            source_episode_id=clip.source_episode_id, start=np.int64(clip.start),
                                            stop=np.int64(clip.stop)))
        self.written.add(clip.clip_id)
        return True

    def close(self) -> None:
        """Closes the log directory (indexed, durable)."""
        self._log.close()


_NO_PAIR = {"text": "", "left_id": "", "right_id": "", "left_rendering": "", "right_rendering": ""}
_NO_JUDGEMENT = {"label": "", "labeller": "", "seconds": np.float64(0.0), "selection": "",
                 "disagreement": np.float64(0.0)}


class SessionWriter:
    """Records one labelling session as one episode whose steps are judgements (module docstring).

    Args:
      log_dir: a new folder for the session's log.
      session_id: the episode id of the session.
      labeller: the session's labeller (episode metadata ``policy``).
      clips: where the judged clips are recorded (``None``: the caller records them).
      metadata: extra episode metadata (e.g. the selection method, the annotator).
    """

    def __init__(self, log_dir: str | os.PathLike, session_id: str, labeller: str = "",
                 clips: ClipWriter | None = None, metadata: Mapping[str, Any] | None = None):
        self.session_id, self.labeller, self.clips = session_id, labeller, clips
        self._extra = dict(metadata or {})
        self._log = _Log(os.fspath(log_dir), {"task": SESSION_TASK, "session_id": session_id}, flush_every_step=True)
        self._last_label: str | None = None
        self.count = 0

    def write(self, judgement: Judgement) -> None:
        """Records ``judgement`` (and, with a ``ClipWriter``, its clips first); flushed to disk on return."""
        if self._log.closed:
            raise RuntimeError(f"session {self.session_id} is closed")
        if self.clips is not None:
            self.clips.write(judgement.left)
            self.clips.write(judgement.right)
        left, right = judgement.left.clip_id, judgement.right.clip_id
        observation = {"text": f"{left} | {right}", "left_id": left, "right_id": right,
                       "left_rendering": render_clip(judgement.left), "right_rendering": render_clip(judgement.right)}
        custom = {"label": judgement.label.value, "labeller": judgement.labeller,
                  "seconds": np.float64(judgement.seconds), "selection": judgement.selection,
                  "disagreement": np.float64(judgement.disagreement)}
        if self._last_label is None:
            self._log.step(dm_env.restart(observation), None, custom)
        else:
            self._log.step(dm_env.transition(np.float64(0.0), observation), self._last_label, custom)
        self._last_label = judgement.label.value
        self.count += 1

    def close(self) -> None:
        """Ends the session's episode (a neutral closing step carries the last label) and closes its log."""
        if self._log.closed:
            return
        if self._last_label is not None:
            self._log.step(dm_env.termination(np.float64(0.0), dict(_NO_PAIR)), self._last_label, dict(_NO_JUDGEMENT))
            self._log.end_episode(_episode_meta(self.session_id, SESSION_TASK, self.labeller or "unknown",
                                                session_id=self.session_id, judgements=np.int64(self.count),
                                                **self._extra))
        self._log.close()

    def __enter__(self) -> "SessionWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class PreferenceRecorder:
    """Everything of one run under ``root``: one clip writer (``segments/<run_name>``) and its sessions."""

    def __init__(self, root: str | os.PathLike, run_name: str = "run"):
        self.root, self.run_name = os.fspath(root), run_name
        self.clips = ClipWriter(os.path.join(self.root, SEGMENTS_DIR, run_name))
        self._sessions: list[SessionWriter] = []

    def session(self, session_id: str, labeller: str = "", metadata: Mapping[str, Any] | None = None) -> SessionWriter:
        """A new session (log ``sessions/<session_id>``) whose clips go to this recorder's clip writer."""
        writer = SessionWriter(os.path.join(self.root, SESSIONS_DIR, session_id), session_id, labeller, self.clips,
                               metadata)
        self._sessions.append(writer)
        return writer

    def close(self) -> None:
        """Closes every session, then the clip log."""
        for writer in self._sessions:
            writer.close()
        self.clips.close()

    def __enter__(self) -> "PreferenceRecorder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def record_judgements(root: str | os.PathLike, judgements: Iterable[Judgement], session_id: str = "session",
                      labeller: str = "", run_name: str | None = None) -> int:
    """Records ``judgements`` as one session (and their clips) under the new run ``root``; returns how many."""
    with PreferenceRecorder(root, run_name or session_id) as recorder:
        with recorder.session(session_id, labeller) as session:
            for judgement in judgements:
                session.write(judgement)
            return session.count


# -- reading -----------------------------------------------------------------------------------------
def clip_from_episode(episode: Mapping[str, Any]) -> Clip:
    """The ``Clip`` a clip episode (as ``loggers.reader`` yields it) records."""
    steps = list(episode["steps"])[:-1]  # the last RLDS step is the neutral one
    where = f"clip episode {episode.get('episode_id')!r}"
    for key in ("clip_id", "source_episode_id", "start", "stop"):
        if key not in episode:
            raise ValueError(f"{where}: metadata field {key!r} is missing (not a preference segment log?)")
    return Clip(str(episode["clip_id"]), str(episode["source_episode_id"]), int(episode["start"]),
                int(episode["stop"]), [s["observation"] for s in steps], [s["action"] for s in steps],
                [float(s["reward"]) for s in steps], [bool(s["padding"]) for s in steps])


def _logs_of(root: str | os.PathLike, task: str) -> list[str]:
    """The log directories under ``root`` whose dataset metadata says ``task`` (any folder layout)."""
    found = []
    for path in log_dirs(root):
        if dataset_metadata(path).get("task") == task:
            found.append(path)
    return found


def read_clips(root: str | os.PathLike) -> dict[str, Clip]:
    """Every clip recorded under ``root`` (in any clip log below it) by clip id."""
    clips: dict[str, Clip] = {}
    for path in _logs_of(root, SEGMENT_TASK):
        for episode in read_log_dir(path):
            clip = clip_from_episode(episode)
            clips[clip.clip_id] = clip
    return clips


def read_sessions(root: str | os.PathLike) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(session id, judgement steps)`` of every session log under ``root``, unfinished ones included."""
    for path in _logs_of(root, SESSION_TASK):
        # a session killed before it ended is not indexed, but every judgement was flushed: the reader gives
        # its steps as an unfinished episode
        for episode in read_log_dir(path, include_unfinished=True):
            session_id = str(episode.get("session_id", os.path.basename(path)))
            yield session_id, [s for s in episode["steps"] if s["observation"]["left_id"]]


def read_preference_logs(root: str | os.PathLike) -> Iterator[Judgement]:
    """The judgements recorded under ``root`` with their clips, session by session, in order.

    A judgement naming a clip that was never recorded is an error naming the session, the step and the clip.
    """
    for judgement, _ in _with_sessions(root):
        yield judgement


def _with_sessions(root: str | os.PathLike) -> Iterator[tuple[Judgement, str]]:
    clips = read_clips(root)
    for session_id, steps in read_sessions(root):
        for k, step in enumerate(steps):
            observation = step["observation"]
            label = step["action"] or step["label"]  # the last step of an unfinished session: from metadata
            missing = [c for c in (observation["left_id"], observation["right_id"]) if c not in clips]
            if missing:
                raise ValueError(f"{root}: session {session_id} judgement {k} names clip(s) {missing} "
                                 "that no clip log under it records")
            yield Judgement(clips[observation["left_id"]], clips[observation["right_id"]],
                            Label.parse(label, f"session {session_id} judgement {k} label"),
                            labeller=str(step["labeller"]), seconds=float(step["seconds"]),
                            selection=str(step["selection"]), disagreement=float(step["disagreement"])), session_id


# -- TFDS examples (the builder's rows; TFDS-free) ----------------------------------------------------
def clip_example(clip: Clip) -> dict[str, Any]:
    """One clip as a row of ``builders/preferences``: ids, step range, rendering, true rewards, padding and each
    step's ``{"observation", "action"}`` serialised losslessly (``encode_value``)."""
    return {"clip_id": clip.clip_id, "source_episode_id": clip.source_episode_id, "start": np.int64(clip.start),
            "stop": np.int64(clip.stop), "rendering": render_clip(clip),
            "rewards": np.asarray(clip.rewards, np.float64), "padding": np.asarray(clip.padding, bool),
            "steps": [encode_value({"observation": o, "action": a}) for o, a in zip(clip.observations, clip.actions)]}


def _episode_split(val_fraction: float | None) -> EpisodeSplit:
    return EpisodeSplit() if val_fraction is None else EpisodeSplit(val_fraction)


def judgement_split_counts(root: str | os.PathLike, val_fraction: float | None = None) -> dict[str, int]:
    """Judgements recorded under ``root`` per side of ``rlds_lang.preferences.database.EpisodeSplit``:
    ``{"train": n, "validation": n, "straddling": n}`` (the splits ``judgement_examples`` gives)."""
    splitter = _episode_split(val_fraction)
    counts = dict.fromkeys(JUDGEMENT_SPLITS, 0)
    for judgement, _ in _with_sessions(root):
        counts[splitter.split(judgement)] += 1
    return counts


def judgement_examples(root: str | os.PathLike, split: str | None = None,
                       val_fraction: float | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(key, example)`` of every judgement recorded under ``root`` (``read_preference_logs``), keyed
    ``{session}:{index}``; with ``split`` only those of that side of the episode split (``JUDGEMENT_SPLITS``:
    ``train`` and ``validation`` hold the judgements whose two clips both come from training, or both from
    validation episodes, so no validation clip is in a training judgement; ``straddling`` the rest)."""
    if split is not None and split not in JUDGEMENT_SPLITS:
        raise ValueError(f"split {split!r}: expected one of {JUDGEMENT_SPLITS}")
    splitter = _episode_split(val_fraction)
    counts: dict[str, int] = {}
    for judgement, session_id in _with_sessions(root):
        index = counts[session_id] = counts.get(session_id, -1) + 1
        if split is not None and splitter.split(judgement) != split:
            continue
        yield f"{session_id}:{index}", {
            "judgement_id": f"{session_id}:{index}", "session_id": session_id, "label": judgement.label.value,
            "labeller": judgement.labeller, "seconds": np.float64(judgement.seconds),
            "selection": judgement.selection, "disagreement": np.float64(judgement.disagreement),
            "left": clip_example(judgement.left), "right": clip_example(judgement.right)}


__all__ = ["ClipWriter", "JUDGEMENT_SPLITS", "PreferenceRecorder", "SEGMENTS_DIR", "SESSIONS_DIR", "SessionWriter",
           "clip_example", "clip_from_episode", "decode_value", "encode_value", "judgement_examples",
           "judgement_split_counts", "read_clips", "read_preference_logs", "read_sessions",
           "record_judgements", "render_clip"]
