"""Our Visual Dialogue answer/reward server: the published endpoints (FastAPI) over a ``LocalBackend``.

Endpoints (form-encoded POST, as the authors' visdial-rl server; fields ``history`` = JSON list of
``{"speaker": "question" | "answer", "text": ...}``, ``caption``, ``img_features`` = JSON list of the
feature's floats, optional ``generation_kwargs`` = JSON object, accepted and ignored: answers are
retrieved, hence deterministic like the published greedy decoding):

- ``/step_rank``, ``/step``: ``history`` ends with the new question; returns ``[answer, reward_delta]``
  (percentile change / distance decrease).
- ``/fetch_reward_rank``, ``/fetch_reward``: ``history`` holds complete rounds; returns ``p_0`` / ``d_0``
  for an empty history, else the change made by its last round.
- ``/fetch_a_bot_response``: ``history`` ends with the new question; returns the answer string.
- ``/fetch_q_bot_response``: ``history`` holds complete rounds (possibly none), no ``img_features`` (the
  question bot does not see the image); returns the question bot's next question.

Malformed input gets a 422 naming the field and the problem: a history that is not alternating rounds,
an empty question, features that are not ``dim`` finite numbers of magnitude at most ``FEATURE_LIMIT``,
``generation_kwargs`` that is not a JSON object, a question asked of the question bot after the last
(10th) round; a backend that cannot answer a request says why (422), and a reward is never NaN or
infinite. The true image is found in the ranking pool by the nearest row within a tolerance
(``backend.MATCH_TOLERANCE``), so features a client normalised with its own routine, which differ from
ours in the last bits, still rank the image where it is. The backend is called under a lock, so
concurrent clients are served one computation at a time. ``BackendServer`` runs uvicorn in a thread
(127.0.0.1, a free port by default) for tests and for ``rlds-lang visdial serve``.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from typing import Any

from rlds_lang.visdial.backend import BackendError, LocalBackend, Scene, questions_asked
from rlds_lang.visdial.data import ROUNDS

SPEAKERS = ("question", "answer")
#: the largest feature magnitude accepted: squared distances of 4096 such entries stay finite in float64.
FEATURE_LIMIT = 1e30


class RequestError(ValueError):
    """A request field that cannot be used; the message names the field."""


def json_field(raw: str, field: str) -> Any:
    """The JSON value of form field ``field``; a ``RequestError`` naming it (with the start of the text) if it is
    not JSON."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise RequestError(f"{field}: not JSON ({e}): {raw[:40]!r}") from None


def parse_history(raw: str, ends_with: str) -> list[dict[str, str]]:
    """The protocol history: alternating question/answer turns from a question, ending with ``ends_with``
    (``"question"``, or ``"answer"`` meaning complete rounds, possibly none)."""
    history = json_field(raw, "history")
    if not isinstance(history, list):
        raise RequestError("history: must be a JSON list of {speaker, text} objects")
    for i, t in enumerate(history):
        if not isinstance(t, dict) or set(t) != {"speaker", "text"} or not isinstance(t["text"], str):
            raise RequestError(f"history[{i}]: must be an object with exactly 'speaker' and 'text' (a string)")
        if t["speaker"] != SPEAKERS[i % 2]:
            raise RequestError(f"history[{i}]: speaker must be {SPEAKERS[i % 2]!r} (turns alternate from a question)")
    for i in range(0, len(history), 2):
        if not history[i]["text"].strip():
            raise RequestError(f"history[{i}]: the question is empty")
    if ends_with == "question" and len(history) % 2 != 1:
        raise RequestError("history: must end with the new question")
    if ends_with == "answer" and len(history) % 2 != 0:
        raise RequestError("history: must hold complete question/answer rounds")
    return history


def parse_features(raw: str, dim: int) -> list[float]:
    """The image feature: a JSON list of ``dim`` finite numbers."""
    values = json_field(raw, "img_features")
    if not isinstance(values, list) or len(values) != dim:
        raise RequestError(f"img_features: must be a JSON list of {dim} numbers, got "
                           f"{len(values) if isinstance(values, list) else type(values).__name__}")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
        raise RequestError("img_features: every entry must be a finite number")
    big = next((i for i, v in enumerate(values) if abs(v) > FEATURE_LIMIT), None)
    if big is not None:  # float32 would make it infinite, and squared distances overflow well before that
        raise RequestError(f"img_features[{big}]: {str(values[big])[:24]} is out of range (|x| <= {FEATURE_LIMIT:g})")
    return values


def parse_generation_kwargs(raw: str) -> dict[str, Any]:
    """The optional ``generation_kwargs``: empty, or a JSON object (accepted and ignored: answers are retrieved)."""
    if not raw:
        return {}
    value = json_field(raw, "generation_kwargs")
    if not isinstance(value, dict):
        raise RequestError("generation_kwargs: must be a JSON object")
    return value


def finite(value: float, what: str) -> float:
    """``value`` if finite; else a ``RequestError`` naming the feature (a reward is never NaN or infinite)."""
    if not math.isfinite(value):
        raise RequestError(f"img_features: the {what} is not finite for these features")
    return float(value)


def create_app(backend: LocalBackend):
    """The FastAPI app serving ``backend`` with the published endpoints."""
    import numpy as np
    from fastapi import FastAPI, Form, HTTPException

    app = FastAPI(title="rlds-lang Visual Dialogue server")
    lock = threading.Lock()

    def scene_and_history(history: str, caption: str, img_features: str | None, ends_with: str,
                          generation_kwargs: str):
        """The validated request as ``(Scene, history)`` (no feature when ``img_features`` is ``None``); a 422
        naming the field otherwise."""
        try:
            turns = parse_history(history, ends_with)
            feature = None if img_features is None else \
                np.asarray(parse_features(img_features, backend.feature_dim), np.float32)
            parse_generation_kwargs(generation_kwargs)
        except RequestError as e:
            raise HTTPException(status_code=422, detail=str(e)) from None
        return Scene(caption, feature), turns

    def rejected(error: Exception) -> HTTPException:
        return HTTPException(status_code=422, detail=str(error))

    def step(kind: str, history: str, caption: str, img_features: str, generation_kwargs: str) -> list[Any]:
        """Answers the question ending the history and scores its round: ``[answer, change]``."""
        scene, turns = scene_and_history(history, caption, img_features, "question", generation_kwargs)
        try:
            with lock:
                answer, delta = backend.respond(scene, turns, kind)
            return [answer, finite(delta, "reward")]
        except (RequestError, BackendError) as e:
            raise rejected(e) from None

    def reward(kind: str, history: str, caption: str, img_features: str) -> float:
        """``v0`` for an empty history, else the change made by its last round."""
        scene, turns = scene_and_history(history, caption, img_features, "answer", "")
        try:
            with lock:
                return finite(backend.reward(scene, turns, kind), "reward")
        except (RequestError, BackendError) as e:
            raise rejected(e) from None

    @app.post("/step_rank")
    def step_rank(history: str = Form(...), caption: str = Form(""), img_features: str = Form(...),
                  generation_kwargs: str = Form("")) -> list[Any]:
        """Percentile-rank step: ``[answer, p_t - p_(t-1)]``."""
        return step("rank", history, caption, img_features, generation_kwargs)

    @app.post("/step")
    def step_distance(history: str = Form(...), caption: str = Form(""), img_features: str = Form(...),
                      generation_kwargs: str = Form("")) -> list[Any]:
        """Distance step: ``[answer, d_(t-1) - d_t]``."""
        return step("distance", history, caption, img_features, generation_kwargs)

    @app.post("/fetch_reward_rank")
    def fetch_reward_rank(history: str = Form(...), caption: str = Form(""), img_features: str = Form(...)) -> float:
        """Percentile reward of the history's last round (``p_0`` when empty)."""
        return reward("rank", history, caption, img_features)

    @app.post("/fetch_reward")
    def fetch_reward(history: str = Form(...), caption: str = Form(""), img_features: str = Form(...)) -> float:
        """Distance reward of the history's last round (``d_0`` when empty)."""
        return reward("distance", history, caption, img_features)

    @app.post("/fetch_a_bot_response")
    def fetch_a_bot_response(history: str = Form(...), caption: str = Form(""), img_features: str = Form(...),
                             generation_kwargs: str = Form("")) -> str:
        """The answer to the question ending the history."""
        scene, turns = scene_and_history(history, caption, img_features, "question", generation_kwargs)
        try:
            with lock:
                return backend.answer(scene, turns)
        except BackendError as e:
            raise rejected(e) from None

    @app.post("/fetch_q_bot_response")
    def fetch_q_bot_response(history: str = Form(...), caption: str = Form(""),
                             generation_kwargs: str = Form("")) -> str:
        """The question bot's next question after the history's complete rounds."""
        scene, turns = scene_and_history(history, caption, None, "answer", generation_kwargs)
        if backend.questioner is None:
            raise HTTPException(status_code=404, detail="this server has no question bot")
        if questions_asked(turns) >= ROUNDS:
            raise HTTPException(status_code=422, detail=f"history: holds {questions_asked(turns)} complete rounds; a "
                                                        f"dialogue has at most {ROUNDS}, so there is no next question")
        try:
            with lock:
                return backend.question(scene.caption, turns)
        except BackendError as e:
            raise rejected(e) from None

    return app


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class BackendServer:
    """uvicorn serving ``create_app(backend)`` in a daemon thread; use ``with BackendServer(b) as s: s.url``."""

    def __init__(self, backend: LocalBackend, host: str = "127.0.0.1", port: int | None = None):
        import uvicorn

        self.host, self.port = host, port or free_port(host)
        config = uvicorn.Config(create_app(backend), host=self.host, port=self.port, log_level="warning",
                                log_config=None)  # keep the process's logging (uvicorn's binds sys.stderr now)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="visdial-server", daemon=True)

    @property
    def url(self) -> str:
        """The base URL."""
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> "BackendServer":
        self.thread.start()
        deadline = time.monotonic() + 20.0
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise TimeoutError(f"the Visual Dialogue server did not start on {self.url}")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10.0)


__all__ = ["BackendServer", "FEATURE_LIMIT", "RequestError", "create_app", "finite", "free_port", "parse_features",
           "json_field", "parse_generation_kwargs", "parse_history"]
