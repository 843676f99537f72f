"""Runs the ``rlds-lang`` command line in a process where TensorFlow is hidden, as if it were not installed.

    python tests/no_tensorflow.py train bc --dataset DIR --steps 2 --out OUT

Every finder of ``sys.meta_path`` is wrapped so that ``tensorflow`` and its submodules are not found: ``import
tensorflow`` raises ``ModuleNotFoundError`` and ``importlib.util.find_spec("tensorflow")`` is None, which is how
TFDS (``tensorflow_datasets.core.utils.lazy_imports_utils``, an ``ImportError`` on first use) and etils
(``epath``'s ``find_spec`` probe) tell that TensorFlow is absent. At exit the process prints one line
``NO_TENSORFLOW_REPORT {json}`` to stderr: the tensorflow modules loaded (none can be) and how often a module looked
for one.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_LOOKED_FOR: list[str] = []


def hidden(name: str) -> bool:
    """Whether ``name`` is TensorFlow or one of its submodules (``tensorflow_datasets`` is not)."""
    return name == "tensorflow" or name.startswith("tensorflow.")


class HidingFinder:
    """A ``sys.meta_path`` finder that finds what the finder it wraps finds, except TensorFlow."""

    def __init__(self, finder: Any):
        self._finder = finder

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """The wrapped finder's spec of ``name``; None for TensorFlow (recorded)."""
        if hidden(name):
            _LOOKED_FOR.append(name)
            return None
        find = getattr(self._finder, "find_spec", None)
        return find(name, path, target) if find is not None else None

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._finder, attribute)


def hide_tensorflow() -> None:
    """Wraps every finder of ``sys.meta_path``; refuses to run when TensorFlow is imported already."""
    loaded = [name for name in sys.modules if hidden(name)]
    if loaded:
        raise RuntimeError(f"tensorflow is imported already ({loaded[:3]}); hide it before anything imports it")
    sys.meta_path[:] = [HidingFinder(finder) for finder in sys.meta_path]


def report() -> dict[str, Any]:
    """The tensorflow modules loaded and the lookups of one."""
    return {"tensorflow_modules": sorted(name for name in sys.modules if hidden(name)),
            "lookups": len(_LOOKED_FOR)}


if __name__ == "__main__":
    hide_tensorflow()
    from trainers.cli.main import main

    try:
        main(sys.argv[1:])
    finally:
        print("NO_TENSORFLOW_REPORT " + json.dumps(report()), file=sys.stderr)
