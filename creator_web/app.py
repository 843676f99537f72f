"""The creator_web FastAPI application: pages, the JSON API, validation and error mapping.

Pages (``/``, ``/play``, ``/judge``, ``/review``) and their assets (``/static/<file>``) come from this
package's ``static`` folder, looked up by name in a fixed list; data is only ever reached through the API
by dataset name and episode id (``creator_web.storage``), never by a path. Every body is a pydantic model
(unknown fields rejected); every write names an open session. Errors: 404 unknown session, dataset,
episode or pair; 409 a request that does not fit the game state; 422 invalid input, with the field and
reason in ``detail`` (an invalid guess is answered 422 and is never logged).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Path, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from creator_web import judge as judging
from creator_web import review
from creator_web.sessions import GameStateError, Session, SessionError, SessionStore
from creator_web.storage import DataDir
from creator_web.tasks import TASKS
from rlds_lang.env import InvalidActionError
from rlds_lang.preferences.labellers import HumanQueueLabeller
from rlds_lang.preferences.types import Label

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
#: route -> (page body file, title); every page is ``layout.html`` around its body.
PAGES = {"/": ("index.html", "Start"), "/play": ("play.html", "Play"), "/judge": ("judge.html", "Judge"),
         "/review": ("review.html", "Review")}
_ID = r"^[0-9a-f]{32}$"
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
SessionId = Path(..., pattern=_ID, description="the session token returned by POST /api/sessions")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OpenSession(_Body):
    """Body of POST /api/sessions."""

    annotator: str = Field(..., pattern=_NAME, description="who is annotating (letters, digits, _ . -)")
    task: str = Field("wordle", max_length=64)
    config: dict[str, Any] = Field(default_factory=dict, description="the task's session config")


class Guess(_Body):
    """Body of POST /api/sessions/{id}/play/act."""

    action: str = Field(..., min_length=1, max_length=200)
    client_ms: int = Field(0, ge=0, le=86_400_000, description="ms from showing the board to submitting")


class PairRequest(_Body):
    """Body of POST /api/sessions/{id}/judge/next."""

    left: str | None = Field(None, max_length=300)
    right: str | None = Field(None, max_length=300)


class JudgeBody(_Body):
    """Body of POST /api/sessions/{id}/judge."""

    pair_id: str = Field(..., pattern=r"^[0-9a-f]{16}$")
    label: Literal["left", "right", "equal", "skip"]
    seconds: float = Field(0.0, ge=0.0, le=86_400.0)


class Annotation(_Body):
    """Body of POST /api/sessions/{id}/annotate."""

    dataset: str = Field(..., max_length=300)
    episode_id: str = Field(..., min_length=1, max_length=300)
    step: int | None = Field(None, ge=0, description="the step annotated; none for the whole episode")
    text: str = Field("", max_length=5000)
    tags: list[str] = Field(default_factory=list, max_length=20)


class ExportBody(_Body):
    """Body of POST /api/sessions/{id}/export."""

    dataset: str = Field(..., max_length=300)
    episode_ids: list[str] = Field(..., min_length=1, max_length=10_000)
    name: str = Field(..., pattern=_NAME)


def render_page(file: str, title: str) -> str:
    """The page ``file`` (a body in ``static/``) inside ``layout.html``, its own tab marked in the nav."""
    def read(name: str) -> str:
        with open(os.path.join(STATIC, name), encoding="utf-8") as f:
            return f.read()

    current = ' aria-current="page"'
    nav = "".join(f'<a href="{route}"{current if name == title else ""}>{name}</a>'
                  for route, (_, name) in PAGES.items() if route != "/")
    return read("layout.html").replace("{{title}}", title).replace("{{nav}}", nav).replace("{{body}}", read(file))


def create_app(data_dir: str | os.PathLike, human: HumanQueueLabeller | None = None, human_task: str = "wordle",
               human_wait: float = 2.0) -> FastAPI:
    """The application serving ``data_dir`` (created if absent).

    With ``human``, the judge page shows the pairs that labeller's pipeline asks about (drawn as ``human_task``
    draws its steps; a request waits up to ``human_wait`` seconds for one, then gets 503 with Retry-After) and
    answers go back on its queue; without it, pairs are drawn from the data folder's datasets."""
    data = DataDir(data_dir)
    sessions = SessionStore(data)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI):
        yield
        sessions.close_all()  # games in progress stay unfinished in their logs

    app = FastAPI(title="rlds-lang creator_web", docs_url="/api/docs", redoc_url=None, lifespan=lifespan)
    app.state.data, app.state.sessions = data, sessions

    @app.exception_handler(SessionError)
    async def _unknown_session(request: Request, exc: SessionError) -> JSONResponse:
        return JSONResponse({"detail": exc.args[0]}, status_code=404)

    def session_of(session_id: str) -> Session:
        return sessions.get(session_id)

    def dataset_or_404(name: str) -> str:
        if name not in data.datasets():
            raise HTTPException(404, f"no dataset {name!r} in the data folder")
        return name

    def page(html: str):
        return lambda: HTMLResponse(html)  # no parameters: nothing from the request reaches the page

    for route, (file, title) in PAGES.items():
        app.get(route, include_in_schema=False)(page(render_page(file, title)))

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> FileResponse:
        files = {f for f in os.listdir(STATIC) if not f.startswith(".")}
        if name not in files:
            raise HTTPException(404, f"no static file {name!r}")
        return FileResponse(os.path.join(STATIC, name))

    @app.get("/api/tasks")
    def tasks() -> dict[str, Any]:
        """The registered tasks and their config schema."""
        return {name: task.config_model.model_json_schema() for name, task in TASKS.items()}

    @app.post("/api/sessions")
    def open_session(body: OpenSession) -> dict[str, Any]:
        """Opens a session; its id is the token every write names."""
        if body.task not in TASKS:
            raise HTTPException(422, f"task: unknown task {body.task!r}; known: {sorted(TASKS)}")
        try:
            session = sessions.open(body.annotator, body.task, body.config)
        except ValidationError as e:
            raise HTTPException(422, [{"loc": ["body", "config", *err["loc"]], "msg": err["msg"]}
                                      for err in e.errors()]) from None
        except ValueError as e:
            raise HTTPException(422, str(e)) from None
        return {"session_id": session.session_id, "annotator": session.annotator, "task": session.task.name,
                "config": session.config.model_dump()}

    @app.get("/api/sessions/{session_id}/play")
    def play_state(session_id: str = SessionId) -> dict[str, Any]:
        """The session's current game."""
        session = session_of(session_id)
        with session.lock:
            return session.state()

    @app.post("/api/sessions/{session_id}/play/new")
    def new_game(session_id: str = SessionId) -> dict[str, Any]:
        """Starts a new game (recorded when it ends)."""
        session = session_of(session_id)
        with session.lock:
            return session.new_game()

    @app.post("/api/sessions/{session_id}/play/act")
    def act(body: Guess, session_id: str = SessionId) -> dict[str, Any]:
        """Plays one action; 422 (nothing logged) if the task rejects it."""
        session = session_of(session_id)
        with session.lock:
            try:
                return session.act(body.action, body.client_ms)
            except InvalidActionError as e:
                raise HTTPException(422, f"action: {e}") from None
            except GameStateError as e:
                raise HTTPException(409, str(e)) from None

    @app.get("/api/judge/source")
    def judge_source() -> dict[str, str]:
        """Where the judge page's pairs come from: ``pipeline`` (a served human queue) or ``datasets``."""
        return {"source": "pipeline" if human is not None else "datasets"}

    @app.get("/api/datasets")
    def datasets() -> dict[str, str]:
        """Dataset name -> kind (``raw`` logs or a built ``tfds`` folder)."""
        return data.datasets()

    @app.get("/api/datasets/{name:path}/episodes")
    def episodes(name: str, offset: int = Query(0, ge=0), limit: int = Query(100, ge=1, le=1000)) -> dict[str, Any]:
        """Summaries of a dataset's episodes."""
        eps = data.episodes(dataset_or_404(name))
        page = range(offset, min(offset + limit, len(eps)))
        return {"total": len(eps), "episodes": [review.summary(i, eps[i]) for i in page]}

    @app.get("/api/datasets/{name:path}/episode")
    def episode(name: str, episode_id: str = Query(..., min_length=1, max_length=300)) -> dict[str, Any]:
        """One episode (its latest annotated version) for the replay view."""
        try:
            return review.detail(data, dataset_or_404(name), episode_id)
        except KeyError as e:
            raise HTTPException(404, e.args[0]) from None

    @app.post("/api/sessions/{session_id}/judge/next")
    def next_pair(body: PairRequest, session_id: str = SessionId) -> dict[str, Any]:
        """A new pair of clips to judge (from datasets ``left`` and ``right``, default the first two listed)."""
        session = session_of(session_id)
        if human is not None and not (body.left or body.right):
            with session.lock:
                pair = judging.queued_pair(human, session, human_task, human_wait)
            if pair is None:
                raise HTTPException(503, "the preference pipeline has no pair waiting yet; retry shortly",
                                    headers={"Retry-After": str(max(1, round(human_wait)))})
            return pair
        listed = [n for n in data.datasets()]
        left = dataset_or_404(body.left) if body.left else (listed[0] if listed else None)
        right = dataset_or_404(body.right) if body.right else (listed[1] if len(listed) > 1 else left)
        if left is None or right is None:
            raise HTTPException(404, "no dataset to judge: record games or put logs in the data folder")
        with session.lock:
            pair = judging.next_pair(data, session, left, right)
        if pair is None:
            raise HTTPException(404, f"no unjudged pair left between {left!r} and {right!r}")
        return pair

    @app.post("/api/sessions/{session_id}/judge")
    def judge(body: JudgeBody, session_id: str = SessionId) -> dict[str, Any]:
        """Records the answer about the pair shown."""
        session = session_of(session_id)
        with session.lock:
            try:
                outcome = judging.judge(data, session, body.pair_id, Label.parse(body.label), body.seconds, human)
            except KeyError as e:
                raise HTTPException(404, e.args[0]) from None
        if "recorded" in outcome:
            outcome["recorded"] = os.path.relpath(outcome["recorded"], data.root)
        return {**outcome, "judged": len(session.judged)}

    @app.post("/api/sessions/{session_id}/annotate")
    def annotate(body: Annotation, session_id: str = SessionId) -> dict[str, Any]:
        """Stores an annotation as a new version of the episode."""
        session = session_of(session_id)
        note = {"step": body.step, "text": body.text, "tags": body.tags, "annotator": session.annotator,
                "session_id": session.session_id}
        if not body.text and not body.tags:
            raise HTTPException(422, "annotation: give a text or at least one tag")
        try:
            out = review.annotate(data, dataset_or_404(body.dataset), body.episode_id, note)
        except KeyError as e:
            raise HTTPException(404, e.args[0]) from None
        except IndexError as e:
            raise HTTPException(422, f"step: {e}") from None
        return {"version": os.path.relpath(out, data.root)}

    @app.post("/api/sessions/{session_id}/export")
    def export(body: ExportBody, session_id: str = SessionId) -> dict[str, Any]:
        """Exports episodes to ``exports/<name>`` (a manual folder for ``tfds build``)."""
        session_of(session_id)
        try:
            out = review.export(data, dataset_or_404(body.dataset), body.episode_ids, body.name)
        except KeyError as e:
            raise HTTPException(404, e.args[0]) from None
        except FileExistsError as e:
            raise HTTPException(409, str(e)) from None
        return {"export": os.path.relpath(out, data.root), "episodes": len(body.episode_ids)}

    return app


__all__ = ["create_app"]
