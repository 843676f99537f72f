#!/usr/bin/env bash
# Second CI environment (issue 3): the legacy stack (TF 2.15.1, tfds 4.9.6, dm-reverb 0.14.0, rlds 0.1.8).
#
# From the repo root, after the main .venv exists (README's test command creates it):
#   bash tests/legacy/run.sh
# 1. creates .venv-legacy (reused if present) with constraints-legacy.txt (+ pytest, hypothesis);
# 2. builds, with the MAIN stack, small wordle_synthetic (expert, branch) and a nasty-string dataset into
#    .cache/legacy/tfds, and writes .cache/legacy/manifest.json from the source episodes;
# 3. runs tests/legacy with the legacy interpreter (loads those datasets with tfds 4.9.6 + rlds, and the
#    transforms-vs-rlds conformance suite).
# Every cache (pip, tfds data, hypothesis) stays under .cache/ in the repo.
# Environment: RLDS_LANG_MAIN_VENV (default .venv), RLDS_LANG_SMALL (default 3 games per recipe),
# RLDS_LANG_LEGACY_REBUILD=1 to rebuild the data even if the manifest exists.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
MAIN_VENV="${RLDS_LANG_MAIN_VENV:-$REPO/.venv}"
LEGACY_VENV="$REPO/.venv-legacy"
DATA="$REPO/.cache/legacy"
export PIP_CACHE_DIR="$REPO/.cache/pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1
export RLDS_LANG_CACHE="$REPO/.cache"
export TFDS_DATA_DIR="$DATA/tfds"
export RLDS_LANG_SMALL="${RLDS_LANG_SMALL:-3}"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-1}"
# Libraries that write under ~ on their own: Keras (~/.keras), matplotlib, Beam (~/.apache_beam, from
# expanduser("~")). The build and test stages run with HOME inside .cache so nothing lands in ~.
export KERAS_HOME="$REPO/.cache/keras" MPLCONFIGDIR="$REPO/.cache/matplotlib" XDG_CACHE_HOME="$REPO/.cache/xdg"
SANDBOX_HOME="$DATA/home"

stage() {  # stage NAME COMMAND...: runs COMMAND, prints how long it took
  local name="$1"; shift
  local start; start=$(date +%s)
  echo "+ legacy stage '$name'"
  "$@"
  echo "legacy stage '$name' took $(( $(date +%s) - start )) s"
}

[ -x "$MAIN_VENV/bin/python" ] || { echo "main venv $MAIN_VENV missing: run the README test command first" >&2; exit 1; }

install_legacy() {
  [ -x "$LEGACY_VENV/bin/python" ] || python3.11 -m venv "$LEGACY_VENV"
  "$LEGACY_VENV/bin/pip" install -q -c constraints-legacy.txt \
    tensorflow-cpu dm-reverb rlds tensorflow-datasets tensorflow-metadata protobuf importlib_resources pyarrow \
    pytest hypothesis
}

build_data() {
  if [ -f "$DATA/manifest.json" ] && [ "${RLDS_LANG_LEGACY_REBUILD:-0}" != 1 ] \
     && [ "$(cat "$DATA/small" 2>/dev/null)" = "$RLDS_LANG_SMALL" ]; then
    echo "reusing $DATA (RLDS_LANG_LEGACY_REBUILD=1 rebuilds)"; return
  fi
  rm -rf "$DATA/tfds" "$DATA/manifest.json" "$DATA/small"
  mkdir -p "$DATA/tfds" "$SANDBOX_HOME"
  for config in expert branch; do
    HOME="$SANDBOX_HOME" PYTHONPATH="$REPO" "$MAIN_VENV/bin/tfds" build builders/wordle_synthetic --config "$config" \
      --data_dir "$DATA/tfds" > "$DATA/tfds_build_$config.log" 2>&1 \
      || { tail -40 "$DATA/tfds_build_$config.log" >&2; return 1; }
  done
  HOME="$SANDBOX_HOME" PYTHONPATH="$REPO" "$MAIN_VENV/bin/python" tests/legacy/make_datasets.py --data_dir "$DATA/tfds" \
    --manifest "$DATA/manifest.json" --wordle_configs expert,branch > "$DATA/make_datasets.log" 2>&1 \
    || { tail -40 "$DATA/make_datasets.log" >&2; return 1; }
  tail -1 "$DATA/make_datasets.log"
  echo "$RLDS_LANG_SMALL" > "$DATA/small"
}

run_tests() {
  mkdir -p "$SANDBOX_HOME"
  HOME="$SANDBOX_HOME" RLDS_LANG_LEGACY=1 RLDS_LANG_LEGACY_DATA="$DATA" PYTHONPATH="$REPO" \
    "$LEGACY_VENV/bin/python" -m pytest -q -p no:cacheprovider tests/legacy "$@"
}

total=$(date +%s)
stage "install legacy venv" install_legacy
stage "build datasets (main stack)" build_data
stage "legacy tests" run_tests "$@"
echo "legacy stage 'total' took $(( $(date +%s) - total )) s"
