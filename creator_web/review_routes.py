"""The Review page's routes of creator_web: a dataset's episodes with who has notes on each (the queue), one
episode with its notes and their recent changes, notes added, edited and deleted (``creator_web.review``), and
each annotator's progress (``creator_web.progress``).

``add_review_routes`` adds them to the application ``creator_web.app.create_app`` makes, with that application's
access rules: ``reader`` (a request carrying a session's token), ``owner`` (the token of the session in the path)
and ``dataset_or_404`` (a listed, undamaged dataset). Errors: 403 another annotator's note; 404 an unknown episode
or note; 409 a note changed since the person saw it, a client key sent with another change, a stored limit; 422
an empty note or a step outside the episode.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from fastapi import Depends, FastAPI, HTTPException, Query

from creator_web import review
from creator_web.bodies import Annotation, NoteDelete, NoteEdit
from creator_web.progress import NoteIndex, progress
from creator_web.sessions import Session
from creator_web.storage import DataDir


def add_review_routes(app: FastAPI, data: DataDir, owner: Callable[..., Session], reader: Callable[..., Session],
                      dataset_or_404: Callable[[str], str], held: Callable[[str], None]) -> NoteIndex:
    """Adds the Review page's routes to ``app`` (``held``: ``create_app``'s test hook, called with ``episode``
    before an episode is read and with ``annotate``, ``edit`` or ``delete`` before a note changes); returns the
    ``NoteIndex`` they share."""
    notes = NoteIndex(data)

    @app.get("/api/datasets/{name:path}/episodes")
    def episodes(name: str, offset: int = Query(0, ge=0), limit: int = Query(100, ge=1, le=1000),
                 _: Session = Depends(reader)) -> dict[str, Any]:
        """Summaries of a dataset's episodes, each with ``notes`` (how many stand) and ``annotators`` (whose)."""
        name = dataset_or_404(name)
        eps = data.episodes(name)
        page = [review.summary(i, eps[i]) for i in range(offset, min(offset + limit, len(eps)))]
        noted = notes.for_episodes(name, [e["episode_id"] for e in page])
        for row in page:  # the queue: who has notes on each episode
            row["notes"] = len(noted[row["episode_id"]])
            row["annotators"] = sorted({str(n["annotator"]) for n in noted[row["episode_id"]]})
        return {"total": len(eps), "episodes": page}

    @app.get("/api/datasets/{name:path}/episode")
    def episode(name: str, episode_id: str = Query(..., min_length=1, max_length=300),
                _: Session = Depends(reader)) -> dict[str, Any]:
        """One episode (its latest annotated version) for the replay view, with its notes and their changes."""
        held("episode")
        try:
            return review.detail(data, dataset_or_404(name), episode_id)
        except KeyError as e:
            raise HTTPException(404, e.args[0]) from None

    def change(session: Session, dataset: str, episode_id: str, **fields: Any) -> dict[str, Any]:
        """Applies one change of an episode's notes by ``session``'s annotator; the errors as HTTP answers."""
        if fields["op"] != "delete" and not fields.get("text") and not fields.get("tags"):
            raise HTTPException(422, "text: give a text or at least one tag" +
                                (" (to remove a note, delete it)" if fields["op"] == "edit" else ""))
        asked = review.NoteChange(annotator=session.annotator, session_id=session.session_id, **fields)
        try:
            out = review.change_notes(data, dataset_or_404(dataset), episode_id, asked)
        except KeyError as e:
            raise HTTPException(404, e.args[0]) from None
        except IndexError as e:
            raise HTTPException(422, f"step: {e}") from None
        except review.NotYours as e:
            raise HTTPException(403, str(e)) from None
        except (review.LimitError, review.NoteConflict) as e:
            raise HTTPException(409, str(e)) from None
        return {**out, "version": os.path.relpath(out["version"], data.root)}

    @app.post("/api/sessions/{session_id}/annotate")
    def annotate(body: Annotation, session: Session = Depends(owner)) -> dict[str, Any]:
        """Adds a note as a new version of the episode: ``version``, ``note_id``, ``revision`` and ``duplicate``
        (true when this ``client_key``'s note was stored before: nothing new is written)."""
        held("annotate")
        return change(session, body.dataset, body.episode_id, op="add", step=body.step, text=body.text,
                      tags=tuple(body.tags), client_key=body.client_key)

    @app.post("/api/sessions/{session_id}/annotate/edit")
    def edit_note(body: NoteEdit, session: Session = Depends(owner)) -> dict[str, Any]:
        """Replaces the text and tags of one's own note (a new version; the one before keeps the old text); 409
        if the note is no longer at the revision the person edited."""
        held("edit")
        return change(session, body.dataset, body.episode_id, op="edit", note_id=body.note_id,
                      revision=body.revision, text=body.text, tags=tuple(body.tags), client_key=body.client_key)

    @app.post("/api/sessions/{session_id}/annotate/delete")
    def delete_note(body: NoteDelete, session: Session = Depends(owner)) -> dict[str, Any]:
        """Deletes one's own note (a new version without it, recorded as a ``delete`` change; earlier versions
        keep it)."""
        held("delete")
        return change(session, body.dataset, body.episode_id, op="delete", note_id=body.note_id,
                      revision=body.revision, client_key=body.client_key)

    @app.get("/api/progress")
    def annotators_progress(_: Session = Depends(reader)) -> dict[str, Any]:
        """Each annotator's sessions, finished episodes per task, judgements and standing notes
        (``creator_web.progress``)."""
        return progress(data, notes)

    return notes


__all__ = ["add_review_routes"]
