"""Sessions: one annotator's isolated workspace on the server, and playing a task in it.

A session is opened with an annotator id, a task and the task's config. It has a public id (random
128 bits: shown, part of episode ids and folder names) and a secret token (``creator_web.access``) that
only the opener holds; the store finds a session by its token. Each session has its own environment and
lock, and its games are logged under ``human/<task>/<session_id>/`` (``loggers.live.LiveEpisode``: one
log per game, closed and durable when the game ends), so two people's games never share a log and a
killed server loses at most the games in progress. Sessions are recorded in ``sessions/<id>.json`` (with
the token's hash, never the token) and reopened when the server restarts, so a person's page carries on
after a crash; a game that was in progress then is reported lost (``Session.lost``).

Sessions end: signed out (``SessionStore.close``), or expired after ``Limits.session_idle_s`` without a request or
``Limits.session_max_age_s`` after opening. An ended session's token is refused (401, saying why), its game in
progress stays unfinished in its log, and its record says when and why it ended (it is not reopened). The store
holds at most ``Limits.sessions_per_annotator`` open sessions per annotator and ``Limits.sessions_total`` in all,
and a session may leave at most ``Limits.unfinished_games_per_session`` games unfinished (counted in its record,
so a restart does not reset the count); past a cap the request is refused with ``LimitReached``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import threading
import time
from typing import Any, Callable

from pydantic import BaseModel

from creator_web.access import TOKEN_HEADER, new_token, token_hash
from creator_web.limits import LimitReached, Limits
from creator_web.storage import PARTIAL, DataDir, next_index, write_json_whole
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
    #: the session's record (``sessions/<id>.json``) and where it is kept (empty: not kept).
    record: dict[str, Any] = dataclasses.field(default_factory=dict)
    record_path: str = ""
    #: the most games it may leave unfinished (``Limits.unfinished_games_per_session``; ``unfinished`` counts them).
    max_unfinished: int = Limits.unfinished_games_per_session
    #: when a request last used it (``time.time()``).
    last_used: float = dataclasses.field(default_factory=time.time)
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

    @property
    def unfinished(self) -> int:
        """How many games the session has left unfinished so far."""
        return int(self.record.get("unfinished", 0))

    def save_record(self, **changes: Any) -> None:
        """Updates the session's record with ``changes`` and writes it whole."""
        self.record.update(changes)
        if self.record_path:
            write_json_whole(self.record_path, self.record)

    def abandon(self) -> str | None:
        """Closes the game in progress, counted as unfinished (it stays so in its log); returns its id, or ``None``
        when no game was in progress."""
        game = self.game
        if game is None or game.closed:
            return None
        self.save_record(unfinished=self.unfinished + 1)  # counted first: a kill now never undercounts
        game.close()
        return game.episode_id

    def new_game(self) -> dict[str, Any]:
        """Starts a game (an unfinished previous game is closed and stays unfinished in its log); ``LimitReached``
        (409) when that would leave more games unfinished than ``max_unfinished``."""
        if self.record.get("closed") is not None:
            raise GameStateError(f"session {self.session_id} has ended: open a new session")
        if self.game is not None and not self.game.closed and self.unfinished >= self.max_unfinished:
            raise LimitReached(409, f"play/new: session {self.session_id} has left {self.unfinished} games "
                                    f"unfinished, the limit: finish this game before starting another, or open a "
                                    "new session")
        self.abandon()
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
    """Every open session of a server, by id and by token hash, within ``limits`` (``clock``: ``time.time``)."""

    #: how many ended sessions are remembered, to tell their token's bearer why the session ended.
    REMEMBERED_ENDINGS = 10_000

    def __init__(self, data: DataDir, sources: TaskSources | None = None, limits: Limits | None = None,
                 clock: Callable[[], float] = time.time):
        self.data = data
        self.sources = sources or TaskSources()
        self.limits = limits or Limits()
        self.clock = clock
        self._sessions: dict[str, Session] = {}
        self._by_token: dict[str, Session] = {}
        self._ended: dict[str, str] = {}  # token hash or session id -> why the session ended
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
                          token_sha256, max_unfinished=self.limits.unfinished_games_per_session,
                          last_used=self.clock())
        session.games_started = next_index(folder, "game_")
        return session

    def _add(self, session: Session) -> None:
        with self._lock:
            self._sessions[session.session_id] = session
            self._by_token[session.token_sha256] = session

    def _restore(self) -> None:
        """Reopens the sessions recorded in ``sessions/`` (after a restart people carry on where they were); those
        that ended (signed out, expired) stay closed."""
        folder = self.data.path("sessions")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if name.startswith(PARTIAL):
                continue  # a record being rewritten when a server was killed: the record itself is whole
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    record = json.load(f)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                if record.get("closed") is not None:
                    continue
                session = self._make(record["session_id"], record["annotator"], record["task"], record["config"],
                                     record["token_sha256"])
            except (OSError, ValueError, KeyError) as e:
                logging.warning("session record %s not restored: %s (missing or invalid)", name, e)
                continue
            session.record, session.record_path = record, os.path.join(folder, name)
            session.lost = self._lost_game(session)
            if session.lost is not None and record.get("lost_counted") != session.lost:
                session.save_record(unfinished=session.unfinished + 1, lost_counted=session.lost)
            expired = self._expiry(session)
            if expired is not None:
                self._end(session, expired)
                continue
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

    def _expiry(self, session: Session) -> str | None:
        """Why ``session`` has expired by now, or ``None`` while it is open."""
        now, limits = self.clock(), self.limits
        if now - float(session.record.get("opened", now)) > limits.session_max_age_s:
            return f"expired {limits.session_max_age_s:g} s after it was opened"
        if now - session.last_used > limits.session_idle_s:
            return f"expired after {limits.session_idle_s:g} s without a request"
        return None

    def _end(self, session: Session, why: str) -> str | None:
        """Ends ``session`` (its game in progress stays unfinished; its record says when and why); returns the id
        of that game, if any."""
        with session.lock:
            lost = session.abandon()
            session.save_record(closed=self.clock(), closed_because=why)
        with self._lock:
            self._sessions.pop(session.session_id, None)
            self._by_token.pop(session.token_sha256, None)
            for key in (session.token_sha256, session.session_id):
                self._ended[key] = why
            while len(self._ended) > self.REMEMBERED_ENDINGS:
                del self._ended[next(iter(self._ended))]
        return lost

    def _checked(self, session: Session | None, key: str) -> Session | None:
        """``session`` if it is still open; an expired one is ended here. ``SessionError`` saying why when the
        session of ``key`` (token hash or id) has ended."""
        if session is not None:
            why = self._expiry(session)
            if why is None:
                return session
            self._end(session, why)
        with self._lock:
            why = self._ended.get(key)
        if why is not None:
            raise SessionError(f"{TOKEN_HEADER}: this session {why}: open a new session")
        return None

    def sweep(self) -> int:
        """Ends every expired session; returns how many."""
        with self._lock:
            sessions = list(self._sessions.values())
        expired = [(s, self._expiry(s)) for s in sessions]
        for session, why in expired:
            if why is not None:
                self._end(session, why)
        return sum(why is not None for _, why in expired)

    def open(self, annotator: str, task_name: str, config: dict[str, Any] | None) -> tuple[Session, str]:
        """Opens a session and returns it with its secret token (config validated;
        ``KeyError``/``ValidationError``/``ValueError`` on bad input, ``LimitReached`` (429) past a session cap)."""
        self.sweep()
        with self._lock:
            total = len(self._sessions)
            mine = sum(s.annotator == annotator for s in self._sessions.values())
        if mine >= self.limits.sessions_per_annotator:
            raise LimitReached(429, f"sessions: annotator {annotator!r} has {mine} open sessions, the limit: sign out "
                                    f"of one, or wait until one expires ({self.limits.session_idle_s:g} s without a "
                                    "request)")
        if total >= self.limits.sessions_total:
            raise LimitReached(429, f"sessions: the server has {total} open sessions, its limit: retry when one "
                                    "ends", retry_after=60)
        token = new_token()
        session = self._make(secrets.token_hex(16), annotator, task_name, config, token_hash(token))
        os.makedirs(self.data.path("sessions"), exist_ok=True)
        path = self.data.path("sessions", f"{session.session_id}.json")
        if os.path.lexists(path):
            raise FileExistsError(f"{path}: a session record with this id exists")
        session.record_path = path
        session.save_record(session_id=session.session_id, annotator=annotator, task=session.task.name,
                            config=session.config.model_dump(), opened=self.clock(),
                            token_sha256=session.token_sha256, unfinished=0)
        self._add(session)
        return session, token

    def close(self, session: Session, why: str = "was signed out") -> str | None:
        """Signs ``session`` out (see ``_end``); returns the id of the game it left unfinished, if any."""
        return self._end(session, why)

    def get(self, session_id: str) -> Session:
        """The open session ``session_id`` (``SessionError`` if none, or if it ended: the message says why)."""
        with self._lock:
            session = self._sessions.get(session_id)
        session = self._checked(session, session_id)
        if session is None:
            raise SessionError(f"unknown session {session_id!r}: open a session first")
        return session

    def by_token(self, token: str) -> Session:
        """The open session whose secret token is ``token`` (``SessionError`` if none, or if it ended); a request
        with it counts as use (``Limits.session_idle_s``)."""
        key = token_hash(token)
        with self._lock:
            session = self._by_token.get(key)
        session = self._checked(session, key)
        if session is None:
            raise SessionError(f"{TOKEN_HEADER}: no open session has this token: open a session first")
        session.last_used = self.clock()
        return session

    def in_progress(self, folder: str) -> bool:
        """Whether ``folder`` (a log directory) is inside the log of a game being played now."""
        with self._lock:
            games = [s.game for s in self._sessions.values() if s.game is not None and not s.game.closed]
        folder = os.path.realpath(folder)
        return any(folder.startswith(os.path.realpath(os.fspath(g.log_dir)) + os.sep)
                   or folder == os.path.realpath(os.fspath(g.log_dir)) for g in games)

    def close_all(self) -> None:
        """Closes every game in progress (they stay unfinished in their logs; the sessions stay open)."""
        with self._lock:
            for session in self._sessions.values():
                if session.game is not None:
                    session.game.close()


__all__ = ["GameStateError", "STEP_KEYS", "Session", "SessionError", "SessionStore"]
