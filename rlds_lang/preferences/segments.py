"""Cutting a stream of environment steps into clips of ``segment_length`` steps.

A step of a clip is ``(o_t, a_t, r_t)``: the observation the action was taken from, the action, and the
reward it earned (RLDS's SAR alignment). ``Segmenter`` is fed one transition at a time (a new episode's
first observation, then each action with the reward and observation that followed) and emits a ``Clip``
each time ``segment_length`` steps are gathered. When an episode ends in the middle of a segment, the
segment is completed with padded steps: the episode's last observation, a neutral action (``""`` for text,
zeros for arrays), reward 0 and ``padding=True`` (the anchor's rule), so a clip never spans two episodes.
With ``span_episodes=True`` the segment instead carries on into the next episode, and only the end of the
stream (``flush``) pads; such a clip is named after the episode it started in and its ``stop - start``
counts its real steps, which may go beyond that episode's end.

``obs_transform`` turns each observation into what the labeller (and the reward model) sees, e.g.
``lambda o: o["text"]`` or a crop of an image; arrays are copied, so an environment reusing its buffers
cannot change a recorded clip. Clip ids are ``{source_episode_id}:{start}``.

Example::

    from rlds_lang.preferences.segments import Segmenter

    segmenter = Segmenter(segment_length=40, obs_transform=lambda o: o["text"], sink=clips.append)
    timestep = env.reset()
    segmenter.observe(timestep)
    while not timestep.last():
        action = policy_action(timestep)
        timestep = env.step(action)
        segmenter.observe(timestep, action)      # a clip reaches the sink every 40 steps and at episode ends

``clips_from_episode(episode)`` cuts an RLDS episode dict (as the recorders' readers yield it) the same way.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Mapping

import numpy as np

from rlds_lang.preferences.defaults import SEGMENT_LENGTH
from rlds_lang.preferences.types import Clip
from rlds_lang.schema import neutral_like

#: turns an environment observation into what a labeller sees.
ObsTransform = Callable[[Any], Any]
#: receives every emitted clip.
ClipSink = Callable[[Clip], None]


def _frozen(value: Any) -> Any:
    """A copy of ``value`` the environment can no longer change (arrays copied, containers deep-copied)."""
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return value
    return copy.deepcopy(value)


class Segmenter:
    """Streaming cutter of transitions into clips (module docstring).

    Args:
      segment_length: steps per clip (default: the anchor's 40).
      obs_transform: observation -> what the labeller sees (default: the observation itself).
      span_episodes: let a segment carry on into the next episode instead of padding at episode ends.
      sink: called with every emitted clip (the methods also return them).
      episode_prefix: prefix of the ids given to episodes started without an explicit id
        (``{episode_prefix}-{n:08d}``).
    """

    def __init__(self, segment_length: int = SEGMENT_LENGTH, obs_transform: ObsTransform | None = None,
                 span_episodes: bool = False, sink: ClipSink | None = None, episode_prefix: str = "episode"):
        if int(segment_length) < 1:
            raise ValueError(f"segment_length must be >= 1, got {segment_length}")
        self.segment_length = int(segment_length)
        self.obs_transform = obs_transform
        self.span_episodes = bool(span_episodes)
        self.sink = sink
        self.episode_prefix = episode_prefix
        self.episodes_started = 0
        self.clips_emitted = 0
        self._episode_id: str | None = None
        self._t = 0  # index of the next step within the current episode
        self._observation: Any = None  # o_t, transformed
        self._open: dict[str, Any] | None = None  # the segment being filled

    # -- feeding -----------------------------------------------------------------------------------
    def start_episode(self, observation: Any, episode_id: str | None = None) -> list[Clip]:
        """Begins an episode with its first observation; an unfinished previous episode is closed first
        (its partial segment padded, unless ``span_episodes``). Returns the clips this emitted."""
        emitted: list[Clip] = []
        if self._episode_id is not None and not self.span_episodes:
            emitted = self._pad_and_emit()
        self._episode_id = episode_id if episode_id is not None else f"{self.episode_prefix}-{self.episodes_started:08d}"
        self.episodes_started += 1
        self._t = 0
        self._observation = self.transform(observation)
        return emitted

    def step(self, action: Any, reward: float, next_observation: Any, last: bool = False) -> list[Clip]:
        """Adds step ``(o_t, action, reward)``; ``next_observation`` is ``o_{t+1}`` and ``last`` says whether the
        episode ended with it. Returns the clips this emitted."""
        if self._episode_id is None:
            raise RuntimeError("Segmenter.step before start_episode: begin every episode with its first observation")
        if self._open is None:
            self._open = {"episode": self._episode_id, "start": self._t, "observations": [], "actions": [],
                          "rewards": []}
        seg = self._open
        seg["observations"].append(self._observation)
        seg["actions"].append(_frozen(action))
        seg["rewards"].append(float(np.asarray(reward if reward is not None else 0.0)))
        self._t += 1
        self._observation = self.transform(next_observation)
        emitted = self._emit([]) if len(seg["observations"]) == self.segment_length else []
        if last:
            if not self.span_episodes:
                emitted += self._pad_and_emit()
                self._episode_id = None
        return emitted

    def observe(self, timestep: Any, action: Any = None, episode_id: str | None = None) -> list[Clip]:
        """Feeds a ``dm_env.TimeStep``: a first one starts an episode, any other is the outcome of ``action``."""
        if timestep.first():
            return self.start_episode(timestep.observation, episode_id)
        return self.step(action, timestep.reward, timestep.observation, timestep.last())

    def flush(self) -> list[Clip]:
        """Ends the stream: the partial segment, if any, is padded with the last observation and emitted."""
        return self._pad_and_emit()

    @property
    def current_observation(self) -> Any:
        """The latest observation fed (transformed): ``o_t`` of the next step."""
        return self._observation

    def transform(self, observation: Any) -> Any:
        """What the labeller sees of ``observation``: ``obs_transform`` applied, then copied."""
        value = self.obs_transform(observation) if self.obs_transform is not None else observation
        return _frozen(value)

    # -- internals ---------------------------------------------------------------------------------

    def _pad_and_emit(self) -> list[Clip]:
        seg = self._open
        if seg is None or not seg["observations"]:
            return []
        real = len(seg["observations"])
        missing = self.segment_length - real
        # padded steps share the final observation (already a private copy) and one neutral action
        seg["observations"] += [self._observation] * missing
        seg["actions"] += [neutral_like(seg["actions"][-1])] * missing
        seg["rewards"] += [0.0] * missing
        return self._emit([], real)

    def _emit(self, out: list[Clip], real: int | None = None) -> list[Clip]:
        seg = self._open
        assert seg is not None
        n = len(seg["observations"])
        real = n if real is None else real
        clip = Clip(clip_id=f"{seg['episode']}:{seg['start']}", source_episode_id=seg["episode"],
                    start=seg["start"], stop=seg["start"] + real, observations=seg["observations"],
                    actions=seg["actions"], rewards=seg["rewards"], padding=[False] * real + [True] * (n - real))
        self._open = None
        self.clips_emitted += 1
        if self.sink is not None:
            self.sink(clip)
        out.append(clip)
        return out


def clips_from_episode(episode: Mapping[str, Any], segment_length: int = SEGMENT_LENGTH,
                       obs_transform: ObsTransform | None = None, episode_id: str | None = None) -> list[Clip]:
    """The clips of one RLDS episode (``{"steps": [...], "episode_id": ...}`` as ``loggers.read_episodes`` yields).

    Every step but the RLDS last one (whose action is neutral) is a real step; the last segment is padded with
    the episode's final observation. ``episode_id`` defaults to the episode's ``episode_id`` metadata.
    """
    steps = list(episode.get("steps", []))
    if not steps:
        return []
    name = episode_id if episode_id is not None else episode.get("episode_id")
    if name is None:
        raise ValueError("clips_from_episode: the episode has no 'episode_id' metadata; pass episode_id=")
    segmenter = Segmenter(segment_length, obs_transform)
    clips = segmenter.start_episode(steps[0]["observation"], str(name))
    for i in range(len(steps) - 1):
        clips += segmenter.step(steps[i]["action"], steps[i]["reward"], steps[i + 1]["observation"],
                                last=i + 2 == len(steps))
    return clips + segmenter.flush()


__all__ = ["ClipSink", "ObsTransform", "Segmenter", "clips_from_episode"]
