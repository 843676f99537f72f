"""Our Visual Dialogue server driven as the public reference client drives it: form fields, JSON-encoded
history and features, ``generation_kwargs={"inference": "greedy", "beamSize": 1}``, and image features the
client L2-normalised with its own routine (float32 arithmetic), which differ from ours in the last bits.

The server starts on a free 127.0.0.1 port in each test and stops at its end.
"""

import json

import httpx
import numpy as np
import pytest

from rlds_lang.visdial.backend import LocalBackend, TfidfAnswerer, TfidfQuestioner, turn
from rlds_lang.visdial.data import ROUNDS, l2_normalize, read_split
from rlds_lang.visdial.server import BackendServer
from tests.test_visdial_server import setup  # noqa: F401  (the module fixture: data, trained guesser)

torch = pytest.importorskip("torch", reason="the guesser and the reference normalisation need torch")

GENERATION = json.dumps({"inference": "greedy", "beamSize": 1})  # what the reference client sends


def reference_normalised(raw: np.ndarray, routine: str) -> np.ndarray:
    """Rows normalised as a client in float32 would: torch's ``F.normalize``, or times the reciprocal norm."""
    raw = np.asarray(raw, np.float32)
    if routine == "torch":
        return torch.nn.functional.normalize(torch.from_numpy(raw), dim=1).numpy()
    return raw * (np.float32(1.0) / np.linalg.norm(raw, axis=1, keepdims=True).astype(np.float32))


@pytest.fixture(scope="module")
def dense(setup):  # noqa: F811
    """A backend whose ranking pool is 64 dense rows (our normalisation) and the raw rows behind them."""
    folder, guesser, _, _, _ = setup
    val = list(read_split(folder, "val"))
    raw = np.random.default_rng(7).normal(size=(64, 48)).astype(np.float32)
    pool = l2_normalize(raw)
    backend = LocalBackend(TfidfAnswerer(val, pool[:len(val)]), guesser, pool,
                           questioner=TfidfQuestioner(list(read_split(folder, "train"))))
    return backend, raw, pool


def form(history, features, caption="a photo") -> dict:
    """A request's form fields, encoded as the reference client encodes them."""
    return {"history": json.dumps(history), "caption": caption, "img_features": json.dumps(np.asarray(features).tolist()),
            "generation_kwargs": GENERATION}


@pytest.mark.parametrize("routine", ["torch", "reciprocal"])
def test_features_normalised_by_the_client_rank_the_image_where_it_is(dense, routine):
    backend, raw, pool = dense
    theirs = reference_normalised(raw, routine)
    differ = [i for i in range(len(pool)) if theirs[i].tobytes() != pool[i].tobytes()]
    assert len(differ) >= 8, "the two routines should differ in the last bits for many rows"
    assert all(backend.pool.index_of(theirs[i]) == i for i in range(len(pool)))  # found, not added as a new image
    assert backend.pool.index_of(l2_normalize(np.ones((1, 48), np.float32))[0]) is None  # another image is not
    question = [turn("question", "is there a dog")]
    with BackendServer(backend) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        for i in differ[:8]:
            ours_p0 = http.post("/fetch_reward_rank", data=form([], pool[i])).json()
            assert http.post("/fetch_reward_rank", data=form([], theirs[i])).json() == ours_p0
            assert http.post("/step_rank", data=form(question, theirs[i])).json() == \
                http.post("/step_rank", data=form(question, pool[i])).json()
    assert not server.thread.is_alive()


def test_the_server_rejects_what_it_cannot_serve_with_a_4xx_naming_the_field(dense):
    backend, raw, pool = dense
    rounds = [t for r in range(ROUNDS) for t in (turn("question", f"question {r}"), turn("answer", "yes"))]
    question = [turn("question", "is there a dog")]
    with BackendServer(backend) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        asked = http.post("/fetch_q_bot_response", data={"history": json.dumps(rounds[:-2]), "caption": "a photo",
                                                         "generation_kwargs": GENERATION})
        assert asked.status_code == 200 and asked.json()  # the 10th question
        done = http.post("/fetch_q_bot_response", data={"history": json.dumps(rounds), "caption": "a photo",
                                                        "generation_kwargs": GENERATION})
        assert done.status_code == 422 and "history: holds 10 complete rounds" in done.json()["detail"]
        huge = np.full(48, 1e308)
        for endpoint, history in (("/step_rank", question), ("/fetch_reward_rank", []), ("/step", question),
                                  ("/fetch_reward", [])):
            response = http.post(endpoint, data=form(history, huge))
            assert response.status_code == 422 and "img_features[0]" in response.json()["detail"], response.text
        large = http.post("/fetch_reward", data=form([], np.full(48, 1e30)))  # large but in range: a finite reward
        assert large.status_code == 200 and np.isfinite(large.json())
        bad_kwargs = http.post("/step_rank", data={**form(question, pool[0]), "generation_kwargs": "{greedy"})
        assert bad_kwargs.status_code == 422 and "generation_kwargs: not JSON" in bad_kwargs.json()["detail"]
        for empty in ("", "   "):
            response = http.post("/step_rank", data=form([turn("question", empty)], pool[0]))
            assert response.status_code == 422 and "history[0]: the question is empty" in response.json()["detail"]
        assert http.post("/step_rank", data=form(question, pool[0])).status_code == 200
    assert not server.thread.is_alive()


def test_the_cache_command_writes_what_our_server_answers_in_the_reference_format(setup, tmp_path):  # noqa: F811
    import os

    from rlds_lang.visdial.data import FEATURES_FILE, FeatureStore, cache_file, load_reward_cache
    from trainers.cli.main import build_parser
    from trainers.tasks.visdial_caches import question_text

    folder, _, _, guesser_dir, backend = setup
    out = tmp_path / "caches"
    args = build_parser().parse_args(["visdial-serve", "--manual-dir", folder, "--guesser", guesser_dir,
                                      "--write-caches", str(out)])
    args.func(args)  # writes and returns: nothing is served
    val = list(read_split(folder, "val"))
    rank = load_reward_cache(str(out / cache_file("val", "rank")), expected=len(val))
    distance = load_reward_cache(str(out / cache_file("val", "distance")), expected=len(val))
    assert all(len(row) == ROUNDS + 1 for row in rank + distance)
    store = FeatureStore(os.path.join(folder, FEATURES_FILE), "val")
    d = val[1]
    with BackendServer(backend) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        history, served_rank, served_distance = [], [], []
        for r in range(ROUNDS + 1):
            fields = form(history, store[d.index], d.caption)
            served_rank.append(http.post("/fetch_reward_rank", data=fields).json())
            served_distance.append(http.post("/fetch_reward", data=fields).json())
            if r < ROUNDS:
                history += [turn("question", question_text(d.questions[r])), turn("answer", d.answers[r])]
    assert list(rank[1]) == served_rank and list(distance[1]) == served_distance  # p_0 first, as the stop rule reads
