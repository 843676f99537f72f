"""``trainers.core.native_logs``: the log-level variables, and the import of TensorFlow with absl's INFO lines
(which ignore ``TF_CPP_MIN_LOG_LEVEL`` at import) dropped from standard error and everything else kept."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from trainers.core.native_logs import (ABSL_PREAMBLE, NOISY_IMPORTS, QuietImportFinder, QuietLoader,
                                       quiet_native_logs, without_native_info)

REPO = Path(__file__).resolve().parents[1]
INFO = (b"I0000 00:00:1795945082.550679   23211 port.cc:153] oneDNN custom operations are on. To turn them off, "
        b"set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.\n")
WARNING = b"W0000 00:00:1795945082.550700   23211 cpu_feature_guard.cc:10] a real warning\n"
ERROR = b"E1129 09:31:02.123456   23211 cuda_dnn.cc:8579] a real error\n"


def test_absl_info_lines_are_dropped_and_warnings_errors_and_other_lines_kept_in_order():
    captured = ABSL_PREAMBLE + b"\n" + INFO + b"plain text\n" + WARNING + INFO + ERROR + b"I am not absl\n"
    kept = ABSL_PREAMBLE + b"\n" + b"plain text\n" + WARNING + ERROR + b"I am not absl\n"
    assert without_native_info(captured) == kept


def test_absl_s_preamble_goes_with_the_last_of_its_lines():
    assert without_native_info(ABSL_PREAMBLE + b"\n" + INFO + ABSL_PREAMBLE + b"\n" + INFO) == b""
    assert without_native_info(ABSL_PREAMBLE + b"\n" + b"a traceback line\n") == b"a traceback line\n"
    assert without_native_info(b"no newline at the end") == b"no newline at the end"


def run_script(script: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Runs ``script`` in a fresh interpreter that finds this repository and the modules written in ``tmp_path``."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path, capture_output=True,
                          env={"PYTHONPATH": f"{REPO}:{tmp_path}", "PATH": "/usr/bin:/bin"}, timeout=120)


def test_importing_a_listed_module_drops_its_absl_info_lines_from_descriptor_2(tmp_path):
    """A module writing to descriptor 2 as TensorFlow's C++ does at import: only its INFO lines go; its warning,
    its Python-level output and what the process writes afterwards stay, in order."""
    first = ABSL_PREAMBLE + b"\n" + INFO
    (tmp_path / "noisy_probe.py").write_text(textwrap.dedent(f'''
        import os, sys
        os.write(2, {first!r})
        print("said through sys.stderr", file=sys.stderr)
        os.write(2, {WARNING + INFO!r})
        VALUE = 42
    '''))
    done = run_script('''
        import importlib.util, os
        from trainers.core.native_logs import QuietImportFinder
        QuietImportFinder.install(["noisy_probe"])
        assert importlib.util.find_spec("noisy_probe") is not None  # a probe alone runs nothing
        os.write(2, b"before\\n")
        import noisy_probe
        assert noisy_probe.VALUE == 42 and type(noisy_probe.__spec__.loader).__name__ == "QuietLoader"
        os.write(2, b"after\\n")
    ''', tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    # absl's preamble stays: a line of absl's (the warning) is left after it
    assert done.stderr == b"before\n" + first.replace(INFO, b"") + b"said through sys.stderr\n" + WARNING + b"after\n"


def test_an_import_that_fails_still_gives_back_standard_error_with_its_traceback(tmp_path):
    written = INFO + b"kept line\n"
    (tmp_path / "broken_probe.py").write_text(f"import os\nos.write(2, {written!r})\n"
                                              "raise RuntimeError('the import failed')\n")
    done = run_script('''
        from trainers.core.native_logs import QuietImportFinder
        QuietImportFinder.install(["broken_probe"])
        import broken_probe
    ''', tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith(b"kept line\n") and b"RuntimeError: the import failed" in done.stderr


def test_quiet_native_logs_puts_one_finder_for_tensorflow_first_on_this_process_s_meta_path(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", [finder for finder in sys.meta_path
                                           if not isinstance(finder, QuietImportFinder)])
    environ = {}
    quiet_native_logs(environ)  # another environment: this process's import system is left alone
    assert not any(isinstance(finder, QuietImportFinder) for finder in sys.meta_path)
    for name in ("TF_CPP_MIN_LOG_LEVEL", "GLOG_minloglevel"):
        monkeypatch.setenv(name, "1")
    quiet_native_logs()
    quiet_native_logs()
    finders = [finder for finder in sys.meta_path if isinstance(finder, QuietImportFinder)]
    assert len(finders) == 1 and sys.meta_path[0] is finders[0] and finders[0].names == NOISY_IMPORTS == ("tensorflow",)
    assert finders[0].find_spec("numpy") is None
    spec = finders[0].find_spec("tensorflow")
    assert spec is not None and isinstance(spec.loader, QuietLoader)


def test_a_descriptor_points_at_its_target_for_the_block_and_back_after_it_even_when_it_raises(tmp_path):
    """``trainers.core.descriptors.descriptor_redirected``, which the import filter and the build child's quiet
    standard output share: descriptor writes and the stream's buffered text land inside, later ones outside."""
    done = run_script('''
        import os, sys, tempfile
        from trainers.core.descriptors import descriptor_redirected
        with tempfile.TemporaryFile() as captured:
            sys.stdout.write("buffered before, ")
            try:
                with descriptor_redirected(1, captured.fileno(), sys.stdout):
                    os.write(1, b"native inside, ")
                    sys.stdout.write("buffered inside")
                    raise KeyError("the block fails")
            except KeyError:
                pass
            sys.stdout.write(" | after")
            sys.stdout.flush()
            captured.seek(0)
            sys.stderr.write(captured.read().decode())
    ''', tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"buffered before,  | after" and done.stderr == b"native inside, buffered inside"
