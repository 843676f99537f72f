"""The creator_web FastAPI application: pages, the JSON API, validation, access and error mapping.

Pages (``/``, ``/play``, ``/judge``, ``/review``, ``/progress``) and their assets (``/static/<file>``) come from this
package's ``static`` folder, looked up by name in a fixed list; data is only ever reached through the API
by dataset name and episode id (``creator_web.storage``), never by a path. Every body is a pydantic model
(``creator_web.bodies``: unknown fields, NaN and invalid Unicode rejected, every field bounded). Reading data
and acting in a session need the session's secret token in the ``X-Session-Token`` header
(``creator_web.access``); ``creator_web.guard`` refuses unknown hosts, cross-origin writes and oversized
bodies before any of this runs. The Review page's routes (episodes with who has notes on them, notes added,
edited and deleted as versions, progress) are ``creator_web.review_routes``. Errors:
400 unknown host; 401 no or unknown token; 403 a token or person that does not own the session, a cross-origin
write, another annotator's note; 404 unknown session, dataset, episode, note or pair; 409 a request that does not
fit the game state, the stored limits (unfinished games included) or a note's revision, a client key sent with
another change, a damaged dataset; 413 a body too large; 429 a sign-in locked out after too many wrong secrets, or
too many open sessions (``creator_web.limits``: the message names the limit, ``Retry-After`` says when to retry);
422 invalid input, with the field and reason in ``detail`` (an invalid guess is answered 422 and never logged); 502 a
service a task relies on failed (the VisDial answerer; nothing recorded).
"""

from __future__ import annotations

import contextlib
import importlib.resources
import mimetypes
import os
from typing import Any, Callable, Iterable, Mapping

from fastapi import Depends, FastAPI, HTTPException, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError

from creator_web import judge as judging
from creator_web import reddit_task, review, visdial_task  # noqa: F401 - reddit_task, visdial_task register tasks
from creator_web.access import TOKEN_HEADER, AccessError, SignIn, load_annotators
from creator_web.bodies import ExportBody, Guess, JudgeBody, OpenSession, PairRequest, validation_detail
from creator_web.guard import LOCAL_HOSTS, MAX_BODY, Guard, shown
from creator_web.limits import LimitReached, Limits, SignInThrottle
from creator_web.review_routes import add_review_routes
from creator_web.sessions import GameStateError, Session, SessionError, SessionStore
from creator_web.storage import DamagedDataset, DataDir, UnsafePath
from creator_web.tasks import TASKS, ServiceError, TaskSources, offered
from rlds_lang.env import InvalidActionError
from rlds_lang.preferences.labellers import HumanQueueLabeller
from rlds_lang.preferences.types import Label

#: the pages and their assets, read through ``importlib.resources`` (package data of the installed package).
STATIC = importlib.resources.files("creator_web") / "static"
#: route -> (page body file, title); every page is ``layout.html`` around its body.
PAGES = {"/": ("index.html", "Start"), "/play": ("play.html", "Play"), "/judge": ("judge.html", "Judge"),
         "/review": ("review.html", "Review"), "/progress": ("progress.html", "Progress")}
_ID = r"^[0-9a-f]{32}$"
SessionId = Path(..., pattern=_ID, description="the public session id returned by POST /api/sessions")


def render_page(file: str, title: str) -> str:
    """The page ``file`` (a body in ``static/``) inside ``layout.html``, its own tab marked in the nav."""
    def read(name: str) -> str:
        return (STATIC / name).read_text(encoding="utf-8")

    current = ' aria-current="page"'
    nav = "".join(f'<a href="{route}"{current if name == title else ""}>{name}</a>'
                  for route, (_, name) in PAGES.items() if route != "/")
    return read("layout.html").replace("{{title}}", title).replace("{{nav}}", nav).replace("{{body}}", read(file))


def _sign_in(annotators: str | os.PathLike | Mapping[str, str] | None, proxy_header: str | None) -> SignIn:
    if annotators is not None and not isinstance(annotators, Mapping):
        annotators = load_annotators(annotators)
    return SignIn(annotators, proxy_header)


def create_app(data_dir: str | os.PathLike, human: HumanQueueLabeller | None = None, human_task: str = "wordle",
               human_wait: float = 2.0, *, allowed_hosts: Iterable[str] = LOCAL_HOSTS,
               annotators: str | os.PathLike | Mapping[str, str] | None = None, proxy_header: str | None = None,
               judge_pair: tuple[str, str] | None = None, max_body: int = MAX_BODY,
               task_sources: TaskSources | None = None, limits: Limits | None = None,
               hold: Callable[[str], None] | None = None) -> FastAPI:
    """The application serving ``data_dir`` (created if absent).

    With ``human``, the judge page shows the pairs that labeller's pipeline asks about (drawn as ``human_task``
    draws its steps; a request waits up to ``human_wait`` seconds for one, then gets 503 with Retry-After) and
    answers go back on its queue; without it, pairs are drawn from the data folder's datasets: those named in
    the request, else ``judge_pair`` (the judge page's default), else the person must choose.

    ``allowed_hosts``: the host names the server answers to (``Host`` header; see ``creator_web.guard``).
    ``annotators``: a file (``creator_web.access.load_annotators``) or mapping of annotator -> secret; opening a
    session then needs both. ``proxy_header``: the header a trusted reverse proxy names the signed-in person in
    (only when every request comes through that proxy). ``max_body``: the largest request body in bytes.
    ``task_sources``: what the Reddit and VisDial tasks read (``creator_web.tasks.TaskSources``); a task whose
    source is not given is not offered. ``limits``: wrong secrets, sessions and unfinished games allowed
    (``creator_web.limits.Limits``; its defaults when not given).

    ``hold``: for tests only (``None``, the default, everywhere else; no request and no command-line option sets
    it): called with the action's name (``new``, ``act``, ``judge``, ``episode``, ``annotate``, ``edit``,
    ``delete``) in the request's thread before the server acts on it, so a test can hold an answer back for as long
    as it likes and see what the page does while it waits."""
    data = DataDir(data_dir)
    sources = task_sources or TaskSources()
    limits = limits or Limits()
    sessions = SessionStore(data, sources, limits)
    sign_in = _sign_in(annotators, proxy_header)
    throttle = SignInThrottle(limits)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI):
        yield
        sessions.close_all()  # games in progress stay unfinished in their logs

    # The schema stays at /api/openapi.json; no interactive docs page (it loads scripts from a CDN, which the
    # Content-Security-Policy forbids).
    app = FastAPI(title="rlds-lang creator_web", docs_url=None, redoc_url=None, openapi_url="/api/openapi.json",
                  lifespan=lifespan)
    app.state.data, app.state.sessions, app.state.sign_in = data, sessions, sign_in
    app.state.sign_in_throttle = throttle
    app.add_middleware(Guard, allowed_hosts=allowed_hosts, max_body=max_body)

    @app.exception_handler(SessionError)
    async def _unknown_session(request: Request, exc: SessionError) -> JSONResponse:
        status = 401 if str(exc.args[0]).startswith(TOKEN_HEADER) else 404
        return JSONResponse({"detail": exc.args[0]}, status_code=status)

    @app.exception_handler(AccessError)
    async def _refused(request: Request, exc: AccessError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)

    @app.exception_handler(LimitReached)
    async def _limited(request: Request, exc: LimitReached) -> JSONResponse:
        headers = {} if exc.retry_after is None else {"Retry-After": str(max(1, round(exc.retry_after)))}
        return JSONResponse({"detail": str(exc)}, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": validation_detail(exc.errors())}, status_code=422)

    @app.exception_handler(DamagedDataset)
    @app.exception_handler(UnsafePath)
    async def _damaged(request: Request, exc: ValueError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409)

    def reader(request: Request) -> Session:
        """The session whose token the request carries (any request that reads data or acts needs one)."""
        token = request.headers.get(TOKEN_HEADER)
        if not token:
            raise AccessError(401, f"{TOKEN_HEADER}: missing (open a session first; its token goes in this header)")
        session = sessions.by_token(token)
        sign_in.check(session.annotator, request.headers)
        return session

    def owner(request: Request, session_id: str = SessionId) -> Session:
        """The session ``session_id``, if the request carries its token (403 for another session's token)."""
        named = sessions.get(session_id)
        if reader(request) is not named:
            raise AccessError(403, f"{TOKEN_HEADER}: not the token of session {session_id}")
        return named

    def dataset_or_404(name: str) -> str:
        usable, damaged = data.listing()
        if name in damaged:
            raise HTTPException(409, f"dataset {shown(name)} is damaged: {damaged[name]}")
        if name not in usable:
            raise HTTPException(404, f"no dataset {shown(name)} in the data folder")
        return name

    def held(name: str) -> None:
        if hold is not None:
            hold(name)

    def page(html: str):
        return lambda: HTMLResponse(html)  # no parameters: nothing from the request reaches the page

    for route, (file, title) in PAGES.items():
        app.get(route, include_in_schema=False)(page(render_page(file, title)))

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        files = {f.name for f in STATIC.iterdir() if f.is_file() and not f.name.startswith(".")}
        if name not in files:
            raise HTTPException(404, f"no static file {shown(name)}")
        return Response((STATIC / name).read_bytes(),
                        media_type=mimetypes.guess_type(name)[0] or "application/octet-stream")

    @app.get("/api/tasks")
    def tasks() -> dict[str, Any]:
        """The tasks this server offers and their config schema."""
        return {name: task.config_model.model_json_schema() for name, task in offered(sources).items()}

    @app.get("/api/server")
    def server_info() -> dict[str, Any]:
        """How to sign in (``open``, ``annotators`` or ``proxy``), the token header and the judge page's source
        and default datasets (``null``: the person chooses)."""
        return {"sign_in": sign_in.mode, "token_header": TOKEN_HEADER,
                "judge_source": "pipeline" if human is not None else "datasets",
                "judge_default": list(judge_pair) if judge_pair else None}

    @app.post("/api/sessions")
    def open_session(body: OpenSession, request: Request) -> dict[str, Any]:
        """Opens a session; answers its public id and its secret token (given only here). Wrong secrets are
        counted per annotator and per client address: past ``limits`` the sign-in is refused 429 for a while."""
        client = request.client.host if request.client else ""
        if sign_in.mode == "annotators":
            throttle.check(body.annotator or "", client)
        try:
            annotator = sign_in.annotator(body.annotator, body.secret, request.headers)
        except AccessError as e:
            if sign_in.mode == "annotators" and e.status == 403:
                throttle.failed(body.annotator or "", client, known=body.annotator in (sign_in.annotators or {}))
            raise
        if sign_in.mode == "annotators":
            throttle.succeeded(annotator)
        if body.task not in TASKS:
            raise HTTPException(422, f"task: unknown task {shown(body.task)}; known: {sorted(TASKS)}")
        missing = TASKS[body.task].unavailable(sources)
        if missing is not None:
            raise HTTPException(422, f"task: {body.task} is not offered by this server: {missing}")
        try:
            session, token = sessions.open(annotator, body.task, body.config)
        except ValidationError as e:
            raise HTTPException(422, validation_detail({**err, "loc": ("body", "config", *err["loc"])}
                                                       for err in e.errors())) from None
        except ValueError as e:
            raise HTTPException(422, str(e)) from None
        return {"session_id": session.session_id, "token": token, "annotator": session.annotator,
                "task": session.task.name, "config": session.config.model_dump()}

    @app.post("/api/sessions/{session_id}/close")
    def close_session(session: Session = Depends(owner)) -> dict[str, Any]:
        """Signs out: ends the session (its token is refused from now on; a game in progress stays unfinished in
        its log). Answers the session id and the id of that game (``null`` when none)."""
        return {"closed": session.session_id, "unfinished_game": sessions.close(session)}

    @app.get("/api/sessions/{session_id}/play")
    def play_state(session: Session = Depends(owner)) -> dict[str, Any]:
        """The session's current game."""
        with session.lock:
            return session.state()

    @app.get("/api/sessions/{session_id}/play/picture")
    def picture(session: Session = Depends(owner)) -> dict[str, Any]:
        """The picture of the current game (``image``: a data URL, or ``None`` with the reason in ``note``);
        404 for a task that shows none."""
        if session.task.picture is None:
            raise HTTPException(404, f"task {session.task.name} shows no picture")
        with session.lock:
            if session.game is None:
                raise HTTPException(409, "no game yet: start one first")
            return session.task.picture(session.env)

    @app.post("/api/sessions/{session_id}/play/new")
    def new_game(session: Session = Depends(owner)) -> dict[str, Any]:
        """Starts a new game (recorded when it ends)."""
        held("new")
        with session.lock:
            try:
                return session.new_game()
            except GameStateError as e:
                raise HTTPException(409, str(e)) from None
            except ServiceError as e:
                raise HTTPException(502, str(e)) from None

    @app.post("/api/sessions/{session_id}/play/act")
    def act(body: Guess, session: Session = Depends(owner)) -> dict[str, Any]:
        """Plays one action; 422 (nothing logged) if the task rejects it."""
        held("act")
        with session.lock:
            try:
                return session.act(body.action, body.client_ms)
            except InvalidActionError as e:
                raise HTTPException(422, f"action: {e}") from None
            except GameStateError as e:
                raise HTTPException(409, str(e)) from None
            except ServiceError as e:
                raise HTTPException(502, str(e)) from None

    @app.get("/api/judge/source")
    def judge_source() -> dict[str, str]:
        """Where the judge page's pairs come from: ``pipeline`` (a served human queue) or ``datasets``."""
        return {"source": "pipeline" if human is not None else "datasets"}

    @app.get("/api/datasets")
    def datasets(_: Session = Depends(reader)) -> dict[str, Any]:
        """``datasets``: name -> kind (``raw`` logs or a built ``tfds`` folder); ``damaged``: name -> why it
        cannot be read."""
        usable, damaged = data.listing()
        return {"datasets": usable, "damaged": damaged}

    @app.post("/api/sessions/{session_id}/judge/next")
    def next_pair(body: PairRequest, session: Session = Depends(owner)) -> dict[str, Any]:
        """A new pair of clips to judge (from datasets ``left`` and ``right``, default the server's judge pair)."""
        if human is not None and not (body.left or body.right):
            with session.lock:
                pair = judging.queued_pair(human, session, human_task, human_wait, body.view == "text")
            if pair is None:
                raise HTTPException(503, "the preference pipeline has no pair waiting yet; retry shortly",
                                    headers={"Retry-After": str(max(1, round(human_wait)))})
            return pair
        default = judge_pair or (None, None)
        wanted = {"left": body.left or default[0], "right": body.right or default[1]}
        for side, name in wanted.items():
            if name is None:
                raise HTTPException(422, f"{side}: choose a dataset (this server has no default judge pair)")
        left, right = dataset_or_404(wanted["left"]), dataset_or_404(wanted["right"])
        with session.lock:
            pair = judging.next_pair(data, session, left, right, body.view == "text")
        if pair is None:
            raise HTTPException(404, f"no unjudged pair left between {left!r} and {right!r}")
        return pair

    @app.post("/api/sessions/{session_id}/judge")
    def judge(body: JudgeBody, session: Session = Depends(owner)) -> dict[str, Any]:
        """Records the answer about the pair shown."""
        held("judge")
        with session.lock:
            try:
                outcome = judging.judge(data, session, body.pair_id, Label.parse(body.label), body.seconds, human)
            except KeyError as e:
                raise HTTPException(404, e.args[0]) from None
        if "recorded" in outcome:
            outcome["recorded"] = os.path.relpath(outcome["recorded"], data.root)
        return {**outcome, "judged": len(session.judged)}

    add_review_routes(app, data, owner, reader, dataset_or_404, held)

    @app.post("/api/sessions/{session_id}/export")
    def export(body: ExportBody, session: Session = Depends(owner)) -> dict[str, Any]:
        """Exports episodes to ``exports/<name>`` (a manual folder for ``tfds build``)."""
        try:
            out = review.export(data, dataset_or_404(body.dataset), body.episode_ids, body.name)
        except KeyError as e:
            raise HTTPException(404, e.args[0]) from None
        except FileExistsError as e:
            raise HTTPException(409, str(e)) from None
        except UnsafePath:
            raise
        except ValueError as e:
            raise HTTPException(422, str(e)) from None
        return {"export": os.path.relpath(out, data.root), "episodes": len(body.episode_ids)}

    return app


__all__ = ["PAGES", "create_app", "render_page"]
