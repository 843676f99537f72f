"""creator_web's access limits: wrong secrets, session expiry and sign-out, open sessions, unfinished games."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from creator_web.app import create_app
from creator_web.limits import Limits, Throttle
from tests.web_helpers import LOCAL, send_tokens

REPO = Path(__file__).resolve().parents[1]
SECRET = "correct-horse-battery"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _client(app, address: str = "10.0.0.1") -> TestClient:
    return send_tokens(TestClient(app, base_url=LOCAL, client=(address, 50000)))


def _sign_in(client, annotator: str = "ann", secret: str | None = SECRET):
    return client.post("/api/sessions", json={"annotator": annotator, "secret": secret, "task": "wordle",
                                              "config": {"answer": "crane"}})


def test_a_throttle_locks_a_key_out_after_its_failures_within_the_window_and_stays_bounded():
    clock = Clock()
    throttle = Throttle(most=3, window_s=60, lockout_s=100, keys=4, clock=clock)
    throttle.failed("a")
    clock.now += 61  # outside the window: forgotten
    throttle.failed("a")
    throttle.failed("a")
    assert throttle.locked_for("a") == 0
    throttle.failed("a")
    assert throttle.locked_for("a") == 100
    clock.now += 99.5
    assert throttle.locked_for("a") == pytest.approx(0.5)
    clock.now += 1
    assert throttle.locked_for("a") == 0
    throttle.failed("b")
    throttle.succeeded("b")
    throttle.failed("b")
    throttle.failed("b")
    assert throttle.locked_for("b") == 0  # a success forgot the first failure
    for key in range(10):
        throttle.failed(f"k{key}")
    assert len(throttle._failures) <= 4  # the table never grows past its bound


def test_wrong_secrets_lock_the_annotator_and_the_client_out_even_with_the_right_secret(tmp_path):
    limits = Limits(failed_secrets_per_annotator=5, failed_secrets_per_client=8, lockout_s=900)
    app = create_app(tmp_path, annotators={"ann": SECRET, "bob": "bobs-own-secret"}, limits=limits)
    with _client(app) as client:
        for _ in range(5):
            assert _sign_in(client, secret="guess-guess-guess").status_code == 403
        refused = _sign_in(client)  # the right secret, too late
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) == 900
        assert re.search(r"too many wrong secrets for annotator 'ann' \(5 within 600 s\)", refused.json()["detail"])
        with _client(app, "10.0.0.2") as other:  # the lock-out is the annotator's, whichever client asks
            assert _sign_in(other).status_code == 429
            assert _sign_in(other, "bob", "bobs-own-secret").status_code == 200
        for name in ["carol", "dave", "erin"]:  # unknown names count against the client only
            assert _sign_in(client, name).status_code == 403
        refused = _sign_in(client, "bob", "bobs-own-secret")
        assert refused.status_code == 429 and "this client address (8 within 600 s)" in refused.json()["detail"]


def test_a_lock_out_ends_and_a_right_secret_forgets_the_wrong_ones(tmp_path):
    app = create_app(tmp_path, annotators={"ann": SECRET}, limits=Limits(failed_secrets_per_annotator=3))
    clock = Clock()
    app.state.sign_in_throttle.annotators.clock = clock
    with _client(app) as client:
        for _ in range(2):
            assert _sign_in(client, secret="guess-guess-guess").status_code == 403
        assert _sign_in(client).status_code == 200
        for _ in range(2):  # counted afresh after the right one
            assert _sign_in(client, secret="guess-guess-guess").status_code == 403
        assert _sign_in(client).status_code == 200
        for _ in range(3):
            _sign_in(client, secret="guess-guess-guess")
        assert _sign_in(client).status_code == 429
        clock.now += Limits().lockout_s + 1
        assert _sign_in(client).status_code == 200


def test_a_session_expires_when_idle_or_old_and_its_game_stays_unfinished(tmp_path):
    app = create_app(tmp_path, limits=Limits(session_idle_s=60, session_max_age_s=300))
    clock = Clock()
    app.state.sessions.clock = clock
    with _client(app) as client:
        sid = _sign_in(client).json()["session_id"]
        client.post(f"/api/sessions/{sid}/play/new")
        for _ in range(4):  # used every 50 s: idle never more than 60 s
            clock.now += 50
            assert client.get(f"/api/sessions/{sid}/play").status_code == 200
        clock.now += 101  # 301 s after opening
        response = client.get(f"/api/sessions/{sid}/play")
        assert response.status_code == 401
        assert "this session expired 300 s after it was opened: open a new session" in response.json()["detail"]
        record = json.loads((tmp_path / "sessions" / f"{sid}.json").read_text())
        assert record["closed"] == clock.now and record["unfinished"] == 1
        sid = _sign_in(client).json()["session_id"]
        clock.now += 61
        response = client.get(f"/api/sessions/{sid}/play")
        assert response.status_code == 401 and "expired after 60 s without a request" in response.json()["detail"]
    with _client(create_app(tmp_path)) as client:  # ended sessions are not reopened by a restart
        assert client.get(f"/api/sessions/{sid}/play").status_code == 404


def test_signing_out_ends_the_session_and_frees_its_place(tmp_path):
    app = create_app(tmp_path, limits=Limits(sessions_per_annotator=1))
    with _client(app) as client:
        opened = _sign_in(client).json()
        sid = opened["session_id"]
        client.post(f"/api/sessions/{sid}/play/new")
        assert _sign_in(client).status_code == 429
        closed = client.post(f"/api/sessions/{sid}/close")
        assert closed.json() == {"closed": sid, "unfinished_game": f"human-{sid}-00000"}
        response = client.post(f"/api/sessions/{sid}/play/new", headers={"X-Session-Token": opened["token"]})
        assert response.status_code == 401 and "this session was signed out" in response.json()["detail"]
        assert _sign_in(client).status_code == 200
    assert json.loads((tmp_path / "sessions" / f"{sid}.json").read_text())["closed_because"] == "was signed out"


def test_open_sessions_are_capped_per_annotator_and_in_all(tmp_path):
    app = create_app(tmp_path, limits=Limits(sessions_per_annotator=2, sessions_total=3))
    with _client(app) as client:
        assert [_sign_in(client, "ann").status_code for _ in range(3)] == [200, 200, 429]
        refused = _sign_in(client, "ann").json()["detail"]
        assert refused.startswith("sessions: annotator 'ann' has 2 open sessions, the limit: sign out of one")
        assert [_sign_in(client, "bob").status_code for _ in range(2)] == [200, 429]
        refused = _sign_in(client, "carol")
        assert refused.status_code == 429 and "the server has 3 open sessions, its limit" in refused.text
        assert refused.headers["Retry-After"] == "60"


def test_a_session_leaves_a_bounded_number_of_games_unfinished_even_across_a_restart(tmp_path):
    limits = Limits(unfinished_games_per_session=3)
    tokens: dict[str, str] = {}
    with send_tokens(TestClient(create_app(tmp_path, limits=limits), base_url=LOCAL), tokens) as client:
        sid = _sign_in(client).json()["session_id"]
        answers = [client.post(f"/api/sessions/{sid}/play/new").status_code for _ in range(30)]
        assert answers == [200] * 4 + [409] * 26
        refused = client.post(f"/api/sessions/{sid}/play/new").json()["detail"]
        assert refused == (f"play/new: session {sid} has left 3 games unfinished, the limit: finish this game "
                           "before starting another, or open a new session")
        assert client.post(f"/api/sessions/{sid}/play/act", json={"action": "crane"}).json()["done"]
        assert client.post(f"/api/sessions/{sid}/play/new").status_code == 200  # a finished game: no limit
    folders = sorted(p.name for p in (tmp_path / "human" / "wordle" / sid).iterdir())
    assert len(folders) == 5
    # the restart loses the game in progress: counted, with the 3 before it; the count is not reset
    with send_tokens(TestClient(create_app(tmp_path, limits=limits), base_url=LOCAL), tokens) as client:
        assert client.post(f"/api/sessions/{sid}/play/new").status_code == 200  # nothing in progress to abandon
        assert client.post(f"/api/sessions/{sid}/play/new").status_code == 409
    for _ in range(2):  # the lost game is counted once, however many restarts see it
        with send_tokens(TestClient(create_app(tmp_path, limits=limits), base_url=LOCAL), tokens) as client:
            assert client.get(f"/api/sessions/{sid}/play").json()["lost"] == f"human-{sid}-00005"
    assert json.loads((tmp_path / "sessions" / f"{sid}.json").read_text())["unfinished"] == 5


def test_the_browser_guide_states_every_limit_and_its_default():
    import dataclasses

    guide = (REPO / "docs" / "guides" / "browser_access.md").read_text(encoding="utf-8")
    for field in dataclasses.fields(Limits):
        default = f"{field.default:g}" if isinstance(field.default, float) else str(field.default)
        assert re.search(rf"\| `{field.name}` \| {default} \|", guide), field.name
