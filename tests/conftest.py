"""Test-wide settings: caches stay inside the repository, hypothesis profiles for CI."""

import os
import pathlib

from hypothesis import settings

REPO = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("RLDS_LANG_CACHE", str(REPO / ".cache"))
# Libraries that write under ~ on their own (Beam's ~/.apache_beam, Keras' ~/.keras, matplotlib's font
# cache, tfds' ~/tensorflow_datasets) write into the repository's .cache during tests, never into ~.
_HOME = REPO / ".cache" / "test-home"
_HOME.mkdir(parents=True, exist_ok=True)
os.environ["HOME"] = str(_HOME)
os.environ.setdefault("MPLCONFIGDIR", str(REPO / ".cache" / "matplotlib"))
os.environ.setdefault("KERAS_HOME", str(REPO / ".cache" / "keras"))

settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# tests/legacy runs only in the legacy environment (TF 2.15 + rlds; tests/legacy/run.sh sets
# RLDS_LANG_LEGACY=1): `import rlds` cannot load on the main stack (ARCHITECTURE.md, "Dependency stack").
collect_ignore = [] if os.environ.get("RLDS_LANG_LEGACY") == "1" else ["legacy"]
