"""creator_web attacked over real HTTP: a uvicorn server on 127.0.0.1 (in a thread, stopped by each test) gets the
requests an attacker would send, and every one is refused with a 4xx whose message names the field, while the data
folder stays byte-identical (every file hashed before and after)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from creator_web import review
from creator_web.guard import CSP
from creator_web.server import ServerThread
from loggers import record
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy

EVIL = "evil.example"


def fingerprint(root: Path) -> dict[str, str]:
    """Every file, folder and symlink under ``root``: a file by the SHA-256 of its bytes, a symlink by its target."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def detail(response: httpx.Response) -> str:
    """The answer's ``detail`` as one string (a list of field errors joined)."""
    body = response.json()["detail"]
    if isinstance(body, list):
        return "; ".join(".".join(map(str, d["loc"])) + ": " + d["msg"] for d in body)
    return str(body)


def refused(response: httpx.Response, status: int, *words: str) -> None:
    """Asserts the answer is ``status`` and its detail names every one of ``words``."""
    assert response.status_code == status, (response.request.url, response.status_code, response.text[:500])
    text = detail(response)
    for word in words:
        assert word in text, (word, text[:500])


class Person:
    """One browser's session on the server: its public id, its secret token and an HTTP client."""

    def __init__(self, url: str, annotator: str, **config: Any):
        self.http = httpx.Client(base_url=url, timeout=30)
        opened = self.http.post("/api/sessions", json={"annotator": annotator, "config": config})
        assert opened.status_code == 200, opened.text
        self.sid, self.token = opened.json()["session_id"], opened.json()["token"]
        self.http.headers["X-Session-Token"] = self.token

    def post(self, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        """POST under this session (``{sid}`` in ``path`` is its id)."""
        return self.http.post(path.format(sid=self.sid), json=body, **kw)


@pytest.fixture()
def data_dir(tmp_path) -> Path:
    """A data folder with one recorded dataset (``expert``, 3 optimal games)."""
    root = tmp_path / "data"
    record(WordleEnv(), OptimalPolicy(), episodes=3, data_dir=root / "expert", run_name="expert", progress=False)
    return root


@pytest.fixture()
def server(data_dir) -> Iterator[ServerThread]:
    with ServerThread(str(data_dir)) as running:
        yield running


@pytest.fixture()
def people(server) -> Iterator[tuple[Person, Person]]:
    """A victim with one finished game and one in progress, and an attacker with a session of their own."""
    victim = Person(server.url, "vic", answer="crane")
    victim.post("/api/sessions/{sid}/play/new")
    for guess in ["abide", "crane"]:
        assert victim.post("/api/sessions/{sid}/play/act", {"action": guess}).status_code == 200
    victim.post("/api/sessions/{sid}/play/new")
    assert victim.post("/api/sessions/{sid}/play/act", {"action": "slate"}).status_code == 200
    attacker = Person(server.url, "mallory")
    yield victim, attacker
    victim.http.close()
    attacker.http.close()


@pytest.fixture()
def unchanged(data_dir, people) -> Iterator[None]:
    """Asserts the data folder is byte-identical after the test (taken once the people have played)."""
    before = fingerprint(data_dir)
    yield
    assert fingerprint(data_dir) == before


def test_a_public_session_id_gives_no_power_over_the_session(server, data_dir, people, unchanged):
    victim, attacker = people
    listed = attacker.http.get("/api/datasets/human/wordle/episodes").json()["episodes"]
    assert [e["episode_id"] for e in listed] == [f"human-{victim.sid}-00000"]  # ids show the public id only
    assert victim.token not in json.dumps(listed)
    for name, path in [("play", "/api/sessions/{sid}/play"), ("new", "/api/sessions/{sid}/play/new"),
                       ("act", "/api/sessions/{sid}/play/act"), ("next", "/api/sessions/{sid}/judge/next"),
                       ("judge", "/api/sessions/{sid}/judge"), ("annotate", "/api/sessions/{sid}/annotate"),
                       ("export", "/api/sessions/{sid}/export")]:
        url = path.format(sid=victim.sid)
        method = "GET" if name == "play" else "POST"
        body = {"play": None, "new": None, "act": {"action": "crane"}, "next": {"left": "expert", "right": "expert"},
                "judge": {"pair_id": "0" * 16, "label": "left"},
                "annotate": {"dataset": "expert", "episode_id": "expert-00000000", "text": "by vic?"},
                "export": {"dataset": "expert", "episode_ids": ["expert-00000000"], "name": "stolen"}}[name]
        with_own_token = attacker.http.request(method, url, json=body)
        refused(with_own_token, 403, "X-Session-Token", "not the token of session")
        no_token = httpx.request(method, server.url + url, json=body)
        refused(no_token, 401, "X-Session-Token")
        guessed = httpx.request(method, server.url + url, json=body, headers={"X-Session-Token": victim.sid})
        refused(guessed, 401, "X-Session-Token")
    for page in ["/", "/play", "/judge", "/review"]:
        assert victim.token not in httpx.get(server.url + page).text
    # the secret is nowhere in the data folder (only its hash), so nothing shown or stored can leak it
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert victim.token.encode() not in path.read_bytes(), path
    refused(httpx.get(server.url + "/api/datasets"), 401, "X-Session-Token")  # reading data needs a session too


@pytest.mark.parametrize("host", [f"{EVIL}:{{port}}", EVIL, "127.0.0.1.evil.example", "localhost.evil.example:80",
                                  "", "[::2]:80"])
def test_a_rebinding_host_reads_and_writes_nothing(server, people, unchanged, host):
    victim, _ = people
    headers = {"Host": host.format(port=server.port), "X-Session-Token": victim.token}
    for method, path, body in [("GET", "/api/tasks", None), ("GET", "/api/datasets", None), ("GET", "/", None),
                               ("GET", f"/api/sessions/{victim.sid}/play", None),
                               ("GET", "/api/datasets/expert/episode?episode_id=expert-00000000", None),
                               ("POST", "/api/sessions", {"annotator": "dns"}),
                               ("POST", f"/api/sessions/{victim.sid}/annotate",
                                {"dataset": "expert", "episode_id": "expert-00000000", "text": "rebound"})]:
        response = httpx.request(method, server.url + path, json=body, headers=headers)
        refused(response, 400, "Host", "not a host this server was started for")
        assert response.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("origin_headers, field", [
    ({"Origin": f"http://{EVIL}"}, "Origin"), ({"Origin": f"http://{EVIL}:8765"}, "Origin"),
    ({"Origin": "null"}, "Origin"), ({"Origin": "file://"}, "Origin"), ({"Origin": "http://127.0.0.1:1"}, "Origin"),
    ({"Origin": "http://localhost:{port}"}, "Origin"),
    ({"Sec-Fetch-Site": "cross-site"}, "Sec-Fetch-Site")])
def test_cross_origin_writes_are_refused(server, people, unchanged, origin_headers, field):
    victim, _ = people
    origin_headers = {k: v.format(port=server.port) for k, v in origin_headers.items()}
    for path, body in [("/api/sessions", {"annotator": "csrf"}),
                       (f"/api/sessions/{victim.sid}/play/new", None),
                       (f"/api/sessions/{victim.sid}/annotate",
                        {"dataset": "expert", "episode_id": "expert-00000000", "text": "csrf"})]:
        refused(victim.http.post(path, json=body, headers=origin_headers), 403, field)


def test_same_origin_writes_and_headers_are_allowed(server, people):
    victim, _ = people
    same = victim.post("/api/sessions/{sid}/play/act", {"action": "crane"}, headers={"Origin": server.url})
    assert same.status_code == 200, same.text
    page = httpx.get(server.url + "/?next=javascript:alert(document.domain)")
    assert page.headers["x-frame-options"] == "DENY" and page.headers["content-security-policy"] == CSP
    assert "'unsafe-inline'" not in CSP and "frame-ancestors 'none'" in CSP and "script-src 'self'" in CSP
    assert "javascript:" not in page.text and "<script>" not in page.text  # no inline script runs on the page
    index_js = httpx.get(server.url + "/static/index.js").text
    assert "nextPage(new URLSearchParams(location.search).get(\"next\"))" in index_js
    assert httpx.get(server.url + "/api/openapi.json").json()["info"]["title"] == "rlds-lang creator_web"
    assert httpx.get(server.url + "/api/docs").status_code == 404  # its CDN scripts would break the CSP
    common_js = httpx.get(server.url + "/static/common.js").text
    assert 'const PAGES = ["/play", "/judge", "/review"];' in common_js


def test_oversized_and_malformed_bodies_are_refused(server, people, unchanged):
    victim, _ = people
    note = {"dataset": "expert", "episode_id": "expert-00000000"}
    annotate = "/api/sessions/{sid}/annotate"
    refused(victim.post(annotate, {**note, "tags": ["t"] * 20}), 422, "tags")
    refused(victim.post(annotate, {**note, "tags": ["x" * 41]}), 422, "tags.0")
    refused(victim.post(annotate, {**note, "tags": ["a\nb"]}), 422, "tags.0", "control")
    refused(victim.post(annotate, {**note, "text": "x" * 2001}), 422, "text")
    refused(victim.post(annotate, {**note, "tags": ["y" * (1 << 20)]}), 413, "request body")
    chunks = (b"x" * 65536 for _ in range(40))  # 2.5 MB sent chunked, without a declared length
    refused(victim.http.post(annotate.format(sid=victim.sid), content=chunks,
                             headers={"Content-Type": "application/json"}), 413, "request body")
    big = victim.post("/api/sessions/{sid}/play/act", {"action": "z" * 900_000})
    refused(big, 422, "action")
    assert len(big.content) < 2000  # the 900 kB value is not echoed back
    for raw, field in [(b'{"action": "crane"', "body"), (b'["crane"]', "body"), (b'{"action": 5}', "action"),
                       (b'{"action": "\xff\xfe"}', "body"), (b'{"action": "crane", "client_ms": "soon"}', "client_ms")]:
        response = victim.post("/api/sessions/{sid}/play/act", content=raw,
                               headers={"Content-Type": "application/json"})
        assert 400 <= response.status_code < 500, (raw, response.status_code, response.text)
        assert field in response.text, (raw, response.text)


@pytest.mark.parametrize("path, raw, field", [
    ("/api/sessions/{sid}/judge", '{"pair_id": "0123456789abcdef", "label": "left", "seconds": NaN}', "seconds"),
    ("/api/sessions/{sid}/judge", '{"pair_id": "0123456789abcdef", "label": "left", "seconds": -Infinity}',
     "seconds"),
    ("/api/sessions/{sid}/play/act", '{"action": "crane", "client_ms": Infinity}', "client_ms"),
    ("/api/sessions", '{"annotator": "nan", "config": {"seed": NaN}}', "config.seed"),
    ("/api/sessions", '{"annotator": "x\\ud800"}', "annotator"),
    ("/api/sessions/{sid}/play/act", '{"action": "cr\\ud800ne"}', "action"),
    ("/api/sessions/{sid}/annotate", '{"dataset": "expert", "episode_id": "expert-00000000", "text": "\\udfff"}',
     "text"),
    ("/api/sessions/{sid}/annotate", '{"dataset": "expert", "episode_id": "expert-00000000", "tags": ["\\ud83d"]}',
     "tags.0"),
    ("/api/sessions/{sid}/annotate", '{"dataset": "expert", "episode_id": "e\\ud800", "text": "x"}', "episode_id"),
    ("/api/sessions/{sid}/judge/next", '{"left": "\\ud800", "right": "expert"}', "left"),
    ("/api/sessions/{sid}/export", '{"dataset": "expert", "episode_ids": ["expert-00000000"], "name": "a..b"}',
     "name"),
    ("/api/sessions/{sid}/export", '{"dataset": "expert", "episode_ids": ["expert-00000000"], "name": ".."}', "name"),
    ("/api/sessions/{sid}/export", '{"dataset": "expert", "episode_ids": ["expert-00000000", "expert-00000000"], '
                                   '"name": "dup"}', "episode_ids.1"),
])
def test_values_that_used_to_crash_the_server_are_named_4xx(server, people, unchanged, path, raw, field):
    victim, _ = people
    response = victim.post(path, content=raw.encode(), headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500, (raw, response.status_code, response.text[:300])
    assert field in detail(response), (raw, response.text[:300])
    if "NaN" in raw or "Infinity" in raw:  # said as such, not as a number out of range
        assert "finite number" in detail(response), response.text[:300]


def test_path_traversal_reaches_nothing(server, people, unchanged):
    victim, _ = people
    for path in ["/api/datasets/..%2F..%2Fetc/episodes", "/api/datasets/expert/../../../etc/passwd",
                 "/api/datasets/%2e%2e/episodes", "/api/datasets//etc/episodes", "/api/datasets/sessions/episodes",
                 "/api/datasets/expert/..%2F..%2F/episodes", "/static/..%2Fapp.py", "/static/%2e%2e%2fguard.py",
                 "/api/datasets/expert/episode?episode_id=..%2F..%2Fx"]:
        response = victim.http.get(path)
        assert response.status_code == 404, (path, response.status_code, response.text)
        assert "/etc" not in response.text or "no dataset" in response.text
    refused(victim.post("/api/sessions/{sid}/judge/next", {"left": "../../etc", "right": "expert"}), 404, "no dataset")
    refused(victim.post("/api/sessions/{sid}/export", {"dataset": "/etc", "episode_ids": ["x"], "name": "ok"}), 404,
            "no dataset")
    refused(victim.post("/api/sessions/{sid}/annotate", {"dataset": "expert/../sessions", "episode_id": "x",
                                                         "text": "x"}), 404, "no dataset")


def test_symlinks_and_damage_are_reported_not_followed(tmp_path, data_dir):
    outside = tmp_path / "outside"
    record(WordleEnv(), OptimalPolicy(), episodes=1, data_dir=outside, run_name="secret", progress=False)
    (data_dir / "leak").symlink_to(outside, target_is_directory=True)
    (data_dir / "inner").mkdir()
    (data_dir / "inner" / "logs").symlink_to(outside, target_is_directory=True)
    record(WordleEnv(), OptimalPolicy(), episodes=1, data_dir=data_dir / "exports" / "linked", run_name="l",
           progress=False)
    log = next(p for p in (data_dir / "exports" / "linked").rglob("metadata.riegeli")).parent
    (log / "extra.riegeli").symlink_to(tmp_path / "missing-file")  # a dangling file link inside a log
    (data_dir / "exports" / "gone").symlink_to(tmp_path / "missing")  # dangling
    (data_dir / "corrupt" / "log").mkdir(parents=True)
    (data_dir / "corrupt" / "log" / "metadata.riegeli").write_bytes(b"not a riegeli file")
    before = fingerprint(data_dir)
    with ServerThread(str(data_dir)) as server:
        person = Person(server.url, "ann")
        after_open = fingerprint(data_dir)
        listing = person.http.get("/api/datasets").json()
        assert listing["datasets"] == {"corrupt": "raw", "expert": "raw"}
        assert "symlink" in listing["damaged"]["leak"] and "symlink" in listing["damaged"]["inner"]
        assert "symlink" in listing["damaged"]["exports/gone"]
        assert listing["damaged"]["exports/linked"].endswith("extra.riegeli is a symlink (the server does not "
                                                             "follow symlinks)")
        refused(person.http.get("/api/datasets/exports/linked/episodes"), 409, "exports/linked", "extra.riegeli")
        refused(person.http.get("/api/datasets/corrupt/episodes"), 409, "corrupt", "damaged", "cannot be read")
        assert "cannot be read" in person.http.get("/api/datasets").json()["damaged"]["corrupt"]
        refused(person.http.get("/api/datasets/leak/episodes"), 409, "leak", "symlink")
        refused(person.http.get("/api/datasets/inner/episode?episode_id=secret-00000000"), 409, "symlink")
        refused(person.post("/api/sessions/{sid}/judge/next", {"left": "leak", "right": "expert"}), 409, "symlink")
        refused(person.post("/api/sessions/{sid}/export", {"dataset": "expert", "episode_ids": ["expert-00000000"],
                                                           "name": "gone"}), 409, "gone")
        (data_dir / "versions").symlink_to(outside, target_is_directory=True)
        after_link = fingerprint(data_dir)
        refused(person.post("/api/sessions/{sid}/annotate", {"dataset": "expert", "episode_id": "expert-00000000",
                                                             "text": "x"}), 409, "versions", "symlink")
        person.http.close()
        assert fingerprint(data_dir) == after_link
    assert {k: v for k, v in after_open.items() if k in before} == before
    assert sorted(set(after_open) - set(before)) == ["sessions", *[k for k in after_open if k.startswith("sessions/")]]


def test_stored_annotations_are_bounded(server, people, unchanged, monkeypatch):
    victim, _ = people
    monkeypatch.setattr(review, "MAX_NOTES_BYTES", 400)
    note = {"dataset": "expert", "episode_id": "expert-00000000"}
    refused(victim.post("/api/sessions/{sid}/annotate", {**note, "text": "x" * 500}), 409, "annotations",
            "more than the limit of 400")
    monkeypatch.setattr(review, "MAX_NOTES", 0)
    refused(victim.post("/api/sessions/{sid}/annotate", {**note, "text": "short"}), 409, "annotations", "limit")


def test_the_judge_default_is_explicit_and_stable(tmp_path, data_dir):
    with ServerThread(str(data_dir)) as server:
        person = Person(server.url, "jo")
        refused(person.post("/api/sessions/{sid}/judge/next", {}), 422, "left", "no default judge pair")
        assert person.http.get("/api/server").json()["judge_default"] is None
    record(WordleEnv(), OptimalPolicy(), episodes=2, data_dir=data_dir / "aaa", run_name="aaa", progress=False)
    with ServerThread(str(data_dir), judge_pair=("expert", "expert")) as server:
        person = Person(server.url, "jo")
        assert person.http.get("/api/server").json()["judge_default"] == ["expert", "expert"]
        pair = person.post("/api/sessions/{sid}/judge/next", {}).json()
        assert pair["datasets"] == ["expert", "expert"]  # 'aaa' sorts first and changes nothing


def test_annotators_sign_in_with_their_own_secret(tmp_path, data_dir):
    listing = tmp_path / "annotators.txt"
    listing.write_text("# name secret\nann correct-horse-battery\nbob sha256:"
                       + hashlib.sha256(b"bobs-own-secret").hexdigest() + "\n")
    with ServerThread(str(data_dir), annotators=str(listing)) as server:
        before = fingerprint(data_dir)
        for body, status in [({"annotator": "ann"}, 403), ({"annotator": "ann", "secret": "wrong"}, 403),
                             ({"annotator": "bob", "secret": "correct-horse-battery"}, 403),
                             ({"annotator": "eve", "secret": "correct-horse-battery"}, 403)]:
            refused(httpx.post(server.url + "/api/sessions", json=body), status, "secret")
        assert fingerprint(data_dir) == before
        assert httpx.get(server.url + "/api/server").json()["sign_in"] == "annotators"
        for body in [{"annotator": "ann", "secret": "correct-horse-battery"},
                     {"annotator": "bob", "secret": "bobs-own-secret"}]:
            opened = httpx.post(server.url + "/api/sessions", json=body)
            assert opened.status_code == 200 and opened.json()["annotator"] == body["annotator"]


def test_a_trusted_proxy_names_the_person_and_sessions_answer_only_to_them(tmp_path, data_dir):
    with ServerThread(str(data_dir), proxy_header="X-Remote-User") as server:
        before = fingerprint(data_dir)
        refused(httpx.post(server.url + "/api/sessions", json={"annotator": "ann"}), 401, "X-Remote-User")
        refused(httpx.post(server.url + "/api/sessions", json={"annotator": "ann"}, headers={"X-Remote-User": "bob"}),
                403, "annotator")
        assert fingerprint(data_dir) == before
        opened = httpx.post(server.url + "/api/sessions", json={}, headers={"X-Remote-User": "ann"}).json()
        assert opened["annotator"] == "ann"
        token, sid = opened["token"], opened["session_id"]
        before = fingerprint(data_dir)
        refused(httpx.post(f"{server.url}/api/sessions/{sid}/play/new",
                           headers={"X-Session-Token": token, "X-Remote-User": "bob"}), 403, "X-Remote-User")
        refused(httpx.post(f"{server.url}/api/sessions/{sid}/play/new", headers={"X-Session-Token": token}), 401,
                "X-Remote-User")
        refused(httpx.get(f"{server.url}/api/datasets", headers={"X-Session-Token": token}), 401, "X-Remote-User")
        assert fingerprint(data_dir) == before
        mine = httpx.post(f"{server.url}/api/sessions/{sid}/play/new",
                          headers={"X-Session-Token": token, "X-Remote-User": "ann"})
        assert mine.status_code == 200, mine.text
