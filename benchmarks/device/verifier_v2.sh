#!/usr/bin/env bash
# GPU call for the split judge (issue 9), on a 2-GPU H200 machine (kind nvidia-h200-x2):
#   GPU 1: the GPU test suite (-m gpu, adversarial catalogue included) -> $OUT/gpu_tests.log
#   GPU 0: upskills' judge next to KernelBench's harness on the same level-1 problems
#          -> $OUT/vs_kernelbench.json; then the timing-stability benchmark -> $OUT/verifier_bench.json
# Carry: .whl (bash .ci/device-wheels.sh) and .kb (a KernelBench checkout: KernelBench/ and src/).
# Usage: bash benchmarks/device/verifier_v2.sh BUDGET_S
set -uo pipefail
source benchmarks/device/setup.sh || exit 1
budget=${1:-540}
start=$(date +%s)
( export CUDA_VISIBLE_DEVICES=1 UPSKILLS_CACHE_DIR=/tmp/cache1 UPSKILLS_KERNEL_REPORT="$OUT/known_kernels.jsonl"
  timeout $((budget - 20)) python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider \
    > "$OUT/gpu_tests.log" 2>&1; echo "pytest exit $?" >> "$OUT/gpu_tests.log" ) &
tpid=$!
( export CUDA_VISIBLE_DEVICES=0 UPSKILLS_CACHE_DIR=/tmp/cache0
  timeout $((budget - 140)) python3 benchmarks/verifier_vs_kernelbench.py --kernelbench .kb \
    --out "$OUT/vs_kernelbench.json" --kb-problems ${KB_PROBLEMS:-3} > "$OUT/vs_kernelbench.log" 2>&1
  left=$((budget - 25 - $(date +%s) + start))
  [ "$left" -gt 60 ] && timeout "$left" python3 benchmarks/verifier_bench.py --device cuda \
    --out "$OUT/verifier_bench.json" > "$OUT/verifier_bench.log" 2>&1 ) &
wait $tpid; wait
tail -30 "$OUT/gpu_tests.log"; tail -25 "$OUT/vs_kernelbench.log"; tail -12 "$OUT/verifier_bench.log" 2>/dev/null
