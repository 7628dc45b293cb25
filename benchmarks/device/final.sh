#!/usr/bin/env bash
# Final GPU call (2-GPU H200): ceilings, corpus re-check, lift evaluation on CUDA, GPU tests.
#   GPU 0: ceilings -> $OUT/ceilings.json; `upskills check` of every corpus trace's final kernel
#          -> $OUT/recheck.jsonl; `upskills lift eval RUN --device cuda` -> $OUT/evaluations.cuda.jsonl
#   GPU 1: the GPU test suite (-m gpu) -> $OUT/gpu_tests.log, $OUT/known_kernels.jsonl
# Usage: bash benchmarks/device/final.sh BUDGET_S [LIFT_RUN_DIR]  (no run dir: no lift evaluation)
set -uo pipefail
source benchmarks/device/setup.sh || exit 1
budget=$1; run=${2:-}
( export CUDA_VISIBLE_DEVICES=1 UPSKILLS_CACHE_DIR=/tmp/cache1 UPSKILLS_KERNEL_REPORT="$OUT/known_kernels.jsonl"
  timeout $((budget - 20)) python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider \
    > "$OUT/gpu_tests.log" 2>&1; echo "pytest exit $?" >> "$OUT/gpu_tests.log" ) &
tpid=$!
( export CUDA_VISIBLE_DEVICES=0 UPSKILLS_CACHE_DIR=/tmp/cache0
  python3 benchmarks/device/ceilings.py --out "$OUT/ceilings.json" > "$OUT/final.log" 2>&1
  timeout $((budget / 2)) python3 benchmarks/corpus_live/recheck.py traces/corpus-live --finals --out "$OUT/recheck.jsonl" >> "$OUT/final.log" 2>&1
  if [ -n "$run" ]; then
    timeout $((budget / 2 - 40)) python3 -m upskills lift eval "$run" --device cuda >> "$OUT/final.log" 2>&1
    cp "$run"/evaluations.cuda.jsonl "$OUT/" 2>/dev/null
  fi ) &
wait $tpid; wait
tail -25 "$OUT/gpu_tests.log"; tail -25 "$OUT/final.log"
