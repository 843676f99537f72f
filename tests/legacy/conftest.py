"""Settings of the legacy-stack suite (TF 2.15, tfds 4.9.6, rlds 0.1.8; run by tests/legacy/run.sh).

``RLDS_LANG_LEGACY_DATA`` is the folder that ``make_datasets.py`` filled (``manifest.json`` and ``tfds/``);
default ``.cache/legacy``. The hypothesis example database lives in ``.cache/legacy/hypothesis``.
"""

import os
import pathlib

from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = os.environ.get("RLDS_LANG_LEGACY_DATA") or str(REPO / ".cache" / "legacy")
MANIFEST = os.path.join(DATA, "manifest.json")

_db = DirectoryBasedExampleDatabase(str(REPO / ".cache" / "legacy" / "hypothesis"))
settings.register_profile("legacy-ci", deadline=None, print_blob=True, database=_db)
settings.register_profile("legacy-dev", deadline=None, database=_db)
settings.load_profile("legacy-ci" if os.environ.get("CI") else "legacy-dev")
