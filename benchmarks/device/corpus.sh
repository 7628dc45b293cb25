#!/usr/bin/env bash
# GPU call for the GPU test suite and the teacher corpus, on a 2-GPU H200 machine:
#   GPU 0: the GPU test suite (-m gpu) -> $OUT/gpu_tests.log, $OUT/known_kernels.jsonl;
#          then corpus tasks of list B
#   GPU 1: corpus tasks of list A
# The corpus session folders come back as $OUT/corpus.tar.gz (replay resumes from them when
# unpacked into .devout/corpus before the next call).
# Usage: bash benchmarks/device/corpus.sh BUDGET_S "TASKS_A" "TASKS_B" [--no-tests]
set -uo pipefail
source benchmarks/device/setup.sh || exit 1
budget=$1; tasks_a=$2; tasks_b=$3; tests=${4:-}
start=$(date +%s)
corpus=.devout/corpus; mkdir -p $corpus
agent=(--agent-name claude-coding-agent)
( export CUDA_VISIBLE_DEVICES=1 UPSKILLS_CACHE_DIR=/tmp/cache1
  timeout $((budget - 30)) python3 benchmarks/corpus/replay.py --out $corpus --device cuda "${agent[@]}" $tasks_a \
    > "$OUT/corpus_a.log" 2>&1 ) &
apid=$!
( export CUDA_VISIBLE_DEVICES=0 UPSKILLS_CACHE_DIR=/tmp/cache0
  if [ "$tests" != "--no-tests" ]; then
    export UPSKILLS_KERNEL_REPORT="$OUT/known_kernels.jsonl"
    timeout $((budget / 2)) python3 -m pytest -q -m gpu -rfEs -p no:cacheprovider \
      --continue-on-collection-errors > "$OUT/gpu_tests.log" 2>&1
    echo "pytest exit $?" >> "$OUT/gpu_tests.log"
  fi
  left=$((budget - 30 - $(date +%s) + start))
  [ -n "$tasks_b" ] && timeout "$left" python3 benchmarks/corpus/replay.py --out $corpus --device cuda \
    "${agent[@]}" $tasks_b > "$OUT/corpus_b.log" 2>&1 ) &
bpid=$!
wait $apid; wait $bpid
tar czf "$OUT/corpus.tar.gz" -C .devout corpus
tail -30 "$OUT/gpu_tests.log" 2>/dev/null; tail -15 "$OUT/corpus_a.log"; tail -15 "$OUT/corpus_b.log" 2>/dev/null
