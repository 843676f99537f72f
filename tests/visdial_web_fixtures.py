"""A small VisDial folder and answerer for creator_web tests: the published layout (``write_fixture``), one image
file, and a ``LocalBackend`` whose guesser moves with the dialogue (so rewards change from round to round)."""

from __future__ import annotations

import io
import os
from pathlib import Path

from rlds_lang.visdial.backend import LocalBackend, build_local_backend
from rlds_lang.visdial.data import FEATURES_FILE, FeatureStore
from rlds_lang.visdial.fixtures import write_fixture

#: feature size of the small folder (the published one is 4096).
DIM = 16


def visdial_folder(root: Path, with_image_of: int | None = None) -> Path:
    """A VisDial manual folder (4 train, 3 val dialogues); with ``with_image_of`` (a val dialogue index), a PNG
    of that dialogue's image under ``images/<image_id>.png``."""
    folder = root / "visdial"
    written = write_fixture(str(folder), sizes={"train": 4, "val": 3}, dim=DIM)
    if with_image_of is not None:
        from PIL import Image

        (folder / "images").mkdir()
        buffer = io.BytesIO()
        Image.new("RGB", (48, 32), (200, 40, 40)).save(buffer, format="PNG")
        (folder / "images" / f"{written['val'][with_image_of]['image_id']}.png").write_bytes(buffer.getvalue())
    return folder


def moving_backend(folder: Path) -> LocalBackend:
    """A ``LocalBackend`` whose guesser predicts val image ``questions asked % 3``: its rank moves every round."""
    store = FeatureStore(os.path.join(folder, FEATURES_FILE), "val")
    pool = store.all()
    store.close()
    return build_local_backend(str(folder), lambda caption, history: pool[(len(history) // 2) % len(pool)])
