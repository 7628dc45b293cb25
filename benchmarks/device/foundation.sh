#!/usr/bin/env bash
# GPU call for the foundation issue, on a 2-GPU H200 machine (kind nvidia-h200-x2):
#   GPU 1: eager and torch.compile baselines of every built-in task -> $OUT/baselines.json
#   GPU 0: the GPU test suite (-m gpu) -> $OUT/gpu_tests.log, known-kernel speedups ->
#          $OUT/known_kernels.jsonl; then the verifier benchmark -> $OUT/verifier_bench.json
# Usage (device tool, carry .whl): bash benchmarks/device/foundation.sh [SECONDS_BUDGET]
set -uo pipefail
source benchmarks/device/setup.sh || exit 1
budget=${1:-540}
start=$(date +%s)
( export CUDA_VISIBLE_DEVICES=1 UPSKILLS_CACHE_DIR=/tmp/cache1
  timeout $((budget - 20)) python3 benchmarks/baselines.py --out "$OUT/baselines.json" \
    > "$OUT/baselines.log" 2>&1 ) &
bpid=$!
( export CUDA_VISIBLE_DEVICES=0 UPSKILLS_CACHE_DIR=/tmp/cache0
  export UPSKILLS_KERNEL_REPORT="$OUT/known_kernels.jsonl"
  timeout $((budget - 120)) python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider \
    > "$OUT/gpu_tests.log" 2>&1
  echo "pytest exit $?" >> "$OUT/gpu_tests.log"
  left=$((budget - 25 - $(date +%s) + start))
  if [ "$left" -gt 40 ]; then
    timeout "$left" python3 benchmarks/verifier_bench.py --device cuda --out "$OUT/verifier_bench.json" \
      > "$OUT/verifier_bench.log" 2>&1
  fi ) &
tpid=$!
wait $tpid; wait $bpid
tail -25 "$OUT/gpu_tests.log"; tail -5 "$OUT/baselines.log"; tail -12 "$OUT/verifier_bench.log" 2>/dev/null
