"""Test-wide settings: caches stay inside the repository, hypothesis profiles for CI."""

import os
import pathlib

from hypothesis import settings

REPO = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("RLDS_LANG_CACHE", str(REPO / ".cache"))

settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
