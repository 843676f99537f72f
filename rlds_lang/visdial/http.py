"""``HttpBackend``: the Visual Dialogue backend that speaks the published server protocol over HTTP.

Point it at the authors' visdial-rl server or at ours (``rlds_lang.visdial.server``): form-encoded POSTs
of ``history`` (JSON list of ``{"speaker", "text"}``), ``caption``, ``img_features`` (JSON list of floats)
and ``generation_kwargs`` (``{"inference": "greedy", "beamSize": 1}``). ``/step_rank`` / ``/step`` answer
and score a question; ``/fetch_reward_rank`` / ``/fetch_reward`` with an empty history give ``v0``;
``/fetch_q_bot_response`` gives the server's question bot's next question (``question``).

Example::

    from rlds_lang.visdial.http import HttpBackend
    env = VisDialEnv(dialogues, HttpBackend("http://127.0.0.1:8766"), config, features=store)
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from rlds_lang.visdial.backend import BackendError, Scene, Turn

GENERATION_KWARGS = {"inference": "greedy", "beamSize": 1}
#: endpoint of each request and score kind.
ENDPOINTS = {("step", "rank"): "/step_rank", ("step", "distance"): "/step",
             ("reward", "rank"): "/fetch_reward_rank", ("reward", "distance"): "/fetch_reward"}


class HttpBackend:
    """A ``Backend`` over the published protocol (one ``httpx.Client``, ``timeout`` seconds per request)."""

    def __init__(self, url: str, timeout: float = 30.0):
        import httpx

        self.url = url.rstrip("/")
        self.client = httpx.Client(timeout=timeout)

    def _post(self, path: str, scene: Scene, history: Sequence[Turn], with_feature: bool = True) -> Any:
        import httpx

        form = {"history": json.dumps(list(history)), "caption": scene.caption,
                "generation_kwargs": json.dumps(GENERATION_KWARGS)}
        if with_feature:
            if scene.feature is None:
                raise BackendError(f"{path}: the server needs the image feature (give the environment its features)")
            form["img_features"] = json.dumps([float(v) for v in scene.feature])
        try:
            response = self.client.post(self.url + path, data=form)
        except httpx.HTTPError as e:
            raise BackendError(f"POST {self.url}{path} failed: {e}") from None
        if response.status_code != 200:
            raise BackendError(f"POST {self.url}{path}: HTTP {response.status_code}: {response.text[:300]}")
        try:
            return response.json()
        except ValueError:
            return response.text

    def initial(self, scene: Scene, kind: str) -> float:
        """``v0``: ``/fetch_reward_rank`` or ``/fetch_reward`` with an empty history."""
        return float(self._post(ENDPOINTS["reward", kind], scene, []))

    def respond(self, scene: Scene, history: Sequence[Turn], kind: str) -> tuple[str, float]:
        """``(answer, score change)`` from ``/step_rank`` or ``/step``."""
        path = ENDPOINTS["step", kind]
        result = self._post(path, scene, history)
        if not (isinstance(result, list) and len(result) == 2 and isinstance(result[0], str)):
            raise BackendError(f"POST {self.url}{path}: expected [answer, reward_delta], got {result!r}"[:300])
        return result[0], float(result[1])

    def question(self, caption: str, history: Sequence[Turn]) -> str:
        """The server's question bot's next question after ``history`` (complete rounds), from
        ``/fetch_q_bot_response``."""
        result = self._post("/fetch_q_bot_response", Scene(caption), history, with_feature=False)
        if not isinstance(result, str):
            raise BackendError(f"POST {self.url}/fetch_q_bot_response: expected a question string, got {result!r}"[:300])
        return result

    def close(self) -> None:
        """Closes the HTTP connection pool."""
        self.client.close()


__all__ = ["ENDPOINTS", "GENERATION_KWARGS", "HttpBackend"]
