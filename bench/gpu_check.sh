#!/usr/bin/env bash
# The GPU check, in two calls of at most ~4 minutes each, so that one device session (15 minutes, a cold
# start included) has room to rerun either:
#   bash bench/gpu_check.sh tests     the GPU tests (pytest, no plugins needed) and a real `tuner run`
#                                     on the GPU with --gpus-per-worker auto                   <= 240 s
#   bash bench/gpu_check.sh benches   bench/parallel.py (tuner's loop vs a bare one, ddp, dp) and
#                                     bench/gpu_packing.py (1 and 8 trials per GPU, auto)      <= 240 s
# Add --cpu-check to run the same steps on this CPU machine first (small sizes, no GPU rows to
# measure, longer limits for 2 cores). Each step runs under its own time limit and the summary prints
# at the end whatever happened, a step that timed out included.
# Run --cpu-check once with PYTHON set to a venv holding only what the GPU machine has (its list in
# ../shared/device/README.md, the bundle's wheels, pyarrow): a module tuner needs that the machine lacks
# then fails here, not in device time (`import bottle` did: tests/test_dependencies.py now guards it).
# Made for the GPU machine this project may borrow (one GPU, Python 3.12, torch, pytest, no Ray): it
# sources .device/setup.sh when present (built here by `bash ../shared/device/bundle.sh`), which gives
# Ray for the `tuner run` steps and rows; without it those say so and the torch-only parts still run.
# Run from the repository root, through the device tool carrying .device:  bash bench/gpu_check.sh tests
set -u
part=${1:-}
cpu_check=${2:-}
case "$part" in
  tests | benches) ;;
  *) echo "usage: bash bench/gpu_check.sh tests|benches [--cpu-check]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
started=$SECONDS
if [ -f .device/setup.sh ]; then
  # shellcheck disable=SC1091
  source .device/setup.sh || echo "(.device/setup.sh failed: no Ray, the tuner steps will say so)"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python=${PYTHON:-python3}
"$python" -c "
import torch
names = ', '.join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
print(f'torch {torch.__version__}, CUDA {torch.version.cuda}, devices: {names or \"none\"}')"
scale=1
[ "$cpu_check" = --cpu-check ] && scale=3  # 2 cores, not 16
out=$(mktemp -d)
summary=()

# step NAME LIMIT_S COMMAND...: runs COMMAND under its own limit, shows its last lines, notes the outcome.
step() {
  local name=$1 limit=$(($2 * scale)) begun=$SECONDS rc outcome log
  shift 2
  log="$out/${name//[^A-Za-z0-9]/_}.txt"
  echo
  echo "== $name (at most $limit s) =="
  timeout -k 10 "$limit" "$@" > "$log" 2>&1
  rc=$?
  tail -n 30 "$log"
  case $rc in
    0) outcome="passed" ;;
    124 | 137) outcome="TIMED OUT after $limit s" ;;
    *) outcome="FAILED (exit $rc)" ;;
  esac
  summary+=("$(printf '%-22s %s (%d s)' "$name:" "$outcome" $((SECONDS - begun)))")
}

if [ "$part" = tests ]; then
  tests=(tests/training/test_gpu.py tests/training/test_gpu_data_precision.py tests/training/test_parallel.py
         tests/execution/test_cuda_device_index.py)
  if "$python" -c "import ray" 2>/dev/null; then
    tests+=(tests/execution/test_gpu_share.py)
    conftest=()
  else  # tests/conftest.py imports Ray; the files above need none of its fixtures
    echo "(no Ray: tests/execution/test_gpu_share.py left out, run without tests/conftest.py)"
    conftest=(--noconftest)
  fi
  if "$python" -c "import pytest" 2>/dev/null; then
    # -o addopts=: pyproject's "-n 2" needs pytest-xdist, which the GPU machine lacks.
    step "GPU tests" 150 "$python" -m pytest -o addopts= -p no:cacheprovider "${conftest[@]}" -v --tb=line -rfEs \
      "${tests[@]}"
  else
    step "GPU tests" 150 "$python" tests/training/test_gpu.py
  fi
  gpus=auto
  step "tuner run" 75 "$python" -m tuner run digits_cnn --gpus-per-worker "$gpus" --epochs 2 -q \
    --storage-path "$out/results" --name gpu_check
  step "its trials" 20 "$python" - "$out/results/gpu_check" "$cpu_check" <<'PY'
import sys

from tuner.results.report import read_tables

trials, _ = read_tables(sys.argv[1])
columns = ["trial_id", "status", "device", "precision", "gpu_peak_gib", "samples_per_s", "val_acc"]
print(trials[[c for c in columns if c in trials]].to_string(index=False))
device = "cpu" if sys.argv[2] == "--cpu-check" else "cuda"
wrong = trials[(trials["status"] != "finished") | ~trials["device"].astype(str).str.startswith(device)]
if len(wrong):
    sys.exit(f"{len(wrong)} of {len(trials)} trials did not finish on {device}")
print(f"all {len(trials)} trials finished on {device}")
PY
else
  if [ "$cpu_check" = --cpu-check ]; then
    step "bench/parallel.py" 80 "$python" bench/parallel.py --cpu-check --epochs 2 --samples 256
    step "bench/gpu_packing.py" 80 "$python" bench/gpu_packing.py --cpu-check --counts 1,2 --models cnn \
      --no-precision --budget-s $((60 * scale))
  else
    step "bench/parallel.py" 80 "$python" bench/parallel.py --epochs 3 --samples 2048
    # 1 and 8 per GPU first (the 8-vs-1 and tuner-vs-bare ratios), then auto, then precision rows as the
    # budget allows: a row that would start after it is listed as skipped.
    step "bench/gpu_packing.py" 165 "$python" bench/gpu_packing.py --counts 1,8 --models cnn --budget-s 150
  fi
fi

echo
echo "== summary: bench/gpu_check.sh $part $cpu_check ($((SECONDS - started)) s) =="
printf '%s\n' "${summary[@]}"
for line in "${summary[@]}"; do
  [[ $line == *" passed ("* ]] || exit 1
done
