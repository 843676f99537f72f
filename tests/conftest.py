"""Settings of the tests/ suite: hypothesis profiles for CI, and the legacy suite kept out of the main stack.

Caches are kept inside the repository by the root ``conftest.py``.
"""

import os

from hypothesis import settings

settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# tests/legacy runs only in the legacy environment (TF 2.15 + rlds; tests/legacy/run.sh sets
# RLDS_LANG_LEGACY=1): `import rlds` cannot load on the main stack (docs/architecture.md, "Dependency stack").
collect_ignore = [] if os.environ.get("RLDS_LANG_LEGACY") == "1" else ["legacy"]
