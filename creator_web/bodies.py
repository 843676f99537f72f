"""The JSON bodies creator_web accepts, every field bounded, and how a rejected one is reported.

Every body is a pydantic model that rejects unknown fields and ``NaN``/``Infinity``; pydantic itself refuses
strings that are not valid Unicode (a lone surrogate such as ``"\\ud800"``, which cannot be stored as UTF-8).
``validation_detail`` turns pydantic's errors into the 422 answer: each error names its field (``loc``) and
says why, and echoes the offending value only cut short and ASCII-safe (never a 10 MB value, never a value
JSON cannot encode).
"""

from __future__ import annotations

from typing import Annotated, Any, Iterable, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from creator_web.guard import shown

#: an annotator, export or other name: letters, digits, ``_ . -``, at most 64, never ``..``.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
#: limits of one annotation; ``creator_web.review`` bounds the annotations an episode may hold in all.
MAX_TEXT, MAX_TAGS, MAX_TAG = 2000, 10, 40
MAX_EXPORT = 1000
#: a page's key of one save (``creator_web.review``: the same key is never stored twice), and a note's id.
CLIENT_KEY_PATTERN, NOTE_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$", r"^[a-z][0-9a-f]{1,24}$"


def no_dot_dot(value: str) -> str:
    """``value`` if it holds no ``..`` (a name that could climb out of its folder)."""
    if ".." in value:
        raise ValueError("must not contain '..'")
    return value


def no_control(value: str) -> str:
    """``value`` if it holds no control characters (tags are shown on one line)."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError("must not contain control characters")
    return value


Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN), AfterValidator(no_dot_dot)]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TAG),
                AfterValidator(no_control)]
DatasetName = Annotated[str, StringConstraints(min_length=1, max_length=300)]
EpisodeId = Annotated[str, StringConstraints(min_length=1, max_length=300)]
ClientKey = Annotated[str, StringConstraints(pattern=CLIENT_KEY_PATTERN)]
NoteText = Annotated[str, StringConstraints(max_length=MAX_TEXT)]


class Body(BaseModel):
    """Base of every body: unknown fields, NaN and infinities are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class OpenSession(Body):
    """Body of POST /api/sessions."""

    annotator: Name | None = Field(None, description="who is annotating (letters, digits, _ . -); behind a "
                                                     "signing-in proxy, the proxy names them")
    secret: Annotated[str, StringConstraints(max_length=200)] | None = Field(
        None, description="the annotator's secret, when the server was started with an annotators file")
    task: Annotated[str, StringConstraints(max_length=64)] = "wordle"
    config: dict[str, Any] = Field(default_factory=dict, description="the task's session config")


class Guess(Body):
    """Body of POST /api/sessions/{id}/play/act."""

    action: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT)]
    client_ms: int = Field(0, ge=0, le=86_400_000, description="ms from showing the board to submitting")


class PairRequest(Body):
    """Body of POST /api/sessions/{id}/judge/next."""

    left: DatasetName | None = None
    right: DatasetName | None = None
    view: Literal["task", "text"] = Field("task", description="``text`` draws both clips as transcripts")


class JudgeBody(Body):
    """Body of POST /api/sessions/{id}/judge."""

    pair_id: str = Field(..., pattern=r"^[0-9a-f]{16}$")
    label: Literal["left", "right", "equal", "skip"]
    seconds: float = Field(0.0, ge=0.0, le=86_400.0)


class Annotation(Body):
    """Body of POST /api/sessions/{id}/annotate (a new note)."""

    dataset: DatasetName
    episode_id: EpisodeId
    step: int | None = Field(None, ge=0, le=1_000_000, description="the step annotated; none for the whole episode")
    text: NoteText = ""
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    client_key: ClientKey | None = Field(None, description="the page's key of this save: sent again (a retry, a "
                                                           "double click), it is answered without storing twice")


class NoteEdit(Body):
    """Body of POST /api/sessions/{id}/annotate/edit (new text and tags of one's own note)."""

    dataset: DatasetName
    episode_id: EpisodeId
    note_id: str = Field(..., pattern=NOTE_ID_PATTERN)
    revision: int = Field(..., ge=1, le=1_000_000, description="the revision of the note the person edited")
    text: NoteText = ""
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    client_key: ClientKey | None = None


class NoteDelete(Body):
    """Body of POST /api/sessions/{id}/annotate/delete (one's own note; earlier versions keep it)."""

    dataset: DatasetName
    episode_id: EpisodeId
    note_id: str = Field(..., pattern=NOTE_ID_PATTERN)
    revision: int = Field(..., ge=1, le=1_000_000, description="the revision of the note the person deleted")
    client_key: ClientKey | None = None


class ExportBody(Body):
    """Body of POST /api/sessions/{id}/export."""

    dataset: DatasetName
    episode_ids: list[EpisodeId] = Field(..., min_length=1, max_length=MAX_EXPORT)
    name: Name


def _safe(text: str, limit: int) -> str:
    """``text`` ASCII-escaped and cut to ``limit`` characters."""
    text = ascii(text)[1:-1]
    return text if len(text) <= limit else text[:limit] + "..."


def validation_detail(errors: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """pydantic/FastAPI errors as the 422 ``detail``: ``loc``, ``msg`` and the ``input`` echoed short and safe."""
    detail = []
    for error in errors:
        item: dict[str, Any] = {"loc": [part if isinstance(part, int) else _safe(str(part), 60)
                                        for part in error.get("loc", ())],
                                "msg": _safe(str(error.get("msg", "")), 300)}
        if "input" in error:
            item["input"] = shown(error["input"])
        detail.append(item)
    return detail


__all__ = ["Annotation", "Body", "CLIENT_KEY_PATTERN", "ClientKey", "DatasetName", "EpisodeId", "ExportBody", "Guess",
           "JudgeBody", "MAX_EXPORT", "MAX_TAG", "MAX_TAGS", "MAX_TEXT", "NAME_PATTERN", "NOTE_ID_PATTERN", "Name",
           "NoteDelete", "NoteEdit", "NoteText", "OpenSession", "PairRequest", "Tag", "no_control", "no_dot_dot",
           "validation_detail"]
