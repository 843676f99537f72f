"""The VisDial task of creator_web through its HTTP API: the person asks, the configured answerer (local or over
the published protocol) answers, rewards follow the mode, and each dialogue is the episode ``builders/visdial``
records."""

from __future__ import annotations

import base64
import json

import pytest
from fastapi.testclient import TestClient

from creator_web.app import create_app
from creator_web.server import free_port
from creator_web.tasks import TaskSources
from creator_web.visdial_task import VisDialConfig
from loggers import read_episodes
from loggers.tfds_examples import episode_to_example
from loggers.visdial_recipes import record_dialogues
from rlds_lang.visdial.data import FEATURES_FILE, FeatureStore, cache_file, load_reward_cache, read_split
from rlds_lang.visdial.env import VisDialEnv
from rlds_lang.visdial.rewards import MODES, REWARD_KINDS, YN_KINDS, RewardConfig
from rlds_lang.visdial.schema import VISDIAL_SCHEMA
from rlds_lang.visdial.server import BackendServer
from tests.visdial_web_fixtures import moving_backend, visdial_folder
from tests.web_helpers import LOCAL, send_tokens

QUESTIONS = ["is there a dog?", "what colour is the cat?", "is it sunny?", "any people?", "is it indoors?",
             "how many trees?", "is the cat sleeping?", "is it a photo?", "any cars?", "is it daytime?"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return visdial_folder(tmp_path_factory.mktemp("vd"), with_image_of=0)


@pytest.fixture(scope="module")
def backend(folder):
    return moving_backend(folder)


def client_for(data_dir, folder, answerer):
    app = create_app(data_dir, task_sources=TaskSources(visdial_dir=str(folder), visdial_answerer=answerer))
    return send_tokens(TestClient(app, base_url=LOCAL))


def open_visdial(client, **config) -> str:
    response = client.post("/api/sessions", json={"annotator": "vic", "task": "visdial", "config": config})
    assert response.status_code == 200, response.text
    return response.json()["session_id"]


def expected_rewards(folder, backend, mode: str, dialogue_index: int, questions: list[str]) -> list[float]:
    """The rewards a fresh ``VisDialEnv`` gives these questions about this image (an independent replay)."""
    dialogues = list(read_split(str(folder), "val"))
    store = FeatureStore(str(folder / FEATURES_FILE), "val")
    env = VisDialEnv(dialogues, backend, RewardConfig(mode), store)
    env.set_next_dialogue(dialogues[dialogue_index])
    env.reset()
    rewards = [float(env.step(q).reward) for q in questions]
    store.close()
    return rewards


def test_the_config_offers_exactly_the_environments_modes_and_kinds():
    fields = VisDialConfig.model_fields
    assert set(fields["mode"].annotation.__args__) == set(MODES)
    assert set(fields["reward_kind"].annotation.__args__) == set(REWARD_KINDS)
    assert set(fields["yn_kind"].annotation.__args__) == set(YN_KINDS)


@pytest.mark.parametrize("mode", ["env_stops", "10_stop"])
def test_a_dialogue_over_the_published_protocol_is_recorded_with_the_modes_rewards(mode, folder, backend, tmp_path):
    with BackendServer(backend) as served, client_for(tmp_path / "web", folder, served.url) as client:
        sid = open_visdial(client, mode=mode, seed=11)
        state = client.post(f"/api/sessions/{sid}/play/new").json()
        caption = state["rows"][0]["observation"]
        asked, shown = [], [state]
        while not state["done"]:
            question = QUESTIONS[len(asked)]
            state = client.post(f"/api/sessions/{sid}/play/act", json={"action": question, "client_ms": 40}).json()
            asked.append(question)
            shown.append(state)
        assert client.post(f"/api/sessions/{sid}/play/act", json={"action": "more?"}).status_code == 409
    if mode == "10_stop":
        assert len(asked) == 10
    [episode] = list(read_episodes(tmp_path / "web" / "human" / "visdial" / sid))
    steps = episode["steps"]
    assert [s["observation"]["text"] for s in steps] == [caption] + [r["observation"] for r in state["rows"][1:]]
    assert [s["action"] for s in steps] == asked + [""]
    assert [float(s["reward"]) for s in steps] == [r["reward"] for r in state["rows"]]
    for k, earlier in enumerate(shown[1:], 1):  # each answer was shown with its reward as it came
        assert [(r["action"], r.get("reward")) for r in earlier["rows"][:k]] == \
            [(s["action"], float(s["reward"])) for s in steps[:k]]
    index = int(episode["dialogue_index"])
    assert [float(s["reward"]) for s in steps[:-1]] == expected_rewards(folder, backend, mode, index, asked)
    assert float(steps[-1]["reward"]) == 0.0
    if mode == "10_stop":
        assert len({float(s["reward"]) for s in steps[:-1]}) > 1  # the guesser moved: the rewards are not all one
    assert (episode["mode"], episode["split"], episode["reward_kind"]) == (mode, "val", "rank")
    assert json.loads(episode["task_config"])["mode"] == mode and episode["annotator"] == "vic"
    # the builder's episode of the same image: the same features, every one present
    dialogues = list(read_split(str(folder), "val"))
    rows = {"rank": load_reward_cache(str(folder / cache_file("val", "rank")))}
    (tmp_path / "built").mkdir()
    built = next(iter(record_dialogues([dialogues[index]], rows, RewardConfig(mode), "built",
                                       work_dir=str(tmp_path / "built"))))
    _, mine = episode_to_example(episode, VISDIAL_SCHEMA)
    _, theirs = episode_to_example(built, VISDIAL_SCHEMA)
    assert mine.keys() == theirs.keys()
    same = ("image_id", "dialogue_index", "split", "mode", "reward_kind", "yn_kind", "yn_reward", "reward_scale",
            "reward_shift", "task")
    assert {k: mine[k] for k in same} == {k: theirs[k] for k in same}
    assert mine["steps"][0]["observation"]["text"] == theirs["steps"][0]["observation"]["text"]


def test_agent_stops_ends_with_the_stop_action_and_other_modes_refuse_it(folder, backend, tmp_path):
    with client_for(tmp_path / "web", folder, backend) as client:
        sid = open_visdial(client, mode="agent_stops", seed=2)
        client.post(f"/api/sessions/{sid}/play/new")
        state = client.post(f"/api/sessions/{sid}/play/act", json={"action": QUESTIONS[0]}).json()
        assert state["can_stop"] is True and state["rounds"] == 1
        bad = client.post(f"/api/sessions/{sid}/play/act", json={"action": "why <stop> here?"})
        assert bad.status_code == 422 and "Stop button" in bad.text
        state = client.post(f"/api/sessions/{sid}/play/act", json={"action": "<stop>"}).json()
        assert state["done"] is True and state["can_stop"] is False and state["rounds"] == 1
        other = open_visdial(client, mode="env_stops")
        client.post(f"/api/sessions/{other}/play/new")
        refused = client.post(f"/api/sessions/{other}/play/act", json={"action": "<stop>"})
        assert refused.status_code == 422 and "agent_stops" in refused.text
    [episode] = list(read_episodes(tmp_path / "web" / "human" / "visdial" / sid))
    assert [s["action"] for s in episode["steps"]] == [QUESTIONS[0], "<stop>", ""]
    assert float(episode["steps"][2]["reward"]) == 0.0 and episode["steps"][2]["observation"]["text"] == ""


def test_an_answerer_that_fails_is_a_502_and_nothing_is_recorded(folder, tmp_path):
    with client_for(tmp_path / "web", folder, f"http://127.0.0.1:{free_port()}") as client:
        sid = open_visdial(client, seed=0)
        response = client.post(f"/api/sessions/{sid}/play/new")
        assert response.status_code == 502 and "answerer" in response.text
        after = client.post(f"/api/sessions/{sid}/play/act", json={"action": QUESTIONS[0]})
        assert after.status_code == 409 and "no game in progress" in after.text  # no half-started dialogue
    assert list(read_episodes(tmp_path / "web" / "human" / "visdial" / sid)) == []


def test_the_picture_is_the_image_file_byte_for_byte_or_the_page_is_told_there_is_none(folder, backend, tmp_path):
    with client_for(tmp_path / "web", folder, backend) as client:
        sid = open_visdial(client)
        assert client.get(f"/api/sessions/{sid}/play/picture").status_code == 409  # no dialogue yet
        images = {p.stem: p for p in (folder / "images").iterdir()}
        seen = set()
        for _ in range(12):
            state = client.post(f"/api/sessions/{sid}/play/new").json()
            picture = client.get(f"/api/sessions/{sid}/play/picture").json()
            image_id = str(state["context"]["image_id"])
            if image_id in images:
                assert picture["image"] == "data:image/png;base64," + \
                    base64.b64encode(images[image_id].read_bytes()).decode("ascii")
            else:
                assert picture["image"] is None and "no image file" in picture["note"]
            seen.add(image_id in images)
        assert seen == {True, False}
        wordle = client.post("/api/sessions", json={"annotator": "vic"}).json()["session_id"]
        assert client.get(f"/api/sessions/{wordle}/play/picture").status_code == 404


def test_a_question_the_answerer_fails_on_can_be_asked_again_and_the_dialogue_stays_whole(folder, backend, tmp_path):
    port = free_port()
    with BackendServer(backend, port=port) as served, client_for(tmp_path / "web", folder, served.url) as client:
        sid = open_visdial(client, mode="10_stop", seed=5)
        client.post(f"/api/sessions/{sid}/play/new")
        assert client.post(f"/api/sessions/{sid}/play/act", json={"action": QUESTIONS[0]}).status_code == 200
        served.__exit__(None, None, None)  # the answerer goes away mid-dialogue
        failed = client.post(f"/api/sessions/{sid}/play/act", json={"action": QUESTIONS[1]})
        assert failed.status_code == 502 and "answerer" in failed.text
        with BackendServer(backend, port=port):  # and comes back
            for question in QUESTIONS[1:]:
                assert client.post(f"/api/sessions/{sid}/play/act", json={"action": question}).status_code == 200
    [episode] = list(read_episodes(tmp_path / "web" / "human" / "visdial" / sid))
    assert [s["action"] for s in episode["steps"]] == QUESTIONS + [""]
    index = int(episode["dialogue_index"])
    assert [float(s["reward"]) for s in episode["steps"][:-1]] == \
        expected_rewards(folder, backend, "10_stop", index, QUESTIONS)
