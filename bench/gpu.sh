#!/usr/bin/env bash
# The trainers' GPU checks in one run, from the working tree alone, without TensorFlow (about 8 minutes on one
# H100 or H200):
#   1. agreement: BC's and ILQL's first 5 losses on the CPU and on the GPU in fp32 (bench/device_agreement.py,
#      relative tolerance 1e-4);
#   2. throughput: tokens/s and achieved FLOP/s of BC and ILQL at the results pages' sizes in bf16, beside a bf16
#      matrix product timed in the same run (bench/train_throughput.py);
#   3. rows: LMRL-Gym's BC and ILQL rows (docs/lmrl_gym.md's model and configs) trained for the steps that fill
#      their time budgets on the GPU, then played (trainers.experiments.lmrl_gym.timed_rows).
# Every stage runs even when an earlier one fails; each writes a figures file into $OUT, which
# `rlds-lang results gpu --figures $OUT/*.json` merges into docs/gpu.md.
#
# The data are ArrayRecord builds (read by tfds.data_source, no TensorFlow), made on a machine with TensorFlow:
#   rlds-lang build wordle_synthetic --config branch --small 300 --file-format array_record --data-dir .gpu/tfds
#   rlds-lang build wordle_synthetic --config lmrl_gym --small 20000 --file-format array_record --data-dir .gpu/tfds
# Python packages the GPU machine lacks travel as wheels in .gpu/whl (Python 3.12 there; see docs/guides/gpu.md).
#
#   OUT=/tmp/gpu bash bench/gpu.sh        # BUDGET_BC=120 BUDGET_ILQL=80 GAMES=1024 READER_WORKERS=8 by default
#   STAGES="throughput rows" OUT=/tmp/gpu bash bench/gpu.sh                  # only those stages
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/rlds-lang-gpu}
DATA=${GPU_DATA:-.gpu/tfds/wordle_synthetic}
BRANCH=${BRANCH_DATA:-$DATA/branch_small300/1.1.0}
LMRL=${LMRL_DATA:-$DATA/lmrl_gym_small20000/1.1.0}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu rehearses the script on a machine without a GPU
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu.log") 2>&1
WHEELS=${WHEELS:-.gpu/whl}  # WHEELS=none where the packages are installed
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/rlds-lang-site \
    "$WHEELS"/*.whl || { echo "installing $WHEELS failed"; exit 1; }
  export PYTHONPATH=/tmp/rlds-lang-site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 TF_CPP_MIN_LOG_LEVEL=2
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PY" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available())"
failed=()
STAGES=" ${STAGES:-agreement throughput rows} "  # a subset reruns only those
WORKERS=${READER_WORKERS:-8}  # DataLoader processes decoding the training batches
stage() {  # stage NAME SECONDS COMMAND...: runs a stage (unless left out of STAGES) with a time limit, recording a failure
  [[ $STAGES == *" $1 "* ]] || return 0
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date -u +%H:%M:%S), limit ${limit}s)"
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" || { echo "== $name FAILED (status $?)"; failed+=("$name"); }
  echo "== $name took $((SECONDS - start)) s"
}
stage agreement 120 "$PY" bench/device_agreement.py --device "$DEVICE" --dataset "$BRANCH" --steps 5 \
  --json "$OUT/agreement.json"
stage throughput 150 "$PY" bench/train_throughput.py --device "$DEVICE" --precision "${PRECISION:-bf16}" --steps "${THROUGHPUT_STEPS:-200}" \
  --reader-workers "$WORKERS" --dataset "wordle=$BRANCH" --dataset "lmrl-gym=$LMRL" --json "$OUT/throughput.json"
stage rows "${ROWS_LIMIT:-330}" "$PY" -m trainers.experiments.lmrl_gym.timed_rows --dataset "$LMRL" --device "$DEVICE" \
  --precision "${PRECISION:-bf16}" --bc-seconds "${BUDGET_BC:-120}" --ilql-seconds "${BUDGET_ILQL:-80}" --games "${GAMES:-1024}" --probe-steps "${PROBE_STEPS:-100}" \
  --reader-workers "$WORKERS" \
  --json "$OUT/rows.json"
echo "== done; failed: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ]
