"""``VisDialEnv``: the Visual Dialogue questioner environment on ``LanguageEnv`` (text in, text out).

Observation 0 is the caption of a hidden image; each action is a question (ending in ``?``, as asked);
the next observation is the answer a ``Backend`` gives; the reward comes from the backend's guesser score
changes through a ``rewards.DialogueScorer`` (mode, yes/no kind, scale and shift of ``RewardConfig``).
In ``agent_stops`` an action containing ``<stop>`` ends the episode (observation ``""``, reward 0); in
the other modes it is an ordinary question, as in the reference environment. An empty (or blank) question is a
wasted round: the answer is ``""``, the guesser's score does not change and nothing is sent to the backend
(servers of the published protocol refuse an empty question). Rewards are
rounded to float32, the precision RLDS datasets store, so recorded episodes keep them exactly.

The image comes from a dialogue: drawn with the environment's seeded generator, or fixed with
``set_next_dialogue`` (how the dataset recipe replays the data). With ``CachedBackend`` an episode has at
most as many rounds as the recorded dialogue.

Example::

    from rlds_lang.visdial.backend import CachedBackend
    from rlds_lang.visdial.env import VisDialEnv
    from rlds_lang.visdial.rewards import RewardConfig

    env = VisDialEnv(dialogues, CachedBackend({"rank": rows}), RewardConfig("env_stops", yn_kind="hard"))
    timestep = env.reset()                 # the caption
    timestep = env.step("is there a dog?")  # the answer, and the reward
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np
from dm_env import specs

from rlds_lang.env import LanguageEnv, Observation, text_spec
from rlds_lang.visdial.backend import Backend, CachedBackend, Scene, Turn, turn
from rlds_lang.visdial.data import Dialogue
from rlds_lang.visdial.rewards import STOP, DialogueScorer, RewardConfig, is_yes_no

#: ``index -> true image feature`` (e.g. a ``data.FeatureStore``), for backends that need the feature.
FeatureLookup = Callable[[int], np.ndarray]


class VisDialEnv(LanguageEnv):
    """The questioner environment (see the module docstring).

    Args:
      dialogues: the images (with captions) episodes are about; at least one.
      backend: answers and guesser scores (``CachedBackend``, ``LocalBackend`` or ``HttpBackend``).
      config: mode and reward settings.
      features: looks up a dialogue's image feature by its index (needed by the local and HTTP backends).
      seed: seed of the dialogue draws.
    """

    task_name = "visdial"

    def __init__(self, dialogues: Sequence[Dialogue], backend: Backend, config: RewardConfig | None = None,
                 features: Any = None, seed: int = 0):
        super().__init__(seed)
        if not dialogues:
            raise ValueError("VisDialEnv needs at least one dialogue to draw images from")
        self.dialogues = list(dialogues)
        self.backend = backend
        self.config = config or RewardConfig()
        self.features = features
        self.dialogue = self.dialogues[0]
        self._next: Dialogue | None = None
        self.scene = Scene(self.dialogue.caption)
        self.history: list[dict[str, str]] = []
        self.scorer = DialogueScorer(self.config, 0.0)
        self.yes_no_answers = 0

    def set_next_dialogue(self, dialogue: Dialogue) -> None:
        """The next episode is about this dialogue's image (instead of a random draw)."""
        self._next = dialogue

    def observation_spec(self) -> dict[str, specs.Array]:
        """Only ``text``: the caption, then the answers."""
        return {"text": text_spec("text")}

    def _reset(self) -> Observation:
        if self._next is not None:
            self.dialogue, self._next = self._next, None
        else:
            self.dialogue = self.dialogues[int(self._rng.integers(len(self.dialogues)))]
        d = self.dialogue
        feature = None if self.features is None else np.asarray(self.features[d.index], np.float32)
        self.scene = Scene(d.caption, feature, d)
        self.history = []
        self.yes_no_answers = 0
        config = self.config
        if isinstance(self.backend, CachedBackend):
            config = dataclasses.replace(config, max_rounds=min(config.max_rounds, d.rounds))
        self.scorer = DialogueScorer(config, self.backend.initial(self.scene, config.score_kind))
        return {"text": d.caption}

    def _step(self, action: str) -> tuple[Observation, float, bool]:
        if self.config.mode == "agent_stops" and STOP in action:
            return {"text": ""}, float(self.scorer.stop()), True
        if not action.strip():  # a wasted round: no answer, the guesser's score unchanged, nothing sent
            reward, done = self.scorer.answer("", 0.0)
            return {"text": ""}, float(np.float32(reward)), done
        self.history.append(turn("question", action))
        answer, delta = self.backend.respond(self.scene, self.history, self.config.score_kind)
        self.history.append(turn("answer", answer))
        self.yes_no_answers += int(is_yes_no(answer, "hard"))
        reward, done = self.scorer.answer(answer, delta)
        return {"text": answer}, float(np.float32(reward)), done

    def episode_metadata(self) -> dict[str, Any]:
        """The image (id, dialogue index, split) and the reward settings (``VISDIAL_SCHEMA``)."""
        d, c = self.dialogue, self.config
        return {"task": self.task_name, "image_id": np.int64(d.image_id), "dialogue_index": np.int64(d.index),
                "split": d.split, "mode": c.mode, "reward_kind": c.score_kind, "yn_kind": c.yn_kind,
                "yn_reward": np.float64(c.yn_reward), "reward_scale": np.float64(c.reward_scale),
                "reward_shift": np.float64(c.reward_shift)}


class DataQuestionPolicy:
    """Asks a recorded dialogue's questions in order, each with ``?`` appended (the dataset's behaviour).

    ``questions`` and ``stop_after`` are set before each episode (by the recipe's hook); with
    ``stop_after`` set (``agent_stops``) it asks that many questions and then ``<stop>`` (never reached
    when the environment ends the episode first, after the last round).
    """

    name = "visdial_data"

    def __init__(self) -> None:
        self.questions: Sequence[str] = ()
        self.stop_after: int | None = None

    def reset(self, seed: int) -> None:
        """Nothing to reset: the data decides every question."""

    def act(self, observations, actions) -> str:
        """The next recorded question, or ``<stop>``."""
        i = len(actions)
        limit = len(self.questions) if self.stop_after is None else self.stop_after
        if i >= limit:
            return STOP
        return as_question(self.questions[i])

    def params(self) -> dict[str, Any]:
        """No parameters: the data decides every question."""
        return {}


class BotQuestionPolicy:
    """Asks what a question bot asks: ``ask(caption, history of complete rounds) -> question``, e.g.
    ``HttpBackend.question`` (a server's ``/fetch_q_bot_response``) or ``LocalBackend.question``.

    The history is rebuilt from the episode so far (observation 0 is the caption, each later one the
    answer to the action before it); each question gets ``?`` appended when it has none. Deterministic.
    """

    name = "visdial_question_bot"

    def __init__(self, ask: Callable[[str, Sequence[Turn]], str]):
        self.ask = ask

    def reset(self, seed: int) -> None:
        """Nothing to reset: the bot is deterministic."""

    def act(self, observations, actions) -> str:
        """The bot's next question."""
        history: list[Turn] = []
        for question, answer in zip(actions, observations[1:]):
            history += [turn("question", question), turn("answer", answer["text"])]
        return as_question(self.ask(observations[0]["text"], history))

    def params(self) -> dict[str, Any]:
        """No parameters of its own: the bot decides."""
        return {}


def as_question(text: str) -> str:
    """A dataset question as an action: the published questions carry no ``?``; one is appended."""
    return text if text.endswith("?") else f"{text}?"


__all__ = ["BotQuestionPolicy", "DataQuestionPolicy", "FeatureLookup", "VisDialEnv", "as_question"]
