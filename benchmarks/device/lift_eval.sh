#!/usr/bin/env bash
# GPU call for the lift run's evaluation phase and the rest of the corpus re-check (2 GPUs):
#   GPU 0: `upskills lift eval RUN --device cuda` -> $OUT/evaluations.cuda.jsonl
#   GPU 1: recheck of the live corpus (a folder of session folders) -> $OUT/recheck.jsonl
# Usage: bash benchmarks/device/lift_eval.sh BUDGET_S RUN_DIR [SESSIONS_DIR]
set -uo pipefail
source benchmarks/device/setup.sh || exit 1
budget=$1; run=$2; shift 2
( export CUDA_VISIBLE_DEVICES=1 UPSKILLS_CACHE_DIR=/tmp/cache1
  [ $# -gt 0 ] && timeout $((budget - 20)) python3 benchmarks/corpus_live/recheck.py "$1" --gpus 0 --out "$OUT/recheck.jsonl" \
    > "$OUT/recheck.log" 2>&1 ) &
( export CUDA_VISIBLE_DEVICES=0 UPSKILLS_CACHE_DIR=/tmp/cache0
  timeout $((budget - 20)) python3 -m upskills lift eval "$run" --device cuda > "$OUT/lift_eval.log" 2>&1
  cp "$run"/evaluations.cuda.jsonl "$OUT/" ) &
wait
tail -5 "$OUT/lift_eval.log"; tail -12 "$OUT/recheck.log"
