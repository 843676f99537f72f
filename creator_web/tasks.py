"""The task registry of creator_web: how a person's session makes an environment and how the page draws it.

A ``WebTask`` names a task, validates its session config (a pydantic model), makes a configured
``LanguageEnv`` for each game, checks an action before it reaches the logger, and turns steps into
the JSON the page draws (for Wordle: board rows of letters and colours; for text tasks: a transcript).
Wordle is registered here; the text tasks register themselves in ``creator_web.reddit_task`` and
``creator_web.visdial_task``. What a task reads besides its config (a Reddit comments folder, a VisDial
folder and answerer) is given by whoever starts the server, as ``TaskSources``; a task whose source was
not given is not offered (``WebTask.unavailable``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from rlds_lang.env import LanguageEnv
from rlds_lang.wordle import game
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.words import WordList, resolve_word_list

#: colour of each feedback square, as the page draws it.
SQUARE_COLOURS = {square: colour for colour, square in game.SQUARES.items()}


class WordleConfig(BaseModel):
    """A Wordle session's configuration (recorded as ``task_config`` with every game)."""

    model_config = ConfigDict(extra="forbid")

    rule: Literal["official", "ilql"] = "official"
    mode: Literal["fixed", "adversarial_resample"] = "fixed"
    answer: str | None = Field(None, pattern=r"^[a-z]{5}$", description="fix every game's answer (tests)")
    seed: int | None = Field(None, ge=0, lt=2**62, description="game k is seeded with seed + k (else random)")


@functools.lru_cache(maxsize=4)
def _word_list(name: str) -> WordList:
    return resolve_word_list(name)


def _wordle_env(config: WordleConfig, sources: TaskSources) -> WordleEnv:
    env = WordleEnv(answers=_word_list("official_answers"), guesses=_word_list("official_guesses"),
                    rule=config.rule, mode=config.mode)
    if config.answer is not None and config.answer not in env.answers:
        raise ValueError(f"config.answer: {config.answer!r} is not in the answer list {env.answers.name!r}")
    return env


def _wordle_prepare(env: WordleEnv, config: WordleConfig) -> None:
    if config.answer is not None:
        env.set_next_answer(config.answer)


def _wordle_check(env: WordleEnv, action: str) -> None:
    env.validate_guess(action)


def board_rows(actions: Sequence[str], texts: Sequence[str]) -> list[dict[str, Any]]:
    """Wordle board rows: action ``i`` with the colours of observation ``i + 1``'s squares (if shown)."""
    rows = []
    for i, action in enumerate(actions):
        if not action:
            continue
        squares = texts[i + 1] if i + 1 < len(texts) else ""
        colours = [SQUARE_COLOURS.get(ch) for ch in squares] if squares else []
        rows.append({"guess": action, "colours": colours if len(colours) == len(action) else []})
    return rows


def _wordle_view(env: WordleEnv) -> dict[str, Any]:
    won = bool(env.history) and all(c == game.GREEN for c in env.history[-1][1])
    return {"rows": [{"guess": g, "colours": list(p)} for g, p in env.history], "max_guesses": env.max_guesses,
            "won": won}


@dataclasses.dataclass(frozen=True)
class TaskSources:
    """What the server's operator gives the tasks to read (never a path taken from a request).

    Attributes:
      reddit_dir: a Reddit comments folder in either layout ``builders/reddit_comments`` reads (published CSVs
        and index files, or comment dumps); parents are drawn from its comments.
      upvote_model: a folder of a model trained by ``rlds-lang reddit upvotes`` (the ``upvotes_model`` reward).
      visdial_dir: a VisDial manual folder (dialogue files, ``data_img.h5``; image files under ``images/``).
      visdial_answerer: the VisDial answerer: the URL of a server of the published protocol (``HttpBackend``)
        or a ``rlds_lang.visdial.backend.Backend`` object (e.g. a ``LocalBackend``).
      visdial_version: the VisDial version of the dialogue files.
    """

    reddit_dir: str | None = None
    upvote_model: str | None = None
    visdial_dir: str | None = None
    visdial_answerer: Any = None
    visdial_version: str = "0.5"


class ServiceError(RuntimeError):
    """A service a task relies on (e.g. the VisDial answerer) failed; nothing was recorded (the server answers 502)."""


def _always(sources: TaskSources) -> str | None:
    return None


@dataclasses.dataclass(frozen=True)
class WebTask:
    """One playable task.

    Attributes:
      name: the task id (as ``LanguageEnv.task_name``).
      config_model: pydantic model of the session config.
      make_env: a new environment for a session, from its validated config and the server's ``TaskSources``
        (``ValueError`` naming the field when they do not fit).
      prepare: called with the env before each game (e.g. fix the answer).
      check_action: raises ``InvalidActionError`` (shown to the person, never logged) for a bad action.
      view: the live game as JSON for the page.
      render: recorded steps (actions, observation texts) as JSON rows for the page.
      kind: how the page draws the rows: ``board`` (Wordle tiles) or ``text`` (a transcript).
      unavailable: why this server cannot offer the task with these sources (``None``: it can).
      picture: the picture of the current game for the page (``{"image": data URL or None, "note": why not}``),
        for tasks that show one.
    """

    name: str
    config_model: type[BaseModel]
    make_env: Callable[[Any, TaskSources], LanguageEnv]
    prepare: Callable[[Any, Any], None]
    check_action: Callable[[Any, str], None]
    view: Callable[[Any], dict[str, Any]]
    render: Callable[[Sequence[str], Sequence[str]], list[dict[str, Any]]]
    kind: str = "board"
    unavailable: Callable[[TaskSources], str | None] = _always
    picture: Callable[[Any], dict[str, Any]] | None = None


TASKS: dict[str, WebTask] = {}


def register(task: WebTask) -> None:
    """Adds ``task`` to the registry (its name must be new)."""
    if task.name in TASKS:
        raise ValueError(f"task {task.name!r} is already registered")
    TASKS[task.name] = task


def get_task(name: str) -> WebTask:
    """The registered task ``name``; the error lists the known tasks."""
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}") from None


def transcript_rows(actions: Sequence[str], texts: Sequence[str]) -> list[dict[str, Any]]:
    """Steps as a transcript: each observation text with the action taken from it, numbered from 0 (the page
    draws each step as its own block, so a step's boundaries stay visible)."""
    return [{"step": i, "observation": str(t), "action": str(a)} for i, (t, a) in enumerate(zip(texts, actions))]


def render_steps(task_name: str, actions: Sequence[str], texts: Sequence[str], as_text: bool = False
                 ) -> dict[str, Any]:
    """``{"kind", "rows"}`` for the page: the registered task's drawing, or a transcript for any other task
    (and for every task when ``as_text``)."""
    task = TASKS.get(task_name)
    if task is None or as_text:
        return {"kind": "text", "rows": transcript_rows(actions, texts)}
    return {"kind": task.kind, "rows": task.render(actions, texts)}


def parse_config(task: WebTask, config: Mapping[str, Any] | None) -> BaseModel:
    """The validated session config of ``task`` (pydantic raises ``ValidationError`` naming the field)."""
    return task.config_model.model_validate(dict(config or {}))


def offered(sources: TaskSources) -> dict[str, WebTask]:
    """The registered tasks this server can offer with ``sources``."""
    return {name: task for name, task in TASKS.items() if task.unavailable(sources) is None}


register(WebTask("wordle", WordleConfig, _wordle_env, _wordle_prepare, _wordle_check, _wordle_view, board_rows))

__all__ = ["SQUARE_COLOURS", "ServiceError", "TASKS", "TaskSources", "WebTask", "WordleConfig", "board_rows", "get_task", "offered",
           "parse_config", "register", "render_steps", "transcript_rows"]
