"""The trained guesser, our FastAPI server and the HTTP client backend, on a fixture in the published layout.

The server is started on a free 127.0.0.1 port by each test and stopped at its end.
"""

import concurrent.futures
import json
import os

import httpx
import numpy as np
import pytest

from rlds_lang.env import run_episode
from rlds_lang.visdial.backend import BackendError, Scene, build_local_backend, turn
from rlds_lang.visdial.data import FEATURES_FILE, FeatureStore, read_split
from rlds_lang.visdial.env import DataQuestionPolicy, VisDialEnv
from rlds_lang.visdial.fixtures import write_fixture
from rlds_lang.visdial.http import HttpBackend
from rlds_lang.visdial.rewards import RewardConfig
from rlds_lang.visdial.server import BackendServer
from trainers.cli.main import build_parser
from trainers.tasks.visdial_guesser import GuesserConfig, load_guesser, train_guesser


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import torch

    torch.set_num_threads(1)
    folder = str(tmp_path_factory.mktemp("visdial"))
    write_fixture(folder, {"train": 8, "val": 4}, dim=48, seed=2)
    guesser, losses = train_guesser(folder, GuesserConfig(buckets=256, dim=16, hidden=32, epochs=15, batch_size=16))
    out = str(tmp_path_factory.mktemp("guesser"))
    guesser.save(out, {"epoch_losses": losses})
    backend = build_local_backend(folder, load_guesser(out))
    return folder, guesser, losses, out, backend


def test_guesser_learns_and_reloads(setup):
    folder, guesser, losses, out, _ = setup
    assert losses[-1] < 0.5 * losses[0]
    reloaded = load_guesser(out)
    history = [turn("question", "is there a dog"), turn("answer", "yes")]
    np.testing.assert_array_equal(reloaded("a red dog", history), guesser("a red dog", history))
    assert json.load(open(os.path.join(out, "config.json")))["feature_dim"] == 48


def _play(env, dialogue):
    policy = DataQuestionPolicy()
    policy.questions = dialogue.questions
    env.set_next_dialogue(dialogue)
    return run_episode(env, policy, seed=0)


@pytest.mark.parametrize("config", [RewardConfig("10_stop"), RewardConfig("10_stop", reward_kind="distance"),
                                    RewardConfig("env_stops", yn_kind="hard")])
def test_http_backend_through_our_server_equals_the_local_backend(setup, config):
    folder, _, _, _, backend = setup
    val = list(read_split(folder, "val"))
    store = FeatureStore(os.path.join(folder, FEATURES_FILE), "val")
    local = [_play(VisDialEnv(val, backend, config, features=store), d) for d in val]
    with BackendServer(backend) as server:
        client = HttpBackend(server.url)
        remote = [_play(VisDialEnv(val, client, config, features=store), d) for d in val]
        client.close()
    assert not server.thread.is_alive()
    for a, b in zip(local, remote):
        assert a.rewards == b.rewards and a.observations == b.observations and a.actions == b.actions


def test_server_rejects_malformed_requests_and_serves_concurrent_clients(setup):
    folder, _, _, _, backend = setup
    store = FeatureStore(os.path.join(folder, FEATURES_FILE), "val")
    good = {"history": json.dumps([turn("question", "is there a dog?")]), "caption": "a dog",
            "img_features": json.dumps(store[0].tolist())}
    bad = [
        ({"history": "not json"}, "history: not JSON"),
        ({"history": json.dumps([turn("answer", "yes")])}, "history[0]: speaker must be 'question'"),
        ({"history": json.dumps([turn("question", "q"), turn("answer", "a")])}, "must end with the new question"),
        ({"history": json.dumps([{"speaker": "question"}])}, "exactly 'speaker' and 'text'"),
        ({"img_features": json.dumps([0.0] * 47)}, "img_features: must be a JSON list of 48 numbers, got 47"),
        ({"img_features": json.dumps(["x"] * 48)}, "every entry must be a finite number"),
        ({"img_features": "[1, 2"}, "img_features: not JSON"),
    ]
    with BackendServer(backend) as server:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            for change, message in bad:
                response = http.post("/step_rank", data={**good, **change})
                assert response.status_code == 422 and message in response.json()["detail"], response.text
            assert http.post("/step", data={"caption": "x"}).status_code == 422  # missing fields
            rounds = json.dumps([turn("question", "q"), turn("answer", "a")])
            assert http.post("/fetch_reward_rank", data={**good, "history": good["history"]}).status_code == 422
            assert isinstance(http.post("/fetch_reward", data={**good, "history": rounds}).json(), float)
            answer = http.post("/fetch_a_bot_response", data=good).json()
            expected = http.post("/step_rank", data=good).json()
            assert answer == expected[0]
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                results = list(pool.map(lambda _: http.post("/step_rank", data=good).json(), range(8)))
            assert results == [expected] * 8
        with pytest.raises(BackendError, match="HTTP 422"):
            HttpBackend(server.url).respond(Scene("c", np.zeros(3, np.float32)), [turn("question", "q")], "rank")
    assert not server.thread.is_alive()
    with pytest.raises(BackendError, match="failed"):
        HttpBackend(server.url, timeout=2).initial(Scene("c", store[0]), "rank")


def test_serve_command_binds_localhost_by_default(setup, monkeypatch, capsys):
    import uvicorn

    folder, _, _, out, _ = setup
    served = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: served.update(app=app, **kwargs))
    args = build_parser().parse_args(["visdial-serve", "--manual-dir", folder, "--guesser", out, "--published-pool"])
    args.func(args)
    assert (served["host"], served["port"]) == ("127.0.0.1", 8766)
    assert {"/step_rank", "/step", "/fetch_reward_rank", "/fetch_reward", "/fetch_a_bot_response"} <= {
        r.path for r in served["app"].routes}
    assert "pool of 4 val images" in capsys.readouterr().out
