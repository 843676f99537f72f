"""Sessions: one annotator's isolated workspace on the server, and playing a task in it.

A session is opened with an annotator id, a task and the task's config. It has a public id (random
128 bits: shown, part of episode ids and folder names) and a secret token (``creator_web.access``) that
only the opener holds; the store finds a session by its token. Each session has its own environment and
lock, and its games are logged under ``human/<task>/<session_id>/`` (``loggers.live.LiveEpisode``: one
log per game, closed and durable when the game ends), so two people's games never share a log and a
killed server loses at most the games in progress. Sessions are recorded in ``sessions/<id>.json`` (with
the token's hash, never the token) and reopened when the server restarts, so a person's page carries on
after a crash; a game that was in progress then is reported lost (``Session.lost``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import threading
import time
from typing import Any

from pydantic import BaseModel

from creator_web.access import TOKEN_HEADER, new_token, token_hash
from creator_web.storage import DataDir, next_index
from creator_web.tasks import TaskSources, WebTask, get_task, parse_config
from loggers.live import LiveEpisode
from loggers.reader import read_log_dir
from rlds_lang.env import LanguageEnv, as_text

#: extra step metadata of every played step: client time (ms) from showing the previous observation to
#: submitting the action that led to this one (0 on the first step).
STEP_KEYS = {"client_ms": 0}


class SessionError(KeyError):
    """No session with this id or token (the server answers 404, or 401 for a token)."""


class GameStateError(RuntimeError):
    """The request does not fit the session's game state, e.g. a guess with no game (the server answers 409)."""


@dataclasses.dataclass
class Session:
    """One annotator's session (see the module docstring)."""

    session_id: str
    annotator: str
    task: WebTask
    config: BaseModel
    env: LanguageEnv
    folder: str
    token_sha256: str = ""
    lost: str | None = None
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    game: LiveEpisode | None = None
    games_started: int = 0
    judged: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    pending: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def policy(self) -> str:
        """The ``policy`` recorded for this person: ``human:<annotator>``."""
        return f"human:{self.annotator}"

    def config_json(self) -> str:
        """The task config as canonical JSON (recorded as ``task_config``)."""
        return json.dumps(self.config.model_dump(), sort_keys=True)

    def new_game(self) -> dict[str, Any]:
        """Starts a game (an unfinished previous game is closed and stays unfinished in its log)."""
        if self.game is not None:
            self.game.close()
        self.lost = None
        index = self.games_started
        seed = (self.config.seed + index) if getattr(self.config, "seed", None) is not None \
            else secrets.randbelow(2**62)
        self.task.prepare(self.env, self.config)
        self.game = LiveEpisode(
            self.env, os.path.join(self.folder, f"game_{index:05d}"),
            episode_id=f"human-{self.session_id}-{index:05d}", policy=self.policy,
            policy_params=json.dumps({"annotator": self.annotator}, sort_keys=True), seed=seed,
            extra_metadata={"annotator": self.annotator, "session_id": self.session_id,
                            "task_config": self.config_json()},
            dataset_metadata={"task": self.task.name, "source": "creator_web"}, step_keys=STEP_KEYS)
        self.games_started += 1
        try:
            self.game.reset()
        except Exception:  # e.g. a service the task needs failed: no game is left half-started
            self.game.close()
            self.game = None
            raise
        return self.state()

    def act(self, action: str, client_ms: int) -> dict[str, Any]:
        """Checks ``action`` (an invalid one raises ``InvalidActionError`` and is not logged), then steps."""
        game = self.game
        if game is None or game.closed:
            if self.lost:
                raise GameStateError(f"game {self.lost} was lost when the server restarted (it stays unfinished "
                                     "in its log): start a new game")
            raise GameStateError("no game in progress: start a new game first")
        action = as_text(action, "action")
        self.task.check_action(self.env, action)
        game.step(action, {"client_ms": int(client_ms)})
        return self.state()

    def state(self) -> dict[str, Any]:
        """The game as the page draws it."""
        game = self.game
        if game is None:
            return {"episode_id": None, "done": False, "rows": [], "games_started": self.games_started,
                    "lost": self.lost}
        view = self.task.view(self.env)
        done = game.closed
        out = {"episode_id": game.episode_id, "done": done, **view, "games_started": self.games_started}
        if done:
            out["answer"] = getattr(self.env, "answer", None)
        return out


class SessionStore:
    """Every open session of a server, by id."""

    def __init__(self, data: DataDir, sources: TaskSources | None = None):
        self.data = data
        self.sources = sources or TaskSources()
        self._sessions: dict[str, Session] = {}
        self._by_token: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._restore()
        data.in_progress = self.in_progress

    def _make(self, session_id: str, annotator: str, task_name: str, config: dict[str, Any] | None,
              token_sha256: str) -> Session:
        task = get_task(task_name)
        missing = task.unavailable(self.sources)
        if missing is not None:
            raise ValueError(f"task: {task.name} is not offered by this server: {missing}")
        parsed = parse_config(task, config)
        folder = self.data.path("human", task.name, session_id)
        session = Session(session_id, annotator, task, parsed, task.make_env(parsed, self.sources), folder,
                          token_sha256)
        session.games_started = next_index(folder, "game_")
        return session

    def _add(self, session: Session) -> None:
        with self._lock:
            self._sessions[session.session_id] = session
            self._by_token[session.token_sha256] = session

    def _restore(self) -> None:
        """Reopens the sessions recorded in ``sessions/`` (after a restart people carry on where they were)."""
        folder = self.data.path("sessions")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    record = json.load(f)
                session = self._make(record["session_id"], record["annotator"], record["task"], record["config"],
                                     record["token_sha256"])
            except (OSError, ValueError, KeyError) as e:
                logging.warning("session record %s not restored: %s (missing or invalid)", name, e)
                continue
            session.lost = self._lost_game(session)
            self._add(session)

    @staticmethod
    def _lost_game(session: Session) -> str | None:
        """The id of the session's last game if it did not finish (it was in progress when the server stopped)."""
        last = session.games_started - 1
        if last < 0:
            return None
        folder = os.path.join(session.folder, f"game_{last:05d}")
        try:
            finished = bool(list(read_log_dir(folder)))
        except (OSError, RuntimeError, ValueError) as e:  # the riegeli reader raises RuntimeError on a torn log
            logging.warning("%s: the last game's log cannot be read (%s); reported lost", folder, e)
            finished = False
        return None if finished else f"human-{session.session_id}-{last:05d}"

    def open(self, annotator: str, task_name: str, config: dict[str, Any] | None) -> tuple[Session, str]:
        """Opens a session and returns it with its secret token (config validated;
        ``KeyError``/``ValidationError``/``ValueError`` on bad input)."""
        token = new_token()
        session = self._make(secrets.token_hex(16), annotator, task_name, config, token_hash(token))
        record = {"session_id": session.session_id, "annotator": annotator, "task": session.task.name,
                  "config": session.config.model_dump(), "opened": time.time(), "token_sha256": session.token_sha256}
        os.makedirs(self.data.path("sessions"), exist_ok=True)
        with open(self.data.path("sessions", f"{session.session_id}.json"), "x", encoding="utf-8") as f:
            json.dump(record, f, sort_keys=True)
        self._add(session)
        return session, token

    def get(self, session_id: str) -> Session:
        """The open session ``session_id`` (``SessionError`` if none)."""
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise SessionError(f"unknown session {session_id!r}: open a session first")
        return session

    def by_token(self, token: str) -> Session:
        """The session whose secret token is ``token`` (``SessionError`` if none)."""
        with self._lock:
            session = self._by_token.get(token_hash(token))
        if session is None:
            raise SessionError(f"{TOKEN_HEADER}: no open session has this token: open a session first")
        return session

    def in_progress(self, folder: str) -> bool:
        """Whether ``folder`` (a log directory) is inside the log of a game being played now."""
        with self._lock:
            games = [s.game for s in self._sessions.values() if s.game is not None and not s.game.closed]
        folder = os.path.realpath(folder)
        return any(folder.startswith(os.path.realpath(os.fspath(g.log_dir)) + os.sep)
                   or folder == os.path.realpath(os.fspath(g.log_dir)) for g in games)

    def close_all(self) -> None:
        """Closes every game in progress (they stay unfinished in their logs)."""
        with self._lock:
            for session in self._sessions.values():
                if session.game is not None:
                    session.game.close()


__all__ = ["GameStateError", "STEP_KEYS", "Session", "SessionError", "SessionStore"]
