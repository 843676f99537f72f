"""The text tasks' endpoints of creator_web attacked over real HTTP (127.0.0.1): another session's token, no token,
rebinding hosts, cross-origin writes, oversized and malformed bodies and configs are all refused with a 4xx naming
the field, and the data folder stays byte-identical."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from creator_web.server import ServerThread
from creator_web.tasks import TaskSources
from tests.test_creator_web_attacks import EVIL, fingerprint, refused
from tests.visdial_web_fixtures import moving_backend, visdial_folder

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "builders" / "reddit_comments" / "dummy_data" / "published"


class Person:
    """One browser's session of ``task``: its id, its secret token and an HTTP client that sends the token."""

    def __init__(self, url: str, annotator: str, task: str, **config: Any):
        self.http = httpx.Client(base_url=url, timeout=30)
        opened = self.http.post("/api/sessions", json={"annotator": annotator, "task": task, "config": config})
        assert opened.status_code == 200, opened.text
        self.sid, self.token = opened.json()["session_id"], opened.json()["token"]
        self.http.headers["X-Session-Token"] = self.token


@pytest.fixture(scope="module")
def visdial_source(tmp_path_factory) -> Path:
    return visdial_folder(tmp_path_factory.mktemp("vd"), with_image_of=0)


@pytest.fixture()
def data_dir(tmp_path) -> Path:
    return tmp_path / "data"


@pytest.fixture()
def server(data_dir, visdial_source) -> Iterator[ServerThread]:
    sources = TaskSources(reddit_dir=str(PUBLISHED), visdial_dir=str(visdial_source),
                          visdial_answerer=moving_backend(visdial_source))
    with ServerThread(str(data_dir), task_sources=sources) as running:
        yield running


@pytest.fixture()
def people(server) -> Iterator[dict[str, Person]]:
    """A victim with a finished Reddit reply and a VisDial dialogue in progress, and an attacker."""
    reddit = Person(server.url, "vic", "reddit", seed=1)
    reddit.http.post(f"/api/sessions/{reddit.sid}/play/new")
    assert reddit.http.post(f"/api/sessions/{reddit.sid}/play/act", json={"action": "hello"}).status_code == 200
    visdial = Person(server.url, "vic", "visdial", mode="agent_stops", seed=1)
    visdial.http.post(f"/api/sessions/{visdial.sid}/play/new")
    assert visdial.http.post(f"/api/sessions/{visdial.sid}/play/act", json={"action": "a dog?"}).status_code == 200
    attacker = Person(server.url, "mallory", "visdial")
    people = {"reddit": reddit, "visdial": visdial, "attacker": attacker}
    yield people
    for person in people.values():
        person.http.close()


@pytest.fixture()
def unchanged(data_dir, people) -> Iterator[None]:
    before = fingerprint(data_dir)
    yield
    assert fingerprint(data_dir) == before


def test_another_sessions_token_or_none_gives_no_power_over_a_text_task(server, people, unchanged):
    attacker = people["attacker"]
    for task in ("reddit", "visdial"):
        victim = people[task]
        for method, path, body in [("GET", "play", None), ("GET", "play/picture", None), ("POST", "play/new", None),
                                   ("POST", "play/act", {"action": "<stop>"})]:
            url = f"/api/sessions/{victim.sid}/{path}"
            refused(attacker.http.request(method, url, json=body), 403, "X-Session-Token", "not the token of session")
            refused(httpx.request(method, server.url + url, json=body), 401, "X-Session-Token")


@pytest.mark.parametrize("host", [f"{EVIL}:{{port}}", "127.0.0.1.evil.example"])
def test_a_rebinding_host_reaches_no_text_task(server, people, unchanged, host):
    victim = people["visdial"]
    headers = {"Host": host.format(port=server.port), "X-Session-Token": victim.token}
    for method, path, body in [("GET", "play/picture", None), ("GET", "play", None),
                               ("POST", "play/act", {"action": "<stop>"})]:
        response = httpx.request(method, f"{server.url}/api/sessions/{victim.sid}/{path}", json=body, headers=headers)
        refused(response, 400, "Host")
    response = httpx.post(server.url + "/api/sessions", json={"annotator": "dns", "task": "reddit"},
                          headers={"Host": EVIL})
    refused(response, 400, "Host")


def test_cross_origin_actions_in_a_text_task_are_refused(server, people, unchanged):
    for task in ("reddit", "visdial"):
        victim = people[task]
        for headers, field in [({"Origin": f"http://{EVIL}"}, "Origin"), ({"Sec-Fetch-Site": "cross-site"},
                                                                          "Sec-Fetch-Site")]:
            for path in ("play/new", "play/act"):
                response = victim.http.post(f"/api/sessions/{victim.sid}/{path}", json={"action": "<stop>"},
                                            headers=headers)
                refused(response, 403, field)


@pytest.mark.parametrize("task, config, field", [
    ("reddit", {"split": "../../etc"}, "config.split"), ("reddit", {"reward_kind": "x" * 100_000}, "config.reward_kind"),
    ("reddit", {"include_parent": False}, "config.include_parent"), ("visdial", {"mode": "stop"}, "config.mode"),
    ("visdial", {"seed": -1}, "config.seed"), ("visdial", {"yn_kind": ["hard"]}, "config.yn_kind")])
def test_bad_text_task_configs_are_refused_naming_the_field(server, people, unchanged, task, config, field):
    response = httpx.post(server.url + "/api/sessions", json={"annotator": "eve", "task": task, "config": config})
    refused(response, 422, field)
    assert len(response.content) < 2000  # the 100 kB value is not echoed back


def test_oversized_and_malformed_actions_are_refused(server, people, unchanged):
    reddit, visdial = people["reddit"], people["visdial"]
    act = f"/api/sessions/{reddit.sid}/play/act"
    refused(reddit.http.post(act, json={"action": "x" * 2001}), 422, "action")
    refused(reddit.http.post(act, content=b'{"action": "hi", "client_ms": NaN}',
                             headers={"Content-Type": "application/json"}), 422, "client_ms")
    refused(reddit.http.post(act, content=b'{"action": "\\ud800"}', headers={"Content-Type": "application/json"}),
            422, "action")
    refused(reddit.http.post(act, json={"action": "hi", "extra": 1}), 422, "extra")
    refused(reddit.http.post(act, content=b"x" * (2 << 20)), 413, "request body")
    question = f"/api/sessions/{visdial.sid}/play/act"
    refused(visdial.http.post(question, json={"action": "q" * 301}), 422, "300")
    refused(visdial.http.post(question, json={"action": "  "}), 422, "empty")
