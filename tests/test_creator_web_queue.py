"""creator_web serving a preference pipeline's human queue: the pipeline's pairs are shown, answers go back to it
on its queue (with annotator and seconds), nothing is logged by the server, and waiting is a clear 503."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient

from creator_web.app import create_app
from rlds_lang.preferences.labellers import HumanQueueLabeller
from rlds_lang.preferences.types import Clip, Label
from tests.web_helpers import LOCAL, send_tokens


def wordle_clip(name: str, guesses: list[str], rewards: list[float]) -> Clip:
    """A Wordle game as one clip: observations are the boards' texts (empty first), actions the guesses."""
    observations = [""] + [f"{g} ⬛⬛⬛⬛⬛" for g in guesses[:-1]]
    return Clip(f"{name}:0", name, 0, len(guesses), observations, guesses, rewards, [False] * len(guesses))


def test_pipeline_pairs_are_shown_and_answered_on_its_queue(tmp_path):
    human = HumanQueueLabeller(timeout=30.0)
    left = wordle_clip("game-a", ["crane", "sloth"], [-1.0, 0.0])
    right = wordle_clip("game-b", ["pious", "crane", "brace"], [-1.0, -1.0, -1.0])
    asked: dict = {}
    pipeline = threading.Thread(target=lambda: asked.update(judgement=human.judge(left, right, "disagreement", 0.4)))
    with send_tokens(TestClient(create_app(tmp_path, human=human, human_wait=0.2), base_url=LOCAL)) as client:
        sid = client.post("/api/sessions", json={"annotator": "zoe", "task": "wordle", "config": {}}).json()["session_id"]
        assert client.get("/api/judge/source").json() == {"source": "pipeline"}
        waiting = client.post(f"/api/sessions/{sid}/judge/next", json={})
        assert waiting.status_code == 503 and "no pair waiting" in waiting.json()["detail"]
        assert waiting.headers["retry-after"] == "1"
        pipeline.start()
        pair = None
        for _ in range(100):  # bounded: the pipeline thread queues its pair at once
            response = client.post(f"/api/sessions/{sid}/judge/next", json={})
            if response.status_code == 200:
                pair = response.json()
                break
        assert pair is not None and pair["source"] == "pipeline"
        assert (pair["left"]["clip_id"], pair["right"]["clip_id"]) == ("game-a:0", "game-b:0")
        wrong = client.post(f"/api/sessions/{sid}/judge", json={"pair_id": "0" * 16, "label": "left", "seconds": 1})
        assert wrong.status_code == 404
        answered = client.post(f"/api/sessions/{sid}/judge", json={"pair_id": pair["pair_id"], "label": "right",
                                                                   "seconds": 2.5})
        assert answered.status_code == 200, answered.text
        assert answered.json()["answered"] == 0 and "recorded" not in answered.json()
    pipeline.join(10)
    judgement = asked["judgement"]
    assert judgement.label is Label.RIGHT and judgement.labeller == "human:zoe" and judgement.seconds == 2.5
    assert (judgement.selection, judgement.disagreement) == ("disagreement", 0.4)
    assert not (tmp_path / "judgements").exists()  # the pipeline records it, not the server


def test_explicit_datasets_still_draw_from_the_data_folder_when_a_queue_is_served(tmp_path):
    human = HumanQueueLabeller(timeout=1.0)
    with send_tokens(TestClient(create_app(tmp_path, human=human, human_wait=0.1), base_url=LOCAL)) as client:
        sid = client.post("/api/sessions", json={"annotator": "bo", "task": "wordle", "config": {}}).json()["session_id"]
        assert client.get("/api/judge/source").json() == {"source": "pipeline"}
        response = client.post(f"/api/sessions/{sid}/judge/next", json={"left": "nope", "right": "nope"})
        assert response.status_code == 404 and "no dataset 'nope'" in response.json()["detail"]
    assert human.requests.empty()
