"""trainers.core.build_worker: one build child serves a program's builds in turn, in the caller's environment and
folder, fails a build as a failed ``tfds build`` did, and never outlives the program or an abandoned build.

The requests here fail in argument parsing, before the child imports TensorFlow, so each child costs an
interpreter's start; the builds that succeed through it are those of every ``tfds_build`` in the suite
(``tests/test_build_check.py`` among the fast ones)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from trainers.core import build_child, build_worker
from trainers.core.build_worker import close_build_worker, current_build_worker, run_build
from tests.process_helpers import running

#: a request the child refuses in argument parsing (no --imports): quick, and no library imported
REFUSED = ["wordle_synthetic", "--data_dir", "/nowhere"]


@pytest.fixture(autouse=True)
def no_child_left():
    close_build_worker()
    yield
    close_build_worker()


def _pid() -> int:
    worker = current_build_worker()
    assert worker is not None and worker.alive()
    return worker.process.pid


def _refused(env=None) -> subprocess.CalledProcessError:
    with pytest.raises(subprocess.CalledProcessError) as caught:
        run_build(REFUSED, dict(os.environ) if env is None else env, quiet=True)
    return caught.value


def test_serve_builds_each_request_in_its_environment_and_answers_each(monkeypatch, capfd):
    seen = []

    def fake_build(args):
        if args.name == "broken":
            raise ValueError("no such recipe")
        print(f"building {args.name}")
        seen.append((args.name, os.environ.get("RLDS_LANG_SMALL"), os.environ.get("ONLY_IN_THE_FIRST")))
        return f"/d/{args.name}"

    monkeypatch.setattr(build_child, "build", fake_build)
    saved = dict(os.environ)
    requests = [{"argv": ["first", "--imports", "m", "--data_dir", "/d"], "env": {"RLDS_LANG_SMALL": "3",
                                                                                 "ONLY_IN_THE_FIRST": "1"},
                 "quiet": False},
                {"argv": ["broken", "--imports", "m", "--data_dir", "/d"], "env": {}, "quiet": False},
                {"argv": ["no-imports", "--data_dir", "/d"], "env": {}, "quiet": False},
                {"argv": ["quiet", "--imports", "m", "--data_dir", "/d"], "env": {}, "quiet": True}]
    replies = io.StringIO()
    try:
        build_child.serve(io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), replies)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    answers = [json.loads(line) for line in replies.getvalue().splitlines()]
    assert answers[0] == {"ok": True, "folder": "/d/first"} and answers[3] == {"ok": True, "folder": "/d/quiet"}
    assert answers[1] == {"ok": False, "error": "ValueError: no such recipe"}
    assert not answers[2]["ok"] and answers[2]["error"].startswith("SystemExit")  # argparse's refusal, served on
    assert seen == [("first", "3", "1"), ("quiet", None, None)]  # each build sees its own environment, whole
    out, err = capfd.readouterr()
    assert "building first" in out and "building quiet" not in out  # a quiet build's standard output is dropped
    assert "ValueError: no such recipe" in err and "Traceback" in err  # the failure is shown where builds print


def test_a_program_s_builds_share_one_child_until_its_environment_or_folder_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("SET_BEFORE_THE_FIRST_BUILD", "1")
    error = _refused()
    assert error.cmd[:3] == [sys.executable, "-m", "trainers.core.build_child"] and error.cmd[3:] == REFUSED
    first = _pid()
    _refused()  # a failed build leaves the child serving
    assert _pid() == first
    _refused(dict(os.environ, RLDS_LANG_SMALL="7", RLDS_LANG_SHARD_CACHE=str(tmp_path)))  # read per build
    assert _pid() == first
    _refused(dict(os.environ, ADDED_BY_A_LIBRARY_S_IMPORT="1"))  # as TensorFlow's import adds TF2_BEHAVIOR
    assert _pid() == first
    old = current_build_worker()
    _refused(dict(os.environ, SET_BEFORE_THE_FIRST_BUILD="2"))  # perhaps read at import: a fresh child
    second = _pid()
    assert second != first and old.process.poll() is not None  # the old one ended, not left behind
    monkeypatch.delenv("SET_BEFORE_THE_FIRST_BUILD")
    _refused()
    third = _pid()
    assert third != second  # a variable gone
    monkeypatch.chdir(tmp_path)
    _refused()
    assert _pid() not in (first, second, third)  # relative folders are the caller's
    close_build_worker()
    assert current_build_worker() is None


def test_a_child_killed_between_builds_is_replaced_and_one_killed_during_a_build_fails_it(tmp_path):
    _refused()
    first = current_build_worker()
    first.process.kill()
    first.process.wait()
    _refused()  # found dead before the request: a fresh child serves it
    second = _pid()
    assert second != first.process.pid
    killer = subprocess.Popen([sys.executable, "-c", f"import os, signal, time; time.sleep(1.5); "
                               f"os.kill({second}, signal.SIGKILL)"])
    try:
        with pytest.raises(subprocess.CalledProcessError) as caught:  # a real build: slow enough to be killed in
            run_build(["wordle_synthetic", "--imports", "rlds_lang_datasets", "--config", "expert", "--data_dir",
                       str(tmp_path)], dict(os.environ, RLDS_LANG_SMALL="2"), quiet=True)
    finally:
        killer.wait()
    assert caught.value.returncode == -signal.SIGKILL  # the child's own exit status
    assert current_build_worker() is None
    _refused()
    assert _pid() != second


def test_a_build_abandoned_by_its_caller_ends_its_child(tmp_path, monkeypatch):
    monkeypatch.setattr(build_worker, "CLOSE_SECONDS", 120.0)  # time enough to finish the build, if it were let

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_build(["wordle_synthetic", "--imports", "rlds_lang_datasets", "--config", "expert", "--data_dir",
                       str(tmp_path)], dict(os.environ, RLDS_LANG_SMALL="2"), quiet=True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert current_build_worker() is None
    assert not list(tmp_path.rglob("dataset_info.json"))  # killed at once, not left building for nobody


def test_the_child_ends_with_its_program_even_in_the_middle_of_a_build(tmp_path):
    script = textwrap.dedent(f"""
        import os, subprocess, sys, time
        from trainers.core.build_worker import current_build_worker, run_build
        try:
            run_build({REFUSED!r}, dict(os.environ), quiet=True)
        except subprocess.CalledProcessError:
            pass
        print(current_build_worker().process.pid, flush=True)
        run_build(["wordle_synthetic", "--imports", "rlds_lang_datasets", "--config", "expert", "--data_dir",
                   {str(tmp_path)!r}], dict(os.environ, RLDS_LANG_SMALL="20"), quiet=True)
    """)
    program = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                               cwd=os.getcwd(), stderr=subprocess.DEVNULL)
    try:
        child = int(program.stdout.readline())
        assert running(child)  # serving
        time.sleep(0.5)  # the build has started: the child reads no request now, so only its parent's death ends it
        program.kill()
        program.wait()
        deadline = time.monotonic() + 3
        while running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        if running(child):
            os.kill(child, signal.SIGKILL)
            pytest.fail("the build child outlived its killed program")
    finally:
        program.kill()
        program.stdout.close()
