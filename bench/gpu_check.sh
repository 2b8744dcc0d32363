#!/usr/bin/env bash
# The GPU checks in one run of at most 8 minutes (each part under its own time limit, so one that hangs
# still leaves the others their time and the summary prints):
#   1. the GPU tests (tests/training/test_gpu.py, test_gpu_data_precision.py) and the strategies' 2-rank tests
#      (tests/training/test_parallel.py: CPU ranks on this GPU host must never touch CUDA)   <= 120 s
#   2. bench/parallel.py: its CPU rows (fsdp on gloo ranks once crashed on a GPU host) and GPU rows <= 120 s
#   3. bench/gpu_packing.py: 1, 8, 4, 2 trials per GPU through `tuner run` and bare torch, precision
#      rows                                                                                    <= 200 s
# Made for the GPU machine this project may borrow (one GPU, Python 3.12, torch, no Ray): it sources
# .device/setup.sh when present (built here by `bash ../shared/device/bundle.sh`), which gives Ray for
# the `tuner run` rows; without it those rows report their failure and the bare torch rows still run.
# Run from the repository root:  bash bench/gpu_check.sh
set -u
cd "$(dirname "$0")/.."
started=$SECONDS
if [ -f .device/setup.sh ]; then
  # shellcheck disable=SC1091
  source .device/setup.sh || echo "(.device/setup.sh failed: no Ray, the tuner rows will say so)"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 - <<'PY'
import torch
names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, devices: {names or 'none'}")
PY
out=$(mktemp -d)

if python3 -c "import pytest" 2>/dev/null; then
  timeout 120 python3 -m pytest --noconftest -p no:cacheprovider -q -rs \
    tests/training/test_gpu.py tests/training/test_gpu_data_precision.py tests/training/test_parallel.py tests/execution/test_gpu_share.py 2>&1 | tail -40; tests=${PIPESTATUS[0]}
else
  timeout 120 python3 tests/training/test_gpu.py; tests=$?
fi

timeout 120 python3 bench/parallel.py --epochs 3 --samples 2048 2>&1 | tee "$out/parallel.txt" | tail -30
parallel=${PIPESTATUS[0]}

timeout 200 python3 bench/gpu_packing.py --counts 1,8,4,2 --budget-s 155 2>&1 | tee "$out/packing.txt"
packing=${PIPESTATUS[0]}

status() { [ "$1" -eq 0 ] && echo "$2" || { [ "$1" -eq 124 ] && echo "TIMED OUT" || echo "FAILED (exit $1)"; }; }
echo
echo "== summary ($((SECONDS - started)) s) =="
echo "GPU and strategy tests: $(status "$tests" passed)"
echo "bench/parallel.py:      $(status "$parallel" "ran (table above)")"
echo "bench/gpu_packing.py:   $(status "$packing" "ran (rows above)")"
grep -E "target|baseline|Error|FAILED" "$out/parallel.txt" | grep -v "^{" || true
grep -E "tuner / bare|per GPU / 1|auto /|FAILED" "$out/packing.txt" || true
exit $(( tests != 0 || parallel != 0 || packing != 0 ))
