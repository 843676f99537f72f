"""Repository-wide pytest settings, loaded whatever the test path (``pytest builders/...`` too): caches stay
inside the repository.

Libraries that write under ~ on their own (Beam's ~/.apache_beam, Keras' ~/.keras, matplotlib's font cache,
tfds' ~/tensorflow_datasets) write into the repository's ``.cache`` during tests, never into ~; the Wordle
feedback-matrix cache (``RLDS_LANG_CACHE``) lives there too. Standard library only: the legacy suite
(``tests/legacy/run.sh``, another interpreter and stack) loads this file as well.
"""

import os
import pathlib

REPO = pathlib.Path(__file__).resolve().parent
CACHE = REPO / ".cache"

os.environ.setdefault("RLDS_LANG_CACHE", str(CACHE))
_HOME = CACHE / "test-home"
_HOME.mkdir(parents=True, exist_ok=True)
os.environ["HOME"] = str(_HOME)
os.environ.setdefault("MPLCONFIGDIR", str(CACHE / "matplotlib"))
os.environ.setdefault("KERAS_HOME", str(CACHE / "keras"))
