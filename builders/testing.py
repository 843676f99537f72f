"""What the builders' ``tfds.testing.DatasetBuilderTestCase`` tests share."""

from __future__ import annotations

import os


class AllowNumpyLoad:
    """Mixin for a ``DatasetBuilderTestCase``: lifts the harness's ``np.load`` guard, meant for a builder's
    downloaded files, which rejects the Wordle engine reading its own feedback-matrix cache by path."""

    def setUp(self):
        super().setUp()
        for patcher in list(self.patchers):
            getter = getattr(patcher, "getter", lambda: "")
            if getattr(patcher, "attribute", None) == "load" and "numpy" in repr(getter()):
                patcher.stop()
                self.patchers.remove(patcher)


class SmallBuild:
    """Mixin for a ``DatasetBuilderTestCase``: builds with ``RLDS_LANG_SMALL=SMALL`` for this test case only.

    Setting the variable at a test module's import would leak into every builder test collected after it (the
    last module imported wins), so it is set in ``setUp`` and restored by a cleanup."""

    SMALL: int = 0

    def setUp(self):
        previous = os.environ.get("RLDS_LANG_SMALL")
        os.environ["RLDS_LANG_SMALL"] = str(self.SMALL)
        self.addCleanup(_restore_env, "RLDS_LANG_SMALL", previous)
        super().setUp()


class FullSizeBuild:
    """Mixin for a ``DatasetBuilderTestCase``: builds without ``RLDS_LANG_SMALL`` (another builder test may have
    set it for the process) for this test case only, restoring it afterwards."""

    def setUp(self):
        super().setUp()
        self.addCleanup(_restore_env, "RLDS_LANG_SMALL", os.environ.pop("RLDS_LANG_SMALL", None))


def _restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
