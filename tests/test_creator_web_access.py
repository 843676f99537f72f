"""creator_web's access rules without a server: the annotators file, host names and the guard's allow-list."""

from __future__ import annotations

import hashlib

import pytest

from creator_web.access import AccessError, SignIn, load_annotators, token_hash
from creator_web.guard import Guard, allowed_hosts_for, host_name, shown


@pytest.mark.parametrize("text, message", [
    ("ann\n", "line 1: expected 'name secret', got 1 fields"),
    ("# ok\nann long-enough-secret\nann another-secret-x\n", "line 3: annotator 'ann' is listed twice"),
    ("ann short\n", "line 1: the secret of 'ann' is shorter than 12 characters"),
    ("../x long-enough-secret\n", "line 1: annotator name '../x' is not letters"),
    ("ann sha256:abc\n", "line 1: the secret of 'ann' is not sha256: and 64 hex digits"),
    ("# nobody\n\n", "no annotator listed"),
])
def test_a_bad_annotators_file_is_refused_naming_file_and_line(tmp_path, text, message):
    path = tmp_path / "annotators.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match="annotators.txt") as error:
        load_annotators(path)
    assert message in str(error.value)


def test_secrets_are_checked_in_plain_or_hashed_form():
    sign_in = SignIn({"ann": "a-plain-secret", "bob": "sha256:" + hashlib.sha256(b"bob-secret-1").hexdigest()})
    assert sign_in.mode == "annotators"
    assert sign_in.annotator("ann", "a-plain-secret", {}) == "ann"
    assert sign_in.annotator("bob", "bob-secret-1", {}) == "bob"
    for name, secret in [("ann", "bob-secret-1"), ("bob", "sha256:" + hashlib.sha256(b"bob-secret-1").hexdigest()),
                         ("ann", None), ("zed", "a-plain-secret")]:
        with pytest.raises(AccessError, match="secret: wrong annotator or secret"):
            sign_in.annotator(name, secret, {})
    with pytest.raises(ValueError, match="not both"):
        SignIn({"ann": "a-plain-secret"}, "X-Remote-User")


def test_the_proxy_header_must_be_a_valid_name():
    sign_in = SignIn(proxy_header="X-Remote-User")
    assert sign_in.mode == "proxy" and sign_in.annotator(None, None, {"x-remote-user": "ann"}) == "ann"
    with pytest.raises(AccessError, match="X-Remote-User: '../ann' is not letters"):
        sign_in.annotator(None, None, {"x-remote-user": "../ann"})
    assert SignIn().mode == "open" and len(token_hash("t")) == 64


def test_host_names_and_the_allow_list():
    assert host_name("LocalHost:8765") == "localhost" and host_name("[::1]:80") == "::1"
    assert host_name("evil.example") == "evil.example" and host_name("::1") == "::1"
    assert allowed_hosts_for("127.0.0.1") == {"127.0.0.1", "localhost", "::1"}
    assert allowed_hosts_for("0.0.0.0", ["Lab.Example.org"]) == {"127.0.0.1", "localhost", "::1", "lab.example.org"}
    assert "10.0.0.5" in allowed_hosts_for("10.0.0.5")
    guard = Guard(app=None, allowed_hosts=allowed_hosts_for("0.0.0.0", ["lab.example.org"]))
    assert guard.refusal("GET", {"host": "lab.example.org"}) is None
    assert guard.refusal("POST", {"host": "lab.example.org", "origin": "https://lab.example.org"}) is None
    assert guard.refusal("POST", {"host": "lab.example.org:80", "origin": "http://lab.example.org"}) is None
    assert guard.refusal("POST", {"host": "lab.example.org:8443", "origin": "https://lab.example.org:8443"}) is None
    assert guard.refusal("POST", {"host": "lab.example.org", "origin": "https://lab.example.org:8443"})[0] == 403
    assert guard.refusal("POST", {"host": "lab.example.org", "origin": "https://evil.example"})[0] == 403
    assert guard.refusal("GET", {"host": "lab.example.org.evil.example"})[0] == 400
    assert shown("x" * 1000).endswith("(1002 characters)") and len(shown("x" * 1000)) < 120


def test_the_server_command_line_takes_the_documented_options(tmp_path):
    import argparse
    from pathlib import Path

    from creator_web.limits import Limits
    from creator_web.server import add_server_arguments, app_options
    from creator_web.tasks import TaskSources

    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    args = parser.parse_args(["--allow-host", "annotate.lab.example.org", "--annotators", "a.txt",
                              "--judge-pair", "expert,human/wordle"])
    assert app_options(args) == {"allow_hosts": ["annotate.lab.example.org"], "annotators": "a.txt",
                                 "proxy_header": None, "judge_pair": ("expert", "human/wordle"),
                                 "task_sources": TaskSources(), "limits": Limits()}
    sources = app_options(parser.parse_args(["--reddit-dir", "r", "--upvote-model", "m", "--visdial-dir", "v",
                                             "--visdial-answerer", "http://127.0.0.1:9000"]))["task_sources"]
    assert sources == TaskSources(reddit_dir="r", upvote_model="m", visdial_dir="v",
                                  visdial_answerer="http://127.0.0.1:9000")
    assert app_options(parser.parse_args(["--proxy-user-header", "X-Remote-User"]))["proxy_header"] == "X-Remote-User"
    limits = app_options(parser.parse_args(["--limit", "session_idle_s=60", "--limit", "sessions_total=3"]))["limits"]
    assert (limits.session_idle_s, limits.sessions_total, limits.lockout_s) == (60.0, 3, Limits().lockout_s)
    for bad in [["--judge-pair", "only-one"], ["--limit", "sessions=3"], ["--limit", "lockout_s=soon"],
                ["--limit", "sessions_total=0"]]:
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "browser_access.md").read_text()
    for option in ["--allow-host", "--annotators", "--proxy-user-header", "--judge-pair", "--limit"]:
        assert f"`{option} " in guide  # each option is in the guide's table
    example = guide.split("```text\n", 1)[1].split("```", 1)[0]  # the guide's annotators file works as shown
    (tmp_path / "annotators.txt").write_text(example)
    sign_in = SignIn(load_annotators(tmp_path / "annotators.txt"))
    assert sign_in.annotator("bob", "bobs-own-secret", {}) == "bob"
    assert sign_in.annotator("ann", "correct-horse-battery", {}) == "ann"
