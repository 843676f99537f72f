"""Repository-wide pytest settings, loaded whatever the test path (``pytest builders/...`` too): caches stay
inside the repository, and runs a test leaves to their default folder go to a folder of the session.

Libraries that write under ~ on their own (Beam's ~/.apache_beam, Keras' ~/.keras, matplotlib's font cache,
tfds' ~/tensorflow_datasets) write into the repository's ``.cache`` during tests, never into ~; the Wordle
feedback-matrix cache (``RLDS_LANG_CACHE``) lives there too. Default output folders (``RLDS_LANG_RUNS``, the
browser tool's ``RLDS_LANG_WEB_DATA``) are a temporary folder made for the session and removed after it, whatever
the shell sets: a config made without ``out`` writes there, never into the user's runs, and cannot resume a run
left by an earlier session. Training runs draw no ``training_curves.png`` unless a test asks for it, under
pytest-xdist each worker computes on one thread, bytecode is cached whatever ``PYTHONDONTWRITEBYTECODE`` says, and
what collection loaded is kept out of the garbage collector's passes. Standard library only: the legacy suite
(``tests/legacy/run.sh``, another interpreter and stack) loads this file as well.
"""

import gc
import os
import pathlib
import shutil
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent
CACHE = REPO / ".cache"

os.environ.setdefault("RLDS_LANG_CACHE", str(CACHE))
_HOME = CACHE / "test-home"
_HOME.mkdir(parents=True, exist_ok=True)
os.environ["HOME"] = str(_HOME)
os.environ.setdefault("MPLCONFIGDIR", str(CACHE / "matplotlib"))
os.environ.setdefault("KERAS_HOME", str(CACHE / "keras"))
# Training runs skip training_curves.png (``trainers.core.plots.CURVES_ENV``; matplotlib's layout is a second or more
# per run, most of a short run's time); the tests that check the curves set it back to 1.
os.environ["RLDS_LANG_TRAINING_CURVES"] = "0"
# Under pytest-xdist each worker is one process of its own: one math thread each keeps the workers from fighting
# over the cores (a test that sets threads itself still does).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")

# Bytecode caches (the git-ignored __pycache__ folders) are written even where PYTHONDONTWRITEBYTECODE is set, here and
# in every program a test starts: without them each xdist worker compiled and assertion-rewrote every test file again
# at collection (12 of its 30 seconds) and each child recompiled the packages it imports.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False

#: the slow tier: test ids (``path::name``, a parametrized test by its name: all its cases) that take more than about
#: 10 s here, one a line; ``pytest -m "not slow"`` leaves them out (``docs/guides/commands.md``).
SLOW_TESTS = REPO / "tests" / "slow_tests.txt"


def slow_test_ids(path=SLOW_TESTS):
    """The ids listed in ``path`` (blank lines and ``#`` comments left out)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return {line for line in lines if line}


def pytest_configure(config):
    """Points ``RLDS_LANG_RUNS`` and ``RLDS_LANG_WEB_DATA`` into a new temporary folder for this session, and keeps the
    order of ``slow_files_first`` under ``--dist loadfile``."""
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist's reordering by test count: slow_files_first
        config.option.loadscopereorder = False
    session = tempfile.mkdtemp(prefix="rlds_lang-session-")
    config.rlds_lang_session_dir = session
    os.environ["RLDS_LANG_RUNS"] = os.path.join(session, "runs")
    os.environ["RLDS_LANG_WEB_DATA"] = os.path.join(session, "web")


def pytest_unconfigure(config):
    """Removes the session's default folders."""
    session = getattr(config, "rlds_lang_session_dir", None)
    if session:
        shutil.rmtree(session, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """Marks every test listed in ``SLOW_TESTS`` ``slow`` (the marker ``setup.cfg`` registers) and puts the files that
    hold a slow test first (``slow_files_first``)."""
    if not SLOW_TESTS.is_file():
        return
    slow = slow_test_ids()
    for item in items:
        if item.nodeid in slow or item.nodeid.split("[", 1)[0] in slow:
            item.add_marker("slow")
    items[:] = slow_files_first(items)


def slow_files_first(items):
    """``items`` with every file that holds a ``slow`` test before the others, and in each group the files with more
    tests first (pytest-xdist's own order for ``--dist loadfile``, which ``pytest_configure`` turns off for this one):
    a worker that draws a minutes-long file near the end of the run keeps the other one waiting, and the files of
    quick tests, drawn last, even the two workers out. A file's tests keep their order."""
    by_file = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ranked = sorted(by_file.values(), key=lambda tests: (not any(t.get_closest_marker("slow") for t in tests),
                                                         -len(tests)))
    return [item for tests in ranked for item in tests]


def pytest_collection_finish(session):
    """Moves every object alive after collection (the modules imported, PyTorch's and TensorFlow's among them, and the
    test items) out of the garbage collector's reach (``gc.freeze``): they live as long as the session, and with
    them each full collection of a worker scanned millions of objects (about 12 s of a worker's everyday tier)."""
    gc.freeze()
