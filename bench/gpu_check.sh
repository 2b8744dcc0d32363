#!/usr/bin/env bash
# The GPU checks in one run of at most 6 minutes: the GPU tests, then the GPU rows of bench/parallel.py.
# Made for the GPU machine this project may borrow (one GPU, torch, no Ray, perhaps no pytest), so it
# touches only tuner's torch-level code. Run from the repository root:  bash bench/gpu_check.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python - <<'PY'
import torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, devices: "
      + ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())) or "none")
PY
started=$SECONDS
if python -c "import pytest" 2>/dev/null; then
  timeout 150 python -m pytest --noconftest -p no:cacheprovider -q tests/training/test_gpu.py; tests=$?
else
  timeout 150 python tests/training/test_gpu.py; tests=$?
fi
timeout 200 python bench/parallel.py --epochs 3 --samples 4096 | tee /tmp/gpu_bench.txt; bench=${PIPESTATUS[0]}
echo
echo "== summary ($((SECONDS - started)) s) =="
echo "GPU tests:  $([ $tests -eq 0 ] && echo passed || echo "FAILED (exit $tests)")"
echo "bench:      $([ $bench -eq 0 ] && echo "ran (table above)" || echo "FAILED (exit $bench)")"
grep -E "target|baseline" /tmp/gpu_bench.txt | grep -v "^{" || true
exit $(( tests != 0 || bench != 0 ))
