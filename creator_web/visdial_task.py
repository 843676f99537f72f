"""The Visual Dialogue task in the browser: the person is the questioner.

They see the caption of a hidden image drawn from a split of the server's VisDial folder (and the image itself
when the folder has image files, ``images/<image_id>.jpg|.jpeg|.png`` or COCO's ``..._<12-digit id>.jpg``;
otherwise the page says there is none), ask up to ``max_rounds`` (10) questions and read the answers of the
configured answerer: a server of the published protocol (``HttpBackend``, e.g. ``rlds-lang visdial serve``) or
a ``Backend`` object such as ``LocalBackend``. Rewards follow the session's reward config and mode
(``env_stops``: the environment ends the dialogue; ``10_stop``: always 10 rounds; ``agent_stops``: the person
may end it with the Stop button, the action ``<stop>``).

Each dialogue is one episode of ``rlds_lang.visdial.env.VisDialEnv`` recorded through the session's
``LiveEpisode``: the same observations (caption, then answers), actions (questions), rewards and episode
metadata (``VISDIAL_SCHEMA``: image id, dialogue index, split, mode and reward settings) that
``builders/visdial`` records, plus the creator_web extras (annotator, session_id, task_config, client_ms).
"""

from __future__ import annotations

import base64
import functools
import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from creator_web.tasks import ServiceError, TaskSources, WebTask, register, transcript_rows
from rlds_lang.env import InvalidActionError
from rlds_lang.visdial.backend import Backend, BackendError
from rlds_lang.visdial.data import FEATURES_FILE, Dialogue, FeatureStore, read_split
from rlds_lang.visdial.env import VisDialEnv
from rlds_lang.visdial.rewards import STOP, RewardConfig

#: the longest question accepted (characters), and the largest image file shown (bytes).
MAX_QUESTION, MAX_IMAGE = 300, 4 << 20
IMAGE_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png"}
_COCO = re.compile(r"_0*(\d+)\.(?:jpe?g|png)$", re.IGNORECASE)


class VisDialConfig(BaseModel):
    """A VisDial session's configuration (recorded as ``task_config`` with every dialogue); the choices are
    ``rlds_lang.visdial.rewards``' ``MODES``, ``REWARD_KINDS`` and ``YN_KINDS``."""

    model_config = ConfigDict(extra="forbid")

    split: Literal["train", "val", "test"] = "val"
    mode: Literal["env_stops", "10_stop", "agent_stops"] = "env_stops"
    reward_kind: Literal["rank", "distance"] = "rank"
    yn_kind: Literal["none", "hard", "soft", "conservative"] = "none"
    seed: int | None = Field(None, ge=0, lt=2**62, description="dialogue k's image is drawn with seed + k")



@functools.lru_cache(maxsize=8)
def split_dialogues(folder: str, split: str, version: str) -> tuple[Dialogue, ...]:
    """The dialogues of ``split`` in the VisDial folder (read once per server)."""
    try:
        found = tuple(read_split(folder, split, version))
    except (OSError, ValueError) as e:
        raise ValueError(f"config.split: {str(e)[:300]}") from None
    if not found:
        raise ValueError(f"config.split: the VisDial folder has no {split!r} dialogue")
    return found


@functools.lru_cache(maxsize=8)
def image_files(folder: str) -> dict[int, str]:
    """Image id -> file of the folder's ``images/`` (regular files only: symlinks are not followed)."""
    images = os.path.join(folder, "images")
    found: dict[int, str] = {}
    if not os.path.isdir(images) or os.path.islink(images):
        return found
    with os.scandir(images) as entries:
        for entry in entries:
            stem, ext = os.path.splitext(entry.name)
            if ext.lower() not in IMAGE_TYPES or not entry.is_file(follow_symlinks=False):
                continue
            match = re.fullmatch(r"\d+", stem) or _COCO.search(entry.name)
            if match:
                found[int(match.group(1) if match.groups() else match.group(0))] = entry.path
    return found


class WebVisDialEnv(VisDialEnv):
    """``VisDialEnv`` that keeps the dialogue's rewards for the page and leaves its history as it was when the
    answerer fails (``ServiceError``: nothing is recorded and the person may ask again)."""

    def __init__(self, dialogues: tuple[Dialogue, ...], backend: Backend, config: RewardConfig, features: Any,
                 folder: str):
        super().__init__(dialogues, backend, config, features)
        self.folder = folder
        self.questions: list[str] = []
        self.answers: list[str] = []
        self.rewards: list[float] = []
        self.finished = False

    def _reset(self):
        self.questions, self.answers, self.rewards, self.finished = [], [], [], False
        try:
            return super()._reset()
        except BackendError as e:
            raise ServiceError(f"the answerer failed: {str(e)[:300]}") from None

    def _step(self, action: str):
        kept = list(self.history)
        try:
            observation, reward, done = super()._step(action)
        except BackendError as e:
            self.history = kept
            raise ServiceError(f"the answerer failed: {str(e)[:300]}") from None
        self.questions.append(action)
        self.answers.append(observation["text"])
        self.rewards.append(reward)
        self.finished = done
        return observation, reward, done


def _unavailable(sources: TaskSources) -> str | None:
    if not sources.visdial_dir:
        return "no VisDial folder was given (--visdial-dir)"
    if sources.visdial_answerer is None:
        return "no VisDial answerer was given (--visdial-answerer URL)"
    return None


@functools.lru_cache(maxsize=8)
def split_features(folder: str, split: str, expected: int) -> FeatureStore:
    """The image features of ``split`` (one open store per server, shared by its sessions: rows are read one at a
    time)."""
    try:
        return FeatureStore(os.path.join(folder, FEATURES_FILE), split, expected=expected)
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"config.split: image features of {split!r}: {str(e)[:300]}") from None


@functools.lru_cache(maxsize=8)
def http_answerer(url: str) -> Backend:
    """One ``HttpBackend`` (one connection pool) per answerer URL, shared by the server's sessions."""
    from rlds_lang.visdial.http import HttpBackend

    return HttpBackend(url)


def _make_env(config: VisDialConfig, sources: TaskSources) -> WebVisDialEnv:
    folder = str(sources.visdial_dir)
    dialogues = split_dialogues(folder, config.split, sources.visdial_version)
    answerer = sources.visdial_answerer
    if isinstance(answerer, str):
        answerer = http_answerer(answerer)
    features = split_features(folder, config.split, len(dialogues))
    reward = RewardConfig(config.mode, config.reward_kind, config.yn_kind)
    return WebVisDialEnv(dialogues, answerer, reward, features, folder)


def _prepare(env: WebVisDialEnv, config: VisDialConfig) -> None:
    """Nothing to fix: the image is drawn with the game's seed."""


def _check(env: WebVisDialEnv, action: str) -> None:
    if action == STOP:
        if env.config.mode != "agent_stops":
            raise InvalidActionError(f"{STOP} ends a dialogue only in mode agent_stops, not {env.config.mode}")
        return
    if STOP in action:
        raise InvalidActionError(f"a question may not contain {STOP} (use the Stop button)")
    if not action.strip():
        raise InvalidActionError("type a question first (it is empty)")
    if len(action) > MAX_QUESTION:
        raise InvalidActionError(f"the question has {len(action)} characters, more than {MAX_QUESTION}")


def _view(env: WebVisDialEnv) -> dict[str, Any]:
    d = env.dialogue
    texts = [d.caption, *env.answers]
    rows = transcript_rows([*env.questions, ""], texts)
    # as in RLDS, a step's reward is the one its action earned; a finished dialogue's last step has 0
    for row, reward in zip(rows, [*env.rewards, 0.0] if env.finished else env.rewards):
        row["reward"] = reward
    prompt = "Ask a question about the image" if _shown_image(env)[0] else \
        "Ask a question about the image (only its caption is shown)"
    return {"kind": "text", "prompt": prompt, "max_length": MAX_QUESTION,
            "context": {"image_id": d.image_id, "split": d.split, "mode": env.config.mode},
            "rows": rows, "rounds": env.scorer.rounds, "max_rounds": env.config.max_rounds,
            "can_stop": env.config.mode == "agent_stops" and not env.finished, "stop_action": STOP,
            "return": float(sum(env.rewards)), "has_picture": True}


def _shown_image(env: WebVisDialEnv) -> tuple[str | None, str]:
    """The image file the page shows of the current dialogue, or ``None`` and why only the caption is shown."""
    path = image_files(env.folder).get(int(env.dialogue.image_id))
    if path is None:
        return None, (f"no image file for image {env.dialogue.image_id} in this server's VisDial folder (images/): "
                      "only the caption is shown")
    size = os.path.getsize(path)
    if size > MAX_IMAGE:
        return None, (f"the image file of image {env.dialogue.image_id} is {size} bytes, more than {MAX_IMAGE}: only "
                      "the caption is shown")
    return path, ""


def _picture(env: WebVisDialEnv) -> dict[str, Any]:
    path, note = _shown_image(env)
    if path is None:
        return {"image": None, "note": note}
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode("ascii")
    return {"image": f"data:{IMAGE_TYPES[os.path.splitext(path)[1].lower()]};base64,{data}", "note": ""}


register(WebTask("visdial", VisDialConfig, _make_env, _prepare, _check, _view, transcript_rows, kind="text",
                 unavailable=_unavailable, picture=_picture))

__all__ = ["IMAGE_TYPES", "MAX_IMAGE", "MAX_QUESTION", "VisDialConfig", "WebVisDialEnv", "http_answerer",
           "image_files", "split_dialogues", "split_features"]
